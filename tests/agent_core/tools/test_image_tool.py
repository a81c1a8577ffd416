"""The image tool: SVG drawn by the chat model (sanitised), or PNG from OpenAI Images."""

from __future__ import annotations

import base64
import json
import xml.etree.ElementTree as ET

import httpx
import openai
import pytest

from agent_core import AgentRunner
from agent_core.errors import ToolError, UserError
from agent_core.llms import FunctionLLM, ScriptedLLM
from agent_core.tools import Workspace
from agent_core.tools.image import image_tool, sanitize_svg
from agent_core.workers import ReActAgentWorker

LLAMA_SVG = (
    'Here you go:\n<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10" '
    'onload="alert(1)"><script>alert(2)</script><circle cx="5" cy="5" r="4" fill="tan"/>'
    '<a href="javascript:alert(3)"><rect width="1" height="1"/></a>'
    "<foreignObject><div>html</div></foreignObject></svg>\nEnjoy."
)


def test_sanitize_keeps_the_drawing_and_drops_what_could_run():
    clean = sanitize_svg(LLAMA_SVG)
    root = ET.fromstring(clean)
    assert root.tag.endswith("svg") and root.get("viewBox") == "0 0 10 10"
    assert "circle" in clean and "rect" in clean
    for bad in ("script", "onload", "javascript", "foreignObject", "alert"):
        assert bad not in clean


@pytest.mark.parametrize("reply", ["no picture, sorry", "<svg><circle></svg>"])
def test_a_reply_without_a_well_formed_svg_is_a_tool_error(reply):
    with pytest.raises(ToolError):
        sanitize_svg(reply)


def test_the_tool_needs_a_model_or_an_images_client(tmp_path):
    with pytest.raises(UserError, match="needs an llm"):
        image_tool(Workspace(tmp_path))


async def test_svg_is_drawn_by_the_chat_model_and_saved(tmp_path):
    seen = []

    def draw(messages, tools):
        seen.append(messages)
        return LLAMA_SVG

    tool = image_tool(Workspace(tmp_path), llm=FunctionLLM(draw))
    out = await tool.acall({"description": "a llama", "path": "art/llama.png"})
    assert not out.is_error, out.content
    saved = tmp_path / "default" / "art" / "llama.svg"
    assert saved.exists() and "script" not in saved.read_text()
    assert seen[0][-1].content == "a llama"


def test_undo_removes_the_drawing(tmp_path):
    action = 'Action: make_image\nAction Input: {"description": "a llama", "path": "llama.svg"}'
    tools = [image_tool(Workspace(tmp_path), llm=FunctionLLM(lambda m, t: LLAMA_SVG))]
    agent = AgentRunner(ReActAgentWorker.from_tools(tools, llm=ScriptedLLM([action])))
    task = agent.create_task("draw")
    agent.run_step(task.task_id)
    drawing = tmp_path / task.task_id / "llama.svg"
    assert drawing.exists()
    agent.undo_step(task.task_id)
    assert not drawing.exists()


async def test_png_comes_from_openai_images_when_configured(tmp_path):
    png = b"\x89PNG\r\n\x1a\nfake"
    requests = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        body = {"created": 1, "data": [{"b64_json": base64.b64encode(png).decode()}]}
        return httpx.Response(200, json=body)

    client = openai.AsyncOpenAI(
        api_key="sk-test",
        base_url="https://api.openai.test/v1",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),  # pyright: ignore[reportArgumentType]
        max_retries=0,
    )
    tool = image_tool(Workspace(tmp_path), openai_client=client)
    out = await tool.acall({"description": "a llama", "path": "llama.png"})
    assert not out.is_error, out.content
    assert (tmp_path / "default" / "llama.png").read_bytes() == png
    body = json.loads(requests[0].content)
    assert requests[0].url.path.endswith("/images/generations")
    assert body["model"] == "gpt-image-1" and body["prompt"] == "a llama"


HOSTILE_SVG = [
    '<svg><set attributeName="href" to="javascript:alert(1)"/><circle r="1"/></svg>',
    '<svg><a><animate attributeName="href" values="javascript:alert(1)"/>'
    '<rect width="1"/></a></svg>',
    "<svg><style>@import url(http://evil.example/x.css);</style><circle r='1'/></svg>",
    '<svg><circle r="1" style="fill:url(http://evil.example/p.svg#g)"/></svg>',
    '<svg><circle r="1" fill="url(http://evil.example/p.svg#g)"/></svg>',
    '<svg><handler type="text/ecmascript">alert(1)</handler><circle r="1"/></svg>',
    '<svg><image href="http://evil.example/i.png"/><circle r="1"/></svg>',
    '<svg><use href="http://evil.example/s.svg#x"/><circle r="1"/></svg>',
    '<svg xmlns:xlink="http://www.w3.org/1999/xlink"><use xlink:href="data:image/svg+xml,x"/>'
    '<circle r="1"/></svg>',
    '<svg><circle r="1" onmouseover="alert(1)" style="behavior:url(x.htc)"/></svg>',
    '<svg><foreignObject><iframe src="javascript:alert(1)"/></foreignObject><circle r="1"/></svg>',
    '<svg><script href="http://evil.example/x.js"/><circle r="1"/></svg>',
]


@pytest.mark.parametrize("svg", HOSTILE_SVG)
def test_known_svg_attacks_are_removed_by_the_allow_list(svg):
    clean = sanitize_svg(svg).lower()
    assert "<circle" in clean or "<rect" in clean  # The drawing stays...
    for bad in (
        "javascript",
        "evil.example",
        "@import",
        "<set",
        "<animate",
        "<handler",
        "<style",
        "<image",
        "<script",
        "onmouseover",
        "behavior",
        "data:",
        "<iframe",
    ):
        assert bad not in clean, (bad, clean)  # ...what could run or load goes.


def test_links_inside_the_document_are_kept():
    svg = '<svg><defs><linearGradient id="g"/></defs><rect fill="url(#g)"/><use href="#g"/></svg>'
    clean = sanitize_svg(svg)
    assert 'fill="url(#g)"' in clean and 'href="#g"' in clean
