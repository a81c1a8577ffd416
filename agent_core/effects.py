"""Side effects a step had outside the task, recorded so that undo can revert them.

While a step runs, tools call `record_effect`. The runner stores the step's effects with its
output; `undo_step` reverts them newest first, and a step that fails is reverted at once.
Effects that cannot be reverted (an e-mail sent, an API called) are recorded too, so undo can
say what it could not take back.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field

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
    """A file was created or overwritten; `previous` holds its bytes before (base64)."""

    kind: Literal["file_write"] = "file_write"
    path: str
    previous: str | None = None
    """Base64 of the old content, or None when the file did not exist."""

    @classmethod
    def before_writing(cls, path: Path) -> FileWriteEffect:
        """Capture `path` as it is now, before a write."""
        previous = base64.b64encode(path.read_bytes()).decode() if path.is_file() else None
        return cls(path=str(path), previous=previous)

    def revert(self) -> str | None:
        """Put the file back as it was; return a warning if that was not possible."""
        path = Path(self.path)
        try:
            if self.previous is None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(base64.b64decode(self.previous))
        except OSError as exc:
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
