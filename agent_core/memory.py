"""Chat memory with a token limit, cheap snapshots for undo, and per-step staging.

A step never writes the task's memory directly: it writes a `StagedMemory` that reads through
to the task's buffer, and the runner applies it when the step commits. A failed step therefore
leaves memory untouched, parallel steps cannot interleave half-written turns, and the snapshot
that undo needs is the buffer's length before the commit (plus a full copy only in the rare
case a step rewrote the history).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from agent_core._private_attrs import private
from agent_core._tokens import estimate_tokens
from agent_core.llms.base import ChatMessage

__all__ = ["DEFAULT_TOKEN_LIMIT", "ChatMemoryBuffer", "MemorySnapshot", "StagedMemory"]

DEFAULT_TOKEN_LIMIT = 64_000

TokenCounter = Callable[[str], int]


def _message_tokens(message: ChatMessage) -> int:
    # Tool calls count too: their JSON is part of what the model reads.
    calls = sum(estimate_tokens(call.name) + len(call.args) * 4 for call in message.tool_calls)
    return estimate_tokens(message.content) + calls + 4


def _trim_to_valid_start(window: list[ChatMessage]) -> list[ChatMessage]:
    # Providers reject a history that opens with an assistant turn or an orphaned tool result.
    start = 0
    while start < len(window) and window[start].role in ("assistant", "tool"):
        start += 1
    return window[start:]


class MemorySnapshot(BaseModel):
    """What a memory held before a step committed, enough to restore it exactly."""

    length: int
    messages: list[ChatMessage] | None = None
    """The full history, kept only when the step replaced messages instead of appending."""


class ChatMemoryBuffer(BaseModel):
    """An append-mostly list of messages; `get()` returns the newest that fit `token_limit`."""

    messages: list[ChatMessage] = Field(default_factory=list)
    token_limit: int = DEFAULT_TOKEN_LIMIT

    # Prefix sums of message tokens, so `get()` finds its window by bisection, not a scan.
    _cumulative: list[int] = PrivateAttr(default_factory=list)

    @classmethod
    def from_defaults(
        cls,
        chat_history: Sequence[ChatMessage] | None = None,
        token_limit: int | None = None,
        **kwargs: Any,
    ) -> ChatMemoryBuffer:
        """A buffer holding `chat_history`, as LlamaIndex builds one.

        LlamaIndex's other keywords (`llm`, `tokenizer_fn`, ...) are accepted and unused:
        tokens are estimated from characters here.
        """
        return cls(
            messages=list(chat_history or []), token_limit=token_limit or DEFAULT_TOKEN_LIMIT
        )

    def model_post_init(self, _context: object) -> None:  # noqa: D102 - pydantic hook
        self._reindex()

    def _reindex(self) -> None:
        self._cumulative = []
        total = 0
        for message in self.messages:
            total += _message_tokens(message)
            self._cumulative.append(total)

    def __len__(self) -> int:
        return len(self.messages)

    def put(self, message: ChatMessage) -> None:
        """Append one message."""
        self.messages.append(message)
        cumulative: list[int] = private(self, "_cumulative")
        previous = cumulative[-1] if cumulative else 0
        cumulative.append(previous + _message_tokens(message))

    def put_messages(self, messages: Iterable[ChatMessage]) -> None:
        """Append several messages in order."""
        for message in messages:
            self.put(message)

    def get_all(self) -> list[ChatMessage]:
        """Every message, oldest first."""
        return list(self.messages)

    def get(self, initial_token_count: int = 0) -> list[ChatMessage]:
        """The newest messages whose tokens, with `initial_token_count`, fit the limit."""
        end = len(self.messages)
        start = self._window_start(end, self.token_limit - initial_token_count)
        return _trim_to_valid_start(self.messages[start:end])

    def _window_start(self, end: int, budget: int) -> int:
        """First index of the longest run ending at `end` whose tokens fit `budget`."""
        if end == 0 or budget <= 0:
            return end
        cumulative: list[int] = private(self, "_cumulative")
        total = cumulative[end - 1]
        if total <= budget:
            return 0
        # messages[i:end] costs total - cumulative[i - 1]; find the smallest i that fits.
        return bisect.bisect_left(cumulative, total - budget, 0, end) + 1

    def set(self, messages: Sequence[ChatMessage]) -> None:
        """Replace the whole history."""
        self.messages = list(messages)
        self._reindex()

    def shared_copy(self) -> ChatMemoryBuffer:
        """A buffer of its own holding the same message objects (they are frozen).

        A copy of a long task (a fork) must not copy its thousands of messages one by one.
        """
        copied = self.model_copy()
        copied.messages = list(self.messages)
        copied._cumulative = list(private(self, "_cumulative"))
        return copied

    def reset(self) -> None:
        """Forget every message."""
        self.set([])

    def snapshot(self) -> MemorySnapshot:
        """A snapshot of the current contents, exact whatever happens next.

        (The runner does not need this copy: `apply` returns a length-only snapshot when a
        step only appended, which is the common case.)
        """
        return MemorySnapshot(length=len(self.messages), messages=self.get_all())

    def restore(self, snapshot: MemorySnapshot) -> None:
        """Return to `snapshot` exactly."""
        if snapshot.messages is not None:
            self.set(snapshot.messages)
            return
        del self.messages[snapshot.length :]
        del self._cumulative[snapshot.length :]

    def staged(self) -> StagedMemory:
        """A view for one step: reads see this buffer plus the step's writes, writes stay local."""
        return StagedMemory(base=self)

    def apply(self, staged: StagedMemory) -> MemorySnapshot:
        """Commit a step's staged writes; return the snapshot that undoes them."""
        if staged.replaced is not None:
            before = MemorySnapshot(length=len(self.messages), messages=self.get_all())
            self.set(staged.replaced)
            return before
        before = MemorySnapshot(length=len(self.messages))
        self.put_messages(staged.pending)
        return before


class StagedMemory(ChatMemoryBuffer):
    """A step's private view of a task's memory; see the module docstring."""

    _base: ChatMemoryBuffer = PrivateAttr()
    _base_length: int = PrivateAttr(default=0)
    pending: list[ChatMessage] = Field(default_factory=list)
    replaced: list[ChatMessage] | None = None

    def __init__(self, *, base: ChatMemoryBuffer) -> None:
        super().__init__(token_limit=base.token_limit)
        self._base = base
        self._base_length = len(base.messages)

    def __len__(self) -> int:
        if self.replaced is not None:
            return len(self.replaced)
        return private(self, "_base_length") + len(self.pending)

    @property
    def changed(self) -> bool:
        """Whether the step wrote anything."""
        return bool(self.pending) or self.replaced is not None

    def put(self, message: ChatMessage) -> None:
        """Append one message to this step's writes."""
        (self.replaced if self.replaced is not None else self.pending).append(message)

    def get_all(self) -> list[ChatMessage]:
        """What the task's memory will hold once this step commits."""
        if self.replaced is not None:
            return list(self.replaced)
        base: ChatMemoryBuffer = private(self, "_base")
        return base.messages[: private(self, "_base_length")] + self.pending

    def get(self, initial_token_count: int = 0) -> list[ChatMessage]:
        """The newest messages that fit the limit, including this step's writes."""
        budget = self.token_limit - initial_token_count
        tail = self.replaced if self.replaced is not None else self.pending
        kept = 0
        for message in reversed(tail):
            if budget - _message_tokens(message) < 0:
                break
            budget -= _message_tokens(message)
            kept += 1
        window = tail[len(tail) - kept :]
        if kept < len(tail) or self.replaced is not None:
            return _trim_to_valid_start(window)
        base: ChatMemoryBuffer = private(self, "_base")
        base_length: int = private(self, "_base_length")
        start = base._window_start(base_length, budget)
        return _trim_to_valid_start(base.messages[start:base_length] + window)

    def set(self, messages: Sequence[ChatMessage]) -> None:
        """Replace the whole history (applied at commit)."""
        self.replaced = list(messages)
        self.pending = []

    def reset(self) -> None:
        """Forget every message (applied at commit)."""
        self.set([])

    def snapshot(self) -> MemorySnapshot:
        """A snapshot of what this view holds now (base plus the step's writes).

        Length-only while the view only appended: the base's first messages cannot change
        under a running step (undo waits for running steps), so restoring stays an append.
        """
        if self.replaced is None:
            return MemorySnapshot(length=len(self))
        return MemorySnapshot(length=len(self), messages=self.get_all())

    def restore(self, snapshot: MemorySnapshot) -> None:
        """Return this view to `snapshot` (applied to the base at commit)."""
        if snapshot.messages is not None:
            self.set(snapshot.messages)
        elif self.replaced is not None:
            del self.replaced[snapshot.length :]
        elif snapshot.length >= self._base_length:
            del self.pending[snapshot.length - self._base_length :]
        else:
            self.set(self._base.messages[: snapshot.length])

    def staged(self) -> StagedMemory:
        """Staging a staged view is not supported: a step has one view."""
        raise TypeError("a StagedMemory cannot be staged again")
