"""Images a task carries: picked on the New task form, drawn as thumbnails on its step cards.

The uploader takes the formats both providers read (PNG, JPEG, GIF, WebP); each file is read
into an `ImagePart`, which checks its bytes and size, so a renamed text file or a photo over
the limit is refused on the form with the reason, before any task exists.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from agent_core.errors import UserError
from agent_core.llms.content import MAX_IMAGE_BYTES, ImagePart
from agent_core.workers.multimodal_react import MAX_TASK_IMAGES
from stepwise.app.components.messages import plain

__all__ = ["IMAGE_TYPES", "pick_images", "render_thumbnails"]

IMAGE_TYPES = ("png", "jpg", "jpeg", "gif", "webp")
_UPLOAD_LIMIT_MB = -(-MAX_IMAGE_BYTES // 1_000_000)
"""The browser refuses files over this many MB; `ImagePart` holds the exact limit."""
_THUMBNAIL_PX = 160


def pick_images(*, key: str) -> list[ImagePart] | None:
    """The images attached on the form; None (with the reason shown) if one is refused."""
    files = st.file_uploader(
        "Images (optional)",
        type=list(IMAGE_TYPES),
        accept_multiple_files=True,
        key=key,
        max_upload_size=_UPLOAD_LIMIT_MB,
        help=f"PNG, JPEG, GIF or WebP, up to {MAX_IMAGE_BYTES / 1e6:.2f} MB each and "
        f"{MAX_TASK_IMAGES} per task. The model sees them with the task.",
    )
    images: list[ImagePart] = []
    for file in files or []:
        try:
            images.append(ImagePart.from_bytes(file.getvalue(), name=file.name))
        except UserError as exc:
            st.error(str(exc))  # Our sentence; the file name in it is shown as text.
            return None
    if len(images) > MAX_TASK_IMAGES:
        st.error(f"Attach at most {MAX_TASK_IMAGES} images to one task.")
        return None
    return images


def render_thumbnails(images: Sequence[ImagePart]) -> None:
    """The images as thumbnails, captioned with their file names (as text, not markdown)."""
    if not images:
        return
    st.caption("Images the model sees")
    st.image(
        [image.to_bytes() for image in images],
        caption=[plain(image.name or image.mime_type) for image in images],
        width=_THUMBNAIL_PX,
    )
