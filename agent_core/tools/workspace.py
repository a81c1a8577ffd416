"""Each task's workspace folder, and the one check every file path from a model goes through.

A task's tools share the folder `root/<workspace_id>`, where the workspace id is the outermost
task's id (a planner's sub-agents share their parent task's folder). A path from a model is
accepted only when it is relative and has no `..`; reads, writes and listings then go through
`agent_core.confined`, which follows no symbolic link at any level of the path (whatever is
swapped in meanwhile) and refuses files with more than one hard link.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import NoReturn

from agent_core import confined
from agent_core.effects import FileWriteEffect, current_step, record_effect
from agent_core.errors import ToolError

__all__ = ["DEFAULT_WORKSPACE_ID", "MAX_KEPT_BYTES", "MAX_PATH_CHARS", "Workspace"]

DEFAULT_WORKSPACE_ID = "default"
"""The folder used by tools called outside a running step (a notebook, a test)."""

MAX_PATH_CHARS = 1024
"""Longest relative path accepted."""

MAX_KEPT_BYTES = 1_000_000
"""Largest existing file a write may replace: undo keeps its old content in the step."""

_MAX_NAME_BYTES = 255  # the usual file-system limit for one file or folder name
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")
_ALLOWED = "paths are relative to the task's workspace, e.g. notes/haiku.txt"


class Workspace:
    """Per-task folders under `root`, and path checks that keep tools inside them.

    Args:
        root: The folder holding every task's workspace; created when first needed.
    """

    def __init__(self, root: str | Path) -> None:
        self._root = Path(root).expanduser().resolve()

    @property
    def root(self) -> Path:
        """The folder holding every task's workspace."""
        return self._root

    def __repr__(self) -> str:
        return f"Workspace({str(self._root)!r})"

    def folder(self, workspace_id: str | None = None) -> Path:
        """The workspace folder of `workspace_id` (default: the running task's), created.

        Raises:
            ToolError: The id could not name a folder (it has a `/`, or is `..`).
        """
        workspace_id = workspace_id or _current_workspace_id()
        if not _SAFE_ID.match(workspace_id):
            raise ToolError(
                f"workspace id {workspace_id!r} cannot name a folder: use letters, digits, "
                "'_', '-' or '.' (at most 128, not starting with '.')"
            )
        folder = self._root / workspace_id
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def resolve(self, relative_path: str, *, workspace_id: str | None = None) -> Path:
        """The absolute path of `relative_path` inside the task's folder.

        The result has its symlinks resolved, so it is the file a tool will really touch.

        Raises:
            ToolError: The path is empty, absolute, has a `..` part or a NUL byte, is too
                long, or leads outside the folder through a symlink.
        """
        _check_shape(relative_path)
        folder = self.folder(workspace_id)
        try:
            resolved = (folder / relative_path).resolve(strict=False)
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            raise ToolError(f"cannot resolve path {relative_path!r}: {exc}") from None
        if not resolved.is_relative_to(folder):
            raise ToolError(
                f"refused path {relative_path!r}: it leads outside the task's workspace "
                f"through a symbolic link; {_ALLOWED}, and links may not leave it"
            )
        return resolved

    def read(self, relative_path: str, *, limit: int) -> bytes:
        """At most `limit + 1` bytes of a file in the running task's folder.

        Raises:
            ToolError: The path is refused, missing, a folder, a link, a pipe or a file with
                more than one hard link.
        """
        relative = _checked(relative_path)
        try:
            return confined.read_file(self.folder(), relative, limit=limit)
        except FileNotFoundError:
            raise ToolError(
                f"there is no file {relative_path!r} in the workspace; list_files shows what is"
                " there"
            ) from None
        except OSError as exc:
            raise _file_error("read", relative_path, exc) from None

    def write(self, relative_path: str, data: bytes) -> str:
        """Replace a file in the running task's folder, journaled so undo restores it.

        Folders on the way are created. Returns the path as the model writes it.

        Raises:
            ToolError: The path is refused, a folder, a link, a pipe, a file with more than
                one hard link, or an existing file over `MAX_KEPT_BYTES`.
        """
        relative = _checked(relative_path)
        folder = self.folder()
        try:
            with confined.update_file(folder, relative, keep_limit=MAX_KEPT_BYTES) as update:
                record_effect(FileWriteEffect.written(folder, relative, update.previous))
                update.replace(data)
        except OSError as exc:
            raise _file_error("write", relative_path, exc) from None
        return relative

    def entry(self, relative_path: str) -> tuple[str, os.stat_result]:
        """A path in the running task's folder, in plain form, with its own status.

        A link is described, not followed; "." is the folder itself.

        Raises:
            ToolError: The path is refused or missing.
        """
        relative = "." if relative_path.strip() in ("", ".") else _checked(relative_path)
        try:
            return relative, confined.entry_stat(self.folder(), relative)
        except FileNotFoundError:
            raise ToolError(
                f"there is no folder {relative_path!r} in the workspace; try list_files('.')"
            ) from None
        except OSError as exc:
            raise _file_error("list", relative_path, exc) from None

    def walk(self, relative_folder: str) -> Iterator[tuple[str, os.stat_result]]:
        """(path, status) of everything under a folder `entry` accepted; links not followed.

        Raises:
            ToolError: A folder on the way became a link or vanished.
        """
        try:
            yield from confined.walk(self.folder(), relative_folder)
        except OSError as exc:
            raise _file_error("list", relative_folder, exc) from None

    def relative(self, path: Path, *, workspace_id: str | None = None) -> str:
        """`path` as the model writes it: relative to the task's folder, with `/`."""
        return path.relative_to(self.folder(workspace_id)).as_posix()


def _current_workspace_id() -> str:
    step = current_step()
    return step.workspace_id if step is not None else DEFAULT_WORKSPACE_ID


def _checked(relative_path: str) -> str:
    """`relative_path` in its plain form (`a/./b//c` is `a/b/c`), once its shape is accepted."""
    _check_shape(relative_path)
    relative = PurePosixPath(relative_path).as_posix()
    if relative == ".":
        _refuse(relative_path, "it names the workspace folder itself, not a file")
    return relative


def _file_error(verb: str, relative_path: str, exc: OSError) -> ToolError:
    """The model's view of an operation the disk or the confinement refused."""
    if isinstance(exc, IsADirectoryError):
        return ToolError(
            f"{relative_path!r} is a folder, not a file; call list_files with "
            f"path={relative_path!r} to see what is in it"
        )
    if exc.errno == errno.EFBIG and verb == "write":
        return ToolError(
            f"{relative_path!r} exists and is over {MAX_KEPT_BYTES:,} bytes, too big to keep for"
            " undo; write to a new path instead"
        )
    if isinstance(exc, NotADirectoryError):
        return ToolError(f"cannot {verb} {relative_path!r}: {exc.strerror}")
    if isinstance(exc, confined.ConfinedFileError):
        return ToolError(f"refused to {verb} {relative_path!r}: {exc.strerror}; {_ALLOWED}")
    return ToolError(f"cannot {verb} {relative_path!r}: {exc.strerror or exc}")


def _check_shape(relative_path: str) -> None:
    """Refuse paths that are wrong before looking at the disk."""
    if not relative_path or not relative_path.strip():
        _refuse(relative_path, "it is empty")
    if "\x00" in relative_path:
        _refuse(relative_path, "it contains a NUL byte")
    if len(relative_path) > MAX_PATH_CHARS:
        _refuse(
            f"{relative_path[:40]}...",
            f"it is {len(relative_path)} characters long; the limit is {MAX_PATH_CHARS}",
        )
    try:
        relative_path.encode()
    except UnicodeEncodeError:
        _refuse(relative_path, "it is not valid Unicode text")
    # A backslash is an ordinary character here, but a model writing `..\x` means `../x`.
    as_slashes = PurePosixPath(relative_path.replace("\\", "/"))
    if as_slashes.is_absolute():
        _refuse(relative_path, "it is absolute")
    if ".." in as_slashes.parts:
        _refuse(relative_path, "it has a '..' part")
    if any(len(part.encode()) > _MAX_NAME_BYTES for part in as_slashes.parts):
        _refuse(relative_path, f"a file or folder name in it is over {_MAX_NAME_BYTES} bytes")


def _refuse(relative_path: str, reason: str) -> NoReturn:
    raise ToolError(f"refused path {relative_path!r}: {reason}; {_ALLOWED}")
