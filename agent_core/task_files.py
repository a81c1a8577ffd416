"""A task's workspace files, read for a person: list, preview, zip, and delete.

A task's tools write into `<spec.workspace>/<task_id>` (see `agent_core.tools.workspace`).
Everything here reads that folder without following a symbolic link: a link a tool or a
program made inside the folder is skipped, never read through, and never deleted through.
The step that last wrote each file comes from the steps' journaled effects (`FileWriteEffect`)
and, for tools that write without journaling (`run_python`), from the time the step ran.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from agent_core import confined
from agent_core.effects import FileWriteEffect, IrreversibleEffect
from agent_core.errors import UserError
from agent_core.types import Task, TaskState, TaskStepOutput

__all__ = [
    "MAX_ZIP_BYTES",
    "FilePreview",
    "TaskFile",
    "delete_workspace",
    "list_files",
    "read_preview",
    "workspace_folder",
    "zip_bytes",
]

MAX_ZIP_BYTES = 200 * 1024 * 1024
"""Largest total of file bytes `zip_bytes` packs (the zip is built in memory)."""

_WORKSPACES_ENV = "STEPWISE_WORKSPACES"  # As `agent_core.spec`: a spec without a folder.
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")  # As `Workspace.folder`.


@dataclass(frozen=True)
class TaskFile:
    """One regular file in a task's workspace."""

    path: str
    """Relative to the workspace folder, with `/` (as the model writes it)."""
    size: int
    """In bytes."""
    modified: datetime
    """Last modification, timezone-aware (UTC)."""
    step_number: int | None
    """The number of the completed step that last wrote it; None when unknown."""


@dataclass(frozen=True)
class FilePreview:
    """The first bytes of a workspace file."""

    path: str
    data: bytes
    """At most the `limit` asked for."""
    size: int
    """The whole file's size in bytes."""

    @property
    def truncated(self) -> bool:
        """Whether `data` is shorter than the file."""
        return len(self.data) < self.size


def workspace_folder(task: Task) -> Path | None:
    """The folder `task`'s tools write to, or None when the task records no agent spec.

    The folder may not exist yet (no tool wrote a file). A task id that could not name a
    folder gives None too. An imported task's spec never chooses the root (a trace is another
    machine's, or anyone's): its folder is under the configured one.
    """
    spec = task.spec
    if spec is None or not _SAFE_ID.match(task.task_id):
        return None
    chosen = None if task.imported else spec.get("workspace")
    root = chosen or os.environ.get(_WORKSPACES_ENV, "workspaces")
    return Path(str(root)).expanduser().resolve() / task.task_id


def list_files(task_state: TaskState) -> list[TaskFile]:
    """The task's regular files, sorted by path; symbolic links are left out, never followed."""
    folder = workspace_folder(task_state.task)
    if folder is None:
        return []
    found = sorted(_walk(folder))
    if not found:  # The usual case (no file tools): read no step.
        return []
    written = _journaled_writers(task_state, folder)
    untracked = [o for o in task_state.completed_steps if _has_unjournaled_effect(o)]
    files = []
    for relative, info in found:
        modified = datetime.fromtimestamp(info.st_mtime, tz=UTC)
        number = _timed_writer(untracked, modified)
        journaled = written.get(relative)
        if number is None or (journaled is not None and journaled > number):
            number = journaled
        files.append(TaskFile(relative, info.st_size, modified, number))
    return files


def read_preview(task: Task, relative_path: str, limit: int) -> FilePreview:
    """The first `limit` bytes of a file in the task's workspace.

    Raises:
        UserError: The path leaves the folder (absolute, `..`), passes through a symbolic
            link, is not a regular file, or does not exist.
    """
    folder = _existing_folder(task)
    parts = _parts(relative_path)
    try:
        with confined.opened_file(folder, "/".join(parts)) as (fd, info):
            data = os.read(fd, max(limit, 0))
    except OSError as exc:
        message = f"cannot read {relative_path!r} in the task's workspace: {_why(exc)}"
        raise UserError(message) from None
    size = info.st_size
    return FilePreview(path="/".join(parts), data=data, size=size)


def zip_bytes(task: Task) -> bytes:
    """A zip of every regular file in the task's workspace (symbolic links are left out).

    Raises:
        UserError: The workspace holds more than `MAX_ZIP_BYTES` of files.
    """
    folder = workspace_folder(task)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        if folder is not None:
            total = 0
            for relative, info in sorted(_walk(folder)):
                total += info.st_size
                if total > MAX_ZIP_BYTES:
                    raise UserError(
                        f"the workspace holds over {MAX_ZIP_BYTES // 2**20} MB of files, too many "
                        f"to zip here; they are in {folder}"
                    )
                try:
                    with confined.opened_file(folder, relative) as (fd, _):
                        archive.writestr(relative, _read_all(fd))
                except OSError:  # Removed, linked or swapped for a link since the walk.
                    continue
    return buffer.getvalue()


def delete_workspace(task: Task) -> bool:
    """Delete the task's workspace folder; True if there was one to delete.

    A folder replaced by a symbolic link loses the link only, never what it points to; links
    inside the folder are removed as links.

    Raises:
        UserError: The folder would not lie strictly inside the workspace root.
        OSError: The disk refused to delete something.
    """
    folder = workspace_folder(task)
    if folder is None:
        if task.spec is not None:
            raise UserError(f"refused to delete the workspace of task {task.task_id!r}")
        return False
    try:
        info = folder.lstat()
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(folder)  # Removes links inside as links (safe against link swaps).
    else:
        folder.unlink()
    return True


def _journaled_writers(task_state: TaskState, folder: Path) -> dict[str, int]:
    """Relative path -> number of the last completed step that journaled a write to it."""
    writers: dict[str, int] = {}
    for output in task_state.completed_steps:
        number = output.task_step.number
        if number is None:
            continue
        for effect in output.effects:
            if isinstance(effect, FileWriteEffect):
                relative = _relative_to(Path(effect.path), folder)
                if relative is not None:
                    writers[relative] = number
    return writers


def _has_unjournaled_effect(output: TaskStepOutput) -> bool:
    step = output.task_step
    return (
        step.number is not None
        and step.started_at is not None
        and step.finished_at is not None
        and any(isinstance(effect, IrreversibleEffect) for effect in output.effects)
    )


def _timed_writer(candidates: list[TaskStepOutput], modified: datetime) -> int | None:
    """The latest step that wrote without journaling and was running when the file changed.

    A file's time lags the clock by at most a tick (the kernel's coarse clock), never leads
    it: a file a step wrote is no newer than the step's end, and (its tool running after the
    model call) no older than its start.
    """
    for output in reversed(candidates):
        step = output.task_step
        if step.started_at is None or step.finished_at is None:
            continue
        started, finished = _aware(step.started_at), _aware(step.finished_at)
        if started <= modified <= finished:
            return step.number
    return None


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _relative_to(path: Path, folder: Path) -> str | None:
    try:
        return path.relative_to(folder).as_posix()
    except ValueError:
        return None


def _walk(folder: Path) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, stat) of every regular file under `folder`, never entering a link."""
    try:
        if not stat.S_ISDIR(folder.lstat().st_mode):
            return
        for relative, info in confined.walk(folder, "."):
            if stat.S_ISREG(info.st_mode):
                yield relative, info
    except OSError:  # Removed or swapped while walking: what was found is shown.
        return


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _existing_folder(task: Task) -> Path:
    folder = workspace_folder(task)
    if folder is None:
        raise UserError("this task has no workspace folder: it records no agent spec")
    return folder


def _parts(relative_path: str) -> list[str]:
    """The path's parts, refusing anything that could leave the folder."""
    if not relative_path or "\x00" in relative_path:
        raise UserError(f"refused path {relative_path!r}: it is empty or has a NUL byte")
    path = PurePosixPath(relative_path.replace("\\", "/"))
    parts = [part for part in path.parts if part not in ("", ".")]
    if path.is_absolute() or ".." in parts or not parts:
        raise UserError(
            f"refused path {relative_path!r}: only paths inside the task's workspace are shown"
        )
    return parts


def _why(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if exc.errno == getattr(os, "ELOOP", -1):
        return "it is, or passes through, a symbolic link"
    if isinstance(exc, NotADirectoryError):
        return "a part of it is a symbolic link, or a file where a folder should be"
    if isinstance(exc, IsADirectoryError):
        return "it is not a regular file"
    return exc.strerror or type(exc).__name__
