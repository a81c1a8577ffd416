"""Workspace file tools: read, write and list files in the task's own folder.

Every path goes through `Workspace.resolve`, so a model cannot reach outside the task's
folder. Writes are journaled with `FileWriteEffect`, so undoing the step (or the step
failing) puts the file back as it was. Folders a write created stay behind, empty.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agent_core.effects import FileWriteEffect, record_effect
from agent_core.errors import ToolError
from agent_core.tools.base import FunctionTool
from agent_core.tools.workspace import Workspace

__all__ = ["MAX_FILE_BYTES", "MAX_LIST_ENTRIES", "file_tools"]

MAX_FILE_BYTES = 1_000_000
"""Largest file read_file reads, write_file writes, or write_file overwrites (undo keeps it)."""

MAX_LIST_ENTRIES = 500
"""Most entries list_files shows."""

# O_NOFOLLOW: a link swapped in after `resolve` checked the path is refused, not followed.
# O_NONBLOCK: opening a FIFO someone left there must not hang the step.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW


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
    target = workspace.resolve(path)
    try:
        fd = os.open(target, _READ_FLAGS)
    except FileNotFoundError:
        raise ToolError(
            f"there is no file {path!r} in the workspace; list_files shows what is there"
        ) from None
    except OSError as exc:
        raise ToolError(f"cannot read {path!r}: {exc.strerror}") from None
    try:
        _check_readable(os.fstat(fd).st_mode, path)
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(MAX_FILE_BYTES + 1)  # never more, even if the file grows meanwhile
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise ToolError(
            f"{path!r} is over the {MAX_FILE_BYTES:,}-byte limit for read_file; use run_python"
            " to look at parts of it"
        )
    return _decode(data, path)


def _check_readable(mode: int, path: str) -> None:
    if stat.S_ISDIR(mode):
        raise ToolError(
            f"{path!r} is a folder, not a file; call list_files with path={path!r}"
            " to see what is in it"
        )
    if not stat.S_ISREG(mode):
        raise ToolError(f"{path!r} is not a regular file (a pipe or device); it cannot be read")


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
    target = workspace.resolve(path)
    _check_writable(target, path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        record_effect(FileWriteEffect.before_writing(target))
        with os.fdopen(os.open(target, _WRITE_FLAGS, 0o644), "wb") as file:
            file.write(data)
    except OSError as exc:
        raise ToolError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    return f"wrote {len(content):,} characters to {workspace.relative(target)}"


def _check_writable(target: Path, path: str) -> None:
    if target.is_dir():
        raise ToolError(f"{path!r} is a folder; give the path of a file inside it")
    if target.exists() and not target.is_file():
        raise ToolError(f"{path!r} is not a regular file (a pipe or device); it cannot be written")
    if target.is_file() and target.stat().st_size > MAX_FILE_BYTES:
        # Undo keeps the old content in the step's record: it must stay small.
        raise ToolError(
            f"{path!r} exists and is over {MAX_FILE_BYTES:,} bytes, too big to keep for undo;"
            " write to a new path instead"
        )


def _list(workspace: Workspace, path: str) -> str:
    target = workspace.resolve(path)
    if not target.exists():
        raise ToolError(f"there is no folder {path!r} in the workspace; try list_files('.')")
    shown = workspace.relative(target)
    folder = workspace.folder()
    if not target.is_dir():
        return _entry(folder, target)
    entries, more = _walk(folder, target)
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


def _walk(folder: Path, top: Path) -> tuple[list[str], bool]:
    """Entries under `top`, at most MAX_LIST_ENTRIES; links are shown, never followed."""
    entries: list[str] = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            if len(entries) == MAX_LIST_ENTRIES:
                return entries, True
            entries.append(_entry(folder, Path(dirpath) / name))
    return entries, False


def _entry(folder: Path, path: Path) -> str:
    relative = path.relative_to(folder).as_posix()
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return f"{relative} (link)"
    if stat.S_ISDIR(info.st_mode):
        return f"{relative}/"
    return f"{relative} ({info.st_size:,} bytes)"
