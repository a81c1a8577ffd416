"""Content parts of a message: text, and images the model sees.

An image travels inside the message as base64 text, so a message stays JSON and is stored,
snapshotted and traced like every other (no file outside the store to lose or leak). Its size
is bounded, because it is stored with the task and sent on every call that shows it.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from agent_core.errors import UserError

__all__ = [
    "IMAGE_MIME_TYPES",
    "MAX_IMAGE_BYTES",
    "ContentPart",
    "ImageMimeType",
    "ImagePart",
    "TextPart",
    "image_mime_type",
    "with_parts_text",
]

MAX_IMAGE_BYTES = 3_750_000
"""The largest image a message holds: base64 makes it 5,000,000 characters, under Anthropic's
5 MB limit per image (OpenAI allows more), and bounds what each task stores."""

ImageMimeType = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
"""The image types both providers accept."""
IMAGE_MIME_TYPES: tuple[ImageMimeType, ...] = get_args(ImageMimeType)

_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_SNIFF_CHARS = 16
"""Base64 characters decoded to read a file's signature (12 bytes cover WebP's)."""


def image_mime_type(head: bytes) -> ImageMimeType | None:
    """The image type a file's first bytes announce, among `IMAGE_MIME_TYPES`; None otherwise."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _too_large(size: int, name: str) -> str:
    what = f"image {name!r}" if name else "the image"
    return (
        f"{what} is {size / 1e6:.2f} MB; an image may be at most {MAX_IMAGE_BYTES / 1e6:.2f} MB "
        "(it is stored with the task and sent with every model call): scale it down or "
        "save it as JPEG"
    )


class TextPart(BaseModel):
    """Text in a message with several parts."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["text"] = "text"
    text: str

    def __str__(self) -> str:
        return self.text


class ImagePart(BaseModel):
    """An image in a message: PNG, JPEG, GIF or WebP, base64-encoded, at most `MAX_IMAGE_BYTES`.

    Build one with `ImagePart.from_bytes` or `ImagePart.from_path`, which read the type from
    the file's own bytes.
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["image"] = "image"
    mime_type: ImageMimeType
    data: str = Field(repr=False)
    """The image's bytes, base64 (standard alphabet, padded)."""
    name: str = ""
    """The file name it came from, for people (never sent to the model)."""

    @model_validator(mode="after")
    def _check(self) -> ImagePart:
        # Checked on every load too: a damaged row fails here, not in a provider's 400.
        if len(self.data) % 4 or not _BASE64.fullmatch(self.data):
            raise ValueError("an image's data must be base64 (standard alphabet, padded)")
        if self.size > MAX_IMAGE_BYTES:
            raise ValueError(_too_large(self.size, self.name))
        announced = image_mime_type(base64.b64decode(self.data[:_SNIFF_CHARS]))
        if announced != self.mime_type:
            raise ValueError(
                f"the image's bytes are {announced or 'not PNG, JPEG, GIF or WebP'}, "
                f"not {self.mime_type}"
            )
        return self

    @classmethod
    def from_bytes(cls, data: bytes, *, name: str = "") -> ImagePart:
        """An image from a file's bytes; its type is read from them.

        Raises:
            UserError: Not a PNG, JPEG, GIF or WebP file, or larger than `MAX_IMAGE_BYTES`.
        """
        label = f"{name!r}" if name else "the file"
        if len(data) > MAX_IMAGE_BYTES:
            raise UserError(_too_large(len(data), name), remedy="shorten")
        mime_type = image_mime_type(data[:12])
        if mime_type is None:
            raise UserError(
                f"{label} is not a PNG, JPEG, GIF or WebP image",
                hint="attach one of those formats (convert others first)",
            )
        return cls(mime_type=mime_type, data=base64.b64encode(data).decode("ascii"), name=name)

    @classmethod
    def from_path(cls, path: str | Path) -> ImagePart:
        """An image read from a file (named after it)."""
        path = Path(path)
        size = path.stat().st_size
        if size > MAX_IMAGE_BYTES:  # Refuse before reading a huge file into memory.
            raise UserError(_too_large(size, path.name), remedy="shorten")
        return cls.from_bytes(path.read_bytes(), name=path.name)

    @property
    def size(self) -> int:
        """The image's size in bytes (decoded)."""
        return len(self.data) * 3 // 4 - self.data[-2:].count("=")

    def to_bytes(self) -> bytes:
        """The image's bytes."""
        try:
            return base64.b64decode(self.data, validate=True)
        except binascii.Error as exc:  # The validator makes this unreachable for a valid part.
            raise UserError(f"image {self.name!r} is not valid base64: {exc}") from None

    @property
    def data_url(self) -> str:
        """The image as a `data:` URL (OpenAI's `image_url`)."""
        return f"data:{self.mime_type};base64,{self.data}"

    def __str__(self) -> str:
        return f"[image {self.name or self.mime_type}, {self.size:,} bytes]"


def _part_kind(part: object) -> str | None:
    # Stored messages leave out default fields (`kind` among them): a part with text is text.
    if isinstance(part, dict):
        return part.get("kind") or ("text" if "text" in part else "image")
    return getattr(part, "kind", None)


ContentPart = Annotated[
    Annotated[TextPart, Tag("text")] | Annotated[ImagePart, Tag("image")],
    Discriminator(_part_kind),
]
"""One part of a message's content."""


def with_parts_text(data: object) -> object:
    """A message's fields with `content` and `parts` made to agree (a `mode="before"` hook).

    `content` stays the message's text for every reader of it: with parts given it is their
    text, filled in when omitted; text given beside image parts only becomes their first part.
    """
    if not isinstance(data, dict) or not data.get("parts"):
        return data
    parts = list(data["parts"])
    texts = [_text_of(part) for part in parts]
    if data.get("role") != "user" and None in texts:
        raise ValueError("only a user message can show images (both providers accept no other)")
    text = "\n".join(t for t in texts if t is not None)
    content = data.get("content") or ""
    if content and all(t is None for t in texts):
        return {**data, "parts": (TextPart(text=content), *parts)}
    if not content:
        return {**data, "content": text}
    if content != text:
        raise ValueError("a message's content must be the text of its parts (or left out)")
    return data


def _text_of(part: object) -> str | None:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, dict) and _part_kind(part) == "text":
        return str(part.get("text", ""))
    return None
