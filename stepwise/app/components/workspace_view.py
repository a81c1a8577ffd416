"""The task's workspace on the Stepper: its files, the step that wrote each, a preview, downloads.

What a model or a program wrote is never interpreted as markup in the app's page: text, code,
Markdown and HTML are shown as source with `st.code`; PNG, JPEG, GIF and WebP go to `st.image`;
an SVG is shown as a picture through a `data:` URI in an `<img>` (a browser runs no script and
loads nothing from an SVG shown as an image) and as source. An HTML file also gets a preview
in a sandboxed frame (`sandboxed_html`): no scripts, no forms, an origin of its own, nothing
loaded from the network. Downloads read the file only when clicked.
"""

from __future__ import annotations

import base64
import codecs
import html
from pathlib import PurePosixPath
from typing import Literal

import streamlit as st

from agent_core.errors import UserError
from agent_core.task_files import (
    TaskFile,
    list_files,
    read_preview,
    workspace_folder,
    zip_bytes,
)
from agent_core.types import Task, TaskState

__all__ = ["LANGUAGES", "render_workspace", "sandboxed_html"]

ROWS_SHOWN = 20
"""Files listed one per row; the rest are in the zip."""
TEXT_PREVIEW_BYTES = 64 * 1024
IMAGE_PREVIEW_BYTES = 8 * 1024 * 1024
DOWNLOAD_BYTES = 200 * 1024 * 1024

LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".jsx": "jsx",
    ".json": "json",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".svg": "xml",
    ".xml": "xml",
    ".md": "markdown",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".sh": "bash",
    ".sql": "sql",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".rb": "ruby",
    ".r": "r",
    ".tex": "latex",
    ".diff": "diff",
}
"""File extension -> the language `st.code` highlights; any other text is shown plain."""
_IMAGES = {".png", ".jpg", ".jpeg", ".gif", ".webp"}


def render_workspace(task_state: TaskState) -> None:
    """The task's workspace: its path, its files with the step that wrote each, a preview."""
    _workspace(task_state.task, list_files(task_state))


@st.fragment
def _workspace(task: Task, files: list[TaskFile]) -> None:
    # A fragment: picking a file to preview redraws this panel, not the whole Stepper.
    st.subheader("Workspace files", anchor=False)
    folder = workspace_folder(task)
    if folder is None:
        st.caption("This task keeps no files: it was created without an agent spec.")
        return
    if task.imported:
        st.caption("Imported from a trace: a trace holds steps, not the files they wrote.")
        return
    st.code(str(folder), language=None, wrap_lines=True)  # A long path wraps, never cut off.
    if not files:
        st.caption("No files yet: the files the agent's tools write appear here.")
        return
    _file_rows(task, files)
    _zip_button(task, files)
    _preview(task, files)


def _file_rows(task: Task, files: list[TaskFile]) -> None:
    header = st.columns([6, 2, 2, 1], vertical_alignment="center")
    for column, title in zip(header, ("File", "Size", "Written by", ""), strict=True):
        column.caption(title)
    for file in files[:ROWS_SHOWN]:
        name, size, step, download = st.columns([6, 2, 2, 1], vertical_alignment="center")
        name.text(file.path)
        size.text(_size(file.size))
        step.text(_writer(file))
        download.download_button(
            "",
            data=_reader(task, file.path),
            file_name=PurePosixPath(file.path).name,
            mime="application/octet-stream",
            icon=":material/download:",
            help=f"Download {file.path}",
            on_click="ignore",
            key=f"ws-file-{task.task_id}-{file.path}",
        )
    hidden = len(files) - ROWS_SHOWN
    if hidden > 0:
        st.caption(f"{_count(hidden, 'more file')}: Download all (zip) has them.")


def _zip_button(task: Task, files: list[TaskFile]) -> None:
    total = sum(file.size for file in files)
    st.download_button(
        f"Download all (zip) · {_count(len(files), 'file')}, {_size(total)}",
        data=lambda: _zip_or_empty(task),
        file_name=f"workspace-{task.task_id[:12]}.zip",
        mime="application/zip",
        icon=":material/folder_zip:",
        on_click="ignore",
        key=f"ws-zip-{task.task_id}",
    )


def _preview(task: Task, files: list[TaskFile]) -> None:
    newest = max(range(len(files)), key=lambda i: files[i].modified)
    path = st.selectbox(
        "Preview",
        [file.path for file in files],
        index=newest,
        key=f"ws-preview-{task.task_id}",
    )
    if path is not None:
        _show(task, path)


def _show(task: Task, path: str) -> None:
    suffix = PurePosixPath(path).suffix.lower()
    limit = IMAGE_PREVIEW_BYTES if suffix in _IMAGES | {".svg"} else TEXT_PREVIEW_BYTES
    try:
        preview = read_preview(task, path, limit)
    except UserError as exc:
        st.warning("This file cannot be shown.")
        st.text(exc.message)
        return
    if suffix in _IMAGES:
        _show_image(preview.data, truncated=preview.truncated)
        return
    text = _text(preview.data)
    if text is None:
        st.caption(f"A binary file of {_size(preview.size)}: download it to open it.")
        return
    if suffix == ".svg" and not preview.truncated:
        picture, source = st.tabs(["Picture", "Source"])
        with picture:
            st.image(_svg_data_uri(text), width="content")
        with source:
            _source(text, suffix, size=preview.size)
        return
    if suffix in (".html", ".htm") and not preview.truncated:
        page, source = st.tabs(["Preview (sandboxed: no scripts)", "Source"])
        with page:
            st.caption(
                "Drawn in a sandboxed frame: its scripts do not run and nothing is loaded "
                "from the network, so it may look unfinished."
            )
            st.iframe(sandboxed_html(text), height=_PREVIEW_HEIGHT + 20)
        with source:
            _source(text, suffix, size=preview.size)
        return
    _source(text, suffix, size=preview.size)


_PREVIEW_HEIGHT = 400
_NO_LOADS = (
    '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
    "img-src data:; style-src 'unsafe-inline'; font-src data:\">"
)
"""Put before the page in its frame: it loads nothing from the network (inline styles and
`data:` pictures only)."""


def sandboxed_html(page: str) -> str:
    """Markup that shows the HTML `page` in an `<iframe sandbox>`: no scripts, no forms.

    The page is only ever the escaped value of the frame's `srcdoc` attribute, so none of it is
    markup of the app's own frame; the empty `sandbox` gives it an origin of its own and lets
    no script, form, popup or top-level navigation run.
    """
    source = html.escape(_NO_LOADS + page, quote=True)
    return (
        f'<iframe sandbox="" srcdoc="{source}" title="Preview of an HTML file (sandboxed)" '
        f'style="width:100%;height:{_PREVIEW_HEIGHT}px;border:1px solid #ddd;'
        'background:#fff"></iframe>'
    )


def _source(text: str, suffix: str, *, size: int) -> None:
    shown = text[:TEXT_PREVIEW_BYTES]
    st.code(shown, language=LANGUAGES.get(suffix), wrap_lines=True, height=_height(shown))
    if len(shown.encode()) < size:
        st.caption(
            f"The first {_size(len(shown.encode()))} of {_size(size)}: download the file "
            "for the rest."
        )


def _show_image(data: bytes, *, truncated: bool) -> None:
    if truncated:
        st.caption(f"A picture over {_size(IMAGE_PREVIEW_BYTES)}: download it to see it.")
        return
    try:
        st.image(data, width="content")
    except Exception:  # Not a picture after all (a PIL error of some kind).
        st.caption("This file is not a picture the browser can show: download it to open it.")


def _svg_data_uri(text: str) -> str:
    """The SVG as a `data:` URI for an `<img>`: never inline markup, so no script can run."""
    encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return f"data:image/svg+xml;base64,{encoded}"


def _text(data: bytes) -> str | None:
    """`data` as UTF-8 text (a character cut at the end is dropped), or None if binary."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(data, final=False)
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else text


def _height(text: str) -> int | Literal["content"]:
    return 420 if text.count("\n") > 20 else "content"


def _reader(task: Task, path: str):
    def read() -> bytes:
        try:
            return read_preview(task, path, DOWNLOAD_BYTES).data
        except UserError:  # Removed since the page was drawn: an empty file, not a crash.
            return b""

    return read


def _zip_or_empty(task: Task) -> bytes:
    try:
        return zip_bytes(task)
    except UserError:
        return b""


def _writer(file: TaskFile) -> str:
    return f"step {file.step_number}" if file.step_number is not None else "—"


def _size(size: int) -> str:
    if size < 1000:
        return f"{size} B"
    scaled, unit = size / 1000, "kB"
    for bigger in ("MB", "GB"):
        if scaled < 1000:
            break
        scaled, unit = scaled / 1000, bigger
    return f"{scaled:.1f} {unit}"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
