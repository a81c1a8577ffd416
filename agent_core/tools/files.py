"""Workspace file tools: read, write and list files in the task's own folder.

Every file operation goes through `Workspace`, which follows no link and refuses files with
other hard links, so a model cannot reach outside the task's folder. Writes are journaled
with `FileWriteEffect`, so undoing the step (or the step failing) puts the file back as it
was. Folders a write created stay behind, empty.
"""

from __future__ import annotations

import itertools
import os
import stat

from agent_core.errors import ToolError
from agent_core.tools.base import FunctionTool
from agent_core.tools.workspace import MAX_KEPT_BYTES, Workspace

__all__ = ["MAX_FILE_BYTES", "MAX_LIST_ENTRIES", "file_tools"]

MAX_FILE_BYTES = MAX_KEPT_BYTES
"""Largest file read_file reads, write_file writes, or write_file overwrites (undo keeps it)."""

MAX_LIST_ENTRIES = 500
"""Most entries list_files shows."""


def file_tools(workspace: Workspace) -> list[FunctionTool]:
    """The tools read_file, write_file and list_files, confined to the task's workspace."""

    def read_file(path: str) -> str:
        """Read a UTF-8 text file from the task's workspace and return its content.

        Args:
            path: The file's path relative to the workspace, e.g. notes/haiku.txt.
        """
        return _read(workspace, path)

    def write_file(path: str, content: str) -> str:
        """Write text to a file in the task's workspace, replacing it if it exists.

        Folders in the path are created. Undoing the step restores the file.

        Args:
            path: The file's path relative to the workspace, e.g. notes/haiku.txt.
            content: The full text to write.
        """
        return _write(workspace, path, content)

    def list_files(path: str = ".") -> str:
        """List the files and folders in the task's workspace (recursively), with sizes.

        Args:
            path: A folder relative to the workspace; "." (the default) lists everything.
        """
        return _list(workspace, path)

    return [
        FunctionTool.from_defaults(read_file),
        FunctionTool.from_defaults(write_file, side_effects=True),
        FunctionTool.from_defaults(list_files),
    ]


def _read(workspace: Workspace, path: str) -> str:
    data = workspace.read(path, limit=MAX_FILE_BYTES)
    if len(data) > MAX_FILE_BYTES:
        raise ToolError(
            f"{path!r} is over the {MAX_FILE_BYTES:,}-byte limit for read_file; use run_python"
            " to look at parts of it"
        )
    return _decode(data, path)


def _decode(data: bytes, path: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\x00" in text:
        raise ToolError(
            f"{path!r} is not UTF-8 text (it looks binary), so read_file cannot show it;"
            " use run_python to inspect it"
        )
    return text


def _write(workspace: Workspace, path: str, content: str) -> str:
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"the content is not valid Unicode text: {exc.reason}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ToolError(
            f"the content is {len(data):,} bytes; write_file writes at most {MAX_FILE_BYTES:,}"
            " bytes at a time. Split it into several files"
        )
    written = workspace.write(path, data)
    return f"wrote {len(content):,} characters to {written}"


def _list(workspace: Workspace, path: str) -> str:
    shown, info = workspace.entry(path)
    if not stat.S_ISDIR(info.st_mode):
        return _entry(shown, info)
    found = list(itertools.islice(workspace.walk(shown), MAX_LIST_ENTRIES + 1))
    more = len(found) > MAX_LIST_ENTRIES
    entries = [_entry(relative, info) for relative, info in found[:MAX_LIST_ENTRIES]]
    where = "the workspace" if shown == "." else f"{shown}/"
    if not entries:
        return f"{where} is empty"
    header = f"{len(entries)} entries in {where}:"
    if more:
        header = (
            f"the first {MAX_LIST_ENTRIES} entries in {where} (there are more; list a subfolder"
            " to see them):"
        )
    return "\n".join([header, *sorted(entries)])


def _entry(relative: str, info: os.stat_result) -> str:
    if stat.S_ISLNK(info.st_mode):
        return f"{relative} (link)"
    if stat.S_ISDIR(info.st_mode):
        return f"{relative}/"
    return f"{relative} ({info.st_size:,} bytes)"
