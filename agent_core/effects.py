"""Side effects a step had outside the task, recorded so that undo can revert them.

While a step runs, tools call `record_effect`. The runner stores the step's effects with its
output; `undo_step` reverts them newest first, and a step that fails is reverted at once.
Effects that cannot be reverted (an e-mail sent, an API called) are recorded too, so undo can
say what it could not take back.
"""

from __future__ import annotations

import base64
import contextlib
import errno
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field

from agent_core import confined

if TYPE_CHECKING:
    from agent_core.llms.base import ChatMessage

__all__ = [
    "Effect",
    "FileWriteEffect",
    "IrreversibleEffect",
    "StepContext",
    "current_step",
    "record_effect",
    "revert_effects",
    "step_context",
]


class FileWriteEffect(BaseModel):
    """A file was created or overwritten; `previous` holds its bytes before (base64).

    The snapshot and the restore go through `agent_core.confined`: inside `folder`, no link
    is followed at any level, so a link swapped in since the write cannot redirect the undo.
    """

    kind: Literal["file_write"] = "file_write"
    path: str
    """The file's absolute path (for people; the restore goes through `folder`)."""
    previous: str | None = None
    """Base64 of the old content, or None when the file did not exist."""
    folder: str | None = None
    """The folder the file was confined to (a task's workspace); None: the file's own folder."""

    @classmethod
    def written(cls, folder: Path, relative_path: str, previous: bytes | None) -> FileWriteEffect:
        """The record of a write to `folder/relative_path` that replaced `previous`."""
        encoded = None if previous is None else base64.b64encode(previous).decode()
        return cls(path=str(folder / relative_path), previous=encoded, folder=str(folder))

    @classmethod
    def before_writing(cls, path: Path, *, limit: int = 10_000_000) -> FileWriteEffect:
        """Capture `path` as it is now, before a write (for tools that write files themselves).

        The file is read without following a link in its last part; a file with other hard
        links, or over `limit` bytes, is refused (`ConfinedFileError`).
        """
        path = Path(path)
        try:
            previous = confined.read_file(path.parent, path.name, limit=limit)
        except FileNotFoundError:
            previous = None
        if previous is not None and len(previous) > limit:
            raise confined.ConfinedFileError(
                errno.EFBIG, f"{path.name!r} is over {limit:,} bytes, too big to keep for undo"
            )
        return cls.written(path.parent, path.name, previous)

    def _where(self) -> tuple[Path, str]:
        if self.folder is None:  # A user's tool, or a record from before folders were kept.
            path = Path(self.path)
            return path.parent, path.name
        return Path(self.folder), Path(self.path).relative_to(self.folder).as_posix()

    def revert(self) -> str | None:
        """Put the file back as it was; return a warning if that was not possible."""
        try:
            folder, relative = self._where()
            if self.previous is None:
                confined.remove_file(folder, relative)
            else:
                with confined.update_file(folder, relative, keep_limit=None) as update:
                    update.replace(base64.b64decode(self.previous))
        except (OSError, ValueError) as exc:
            return f"could not restore {self.path}: {exc}"
        return None


class IrreversibleEffect(BaseModel):
    """Something a tool did that cannot be taken back."""

    kind: Literal["irreversible"] = "irreversible"
    tool: str
    description: str

    def revert(self) -> str | None:
        """Nothing can be reverted: say so."""
        return f"{self.tool} cannot be undone: {self.description}"


Effect = Annotated[FileWriteEffect | IrreversibleEffect, Field(discriminator="kind")]


@dataclass
class StepContext:
    """What a tool may know about the step it runs in.

    A step may run a whole sub-agent (a planner's delegate step): the sub-agent's steps get
    contexts whose `parent` is the delegate step's, so their effects are journaled on the
    delegate step too and their tools share the outer task's workspace.
    """

    task_id: str
    step_id: str
    effects: list[Effect] = field(default_factory=list)
    parent: StepContext | None = None
    messages_sent: list[ChatMessage] | None = None
    """The messages of the step's own last model call (a sub-agent's calls are its own)."""

    @property
    def workspace_id(self) -> str:
        """The id of the outermost task: its workspace folder is the one tools use."""
        return self.parent.workspace_id if self.parent else self.task_id


_current: ContextVar[StepContext | None] = ContextVar("stepwise_step", default=None)


def current_step() -> StepContext | None:
    """The step running in this context (None outside the runner)."""
    return _current.get()


def record_effect(effect: Effect) -> None:
    """Record a side effect of the running step (ignored outside a step)."""
    context = _current.get()
    while context is not None:
        context.effects.append(effect)
        context = context.parent


@contextlib.contextmanager
def step_context(task_id: str, step_id: str) -> Iterator[StepContext]:
    """Run the body as step `step_id`: tools inside it record their effects there."""
    context = StepContext(task_id=task_id, step_id=step_id, parent=_current.get())
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def revert_effects(effects: list[Effect]) -> list[str]:
    """Revert `effects` newest first; return the warnings for what could not be reverted."""
    warnings = [effect.revert() for effect in reversed(effects)]
    return [w for w in warnings if w]
