"""The image tool: OpenAI Images when configured, otherwise an SVG the chat model draws.

Either way the picture is saved in the task's workspace (journaled, so undo removes it). An
SVG from a model is untrusted markup: only an allow-list of drawing elements and attributes
is kept, with no link or url() out of the document, before it is saved, so the app can show
it safely.
"""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET
from typing import Any

from agent_core.errors import ToolError, UserError
from agent_core.llms.base import LLM, ChatMessage
from agent_core.tools.base import FunctionTool
from agent_core.tools.workspace import Workspace

__all__ = ["DEFAULT_IMAGE_MODEL", "image_tool", "sanitize_svg"]

DEFAULT_IMAGE_MODEL = "gpt-image-1"
MAX_SVG_CHARS = 200_000
_SVG = re.compile(r"<svg\b.*?</svg\s*>", re.DOTALL | re.IGNORECASE)
_SVG_NS = "http://www.w3.org/2000/svg"
# An allow-list: what is not named here is dropped. No scripts, animation (<set>, <animate>
# can write a javascript: link), <style> (CSS can @import and load), <image> or links out.
_ELEMENTS = frozenset(
    "svg g defs title desc path rect circle ellipse line polyline polygon text tspan "
    "lineargradient radialgradient stop clippath mask pattern symbol use marker".split()
)
_ATTRIBUTES = frozenset(
    """id class d x y x1 y1 x2 y2 cx cy r rx ry fx fy fr dx dy width height points viewbox
    preserveaspectratio transform fill stroke stroke-width stroke-linecap stroke-linejoin
    stroke-dasharray stroke-dashoffset stroke-opacity stroke-miterlimit fill-opacity
    fill-rule clip-rule opacity font-family font-size font-weight font-style text-anchor
    dominant-baseline letter-spacing offset stop-color stop-opacity gradientunits
    gradienttransform spreadmethod clip-path clippathunits mask maskunits markerwidth
    markerheight refx refy orient markerunits marker-start marker-mid marker-end
    patternunits patterntransform version visibility display style href""".split()
)
_URL = re.compile(r"url\s*\(\s*['\"]?\s*([^)'\"\s]*)", re.IGNORECASE)
_CSS_DANGER = re.compile(r"@import|expression\s*\(|javascript:|behavior\s*:", re.IGNORECASE)

DRAW_PROMPT = (
    "You draw pictures as SVG. Reply with one complete <svg> document only: a viewBox, "
    "simple shapes and colours, no scripts, no external images or fonts."
)


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1].lower()


def _is_unsafe_attribute(name: str, value: str) -> bool:
    """Whether to drop an attribute.

    Anything but a listed attribute is dropped, and so is a link or url() that leaves the
    document, and CSS that could load or run something.
    """
    local = _local(name)
    if local not in _ATTRIBUTES:
        return True
    if local == "href" and not value.strip().startswith("#"):
        return True
    if any(not url.startswith("#") for url in _URL.findall(value)):
        return True
    return local == "style" and _CSS_DANGER.search(value) is not None


def sanitize_svg(text: str) -> str:
    """The first `<svg>` document in `text`, keeping only listed elements and attributes.

    Whatever could run script or load anything from outside (scripts, handlers, animation,
    style sheets, images, links and url()s out of the document) is removed.
    """
    match = _SVG.search(text)
    if match is None or len(match.group(0)) > MAX_SVG_CHARS:
        raise ToolError("the model's reply holds no <svg> document (of at most 200,000 chars)")
    ET.register_namespace("", _SVG_NS)
    try:
        root = ET.fromstring(match.group(0))
    except ET.ParseError as exc:
        raise ToolError(f"the model's SVG is not well-formed XML ({exc}); ask again") from exc
    if _local(root.tag) != "svg":
        raise ToolError("the model's reply holds no <svg> document; ask again")
    _unwrap_links(root)
    for parent in root.iter():
        for child in list(parent):
            if not isinstance(child.tag, str) or _local(child.tag) not in _ELEMENTS:
                parent.remove(child)
        for name, value in list(parent.attrib.items()):
            if _is_unsafe_attribute(name, value):
                del parent.attrib[name]
    return ET.tostring(root, encoding="unicode")


def _unwrap_links(root: ET.Element) -> None:
    """Replace each <a> by what it holds: the drawing stays, the link goes."""
    for parent in list(root.iter()):
        for index, child in reversed(list(enumerate(parent))):
            if isinstance(child.tag, str) and _local(child.tag) == "a":
                parent.remove(child)
                for offset, grandchild in enumerate(list(child)):
                    parent.insert(index + offset, grandchild)


async def _draw_svg(llm: LLM, description: str) -> bytes:
    reply = await llm.chat(
        [
            ChatMessage(role="system", content=DRAW_PROMPT),
            ChatMessage(role="user", content=description),
        ]
    )
    return sanitize_svg(reply.text).encode()


async def _generate_png(client: Any, model: str, description: str) -> bytes:
    result = await client.images.generate(model=model, prompt=description, n=1, size="1024x1024")
    encoded = result.data[0].b64_json if result.data else None
    if not encoded:
        raise ToolError(f"the images API returned no picture for {model!r}")
    return base64.b64decode(encoded)


def _as_svg(path: str) -> str:
    stem, dot, suffix = path.rpartition(".")
    if dot and "/" not in suffix:
        return path if suffix.lower() == "svg" else f"{stem}.svg"
    return f"{path}.svg"


def image_tool(
    workspace: Workspace,
    *,
    llm: LLM | None = None,
    openai_client: Any | None = None,
    image_model: str = DEFAULT_IMAGE_MODEL,
) -> FunctionTool:
    """A `make_image` tool that saves a picture in the task's workspace.

    Args:
        workspace: Where the task's files live.
        llm: The chat model that draws SVG when no images client is configured.
        openai_client: An `openai.AsyncOpenAI` client; when given, PNGs come from OpenAI
            Images (`image_model`).
        image_model: The OpenAI Images model.
    """
    if llm is None and openai_client is None:
        raise UserError("image_tool needs an llm (to draw SVG) or an openai_client (for PNG)")

    async def make_image(description: str, path: str = "image.svg") -> str:
        """Draw a picture of `description` and save it in the workspace.

        Args:
            description: What the picture shows.
            path: Where to save it, relative to the workspace; .png uses OpenAI Images when
                configured, anything else is an SVG drawing.
        """
        if openai_client is not None and path.lower().endswith(".png"):
            workspace.resolve(path)  # A path that can never work is refused before the call.
            data = await _generate_png(openai_client, image_model, description)
        elif llm is not None:
            path = _as_svg(path)
            workspace.resolve(path)
            data = await _draw_svg(llm, description)
        else:
            raise ToolError("only PNG images can be made here: give a path ending in .png")
        # Checked again as it is written: the folder may have changed while the model drew.
        saved = workspace.write(path, data)
        return f"saved {saved} ({len(data):,} bytes)"

    return FunctionTool.from_defaults(make_image, side_effects=True)
