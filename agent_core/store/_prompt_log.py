"""Prompts stored by reference: a task's append-only log of messages, and runs into it.

A model's prompt is mostly the prompt before it plus a message or two, so storing each one
whole makes a task's storage grow with the square of its steps. Instead each task keeps a log
of the messages its steps sent, each stored once (in the order first sent, never rewritten:
undo truncates the task's memory, not this log), and a step's prompt is a short list of runs
`[start, end)` into it. A ReAct prompt (the system message, then a window of the memory) is
two runs; an undo adds one. Rebuilding concatenates the runs: exactly the messages sent.

Prompt records written before this form are JSON lists of messages; `is_runs_record` tells
the two apart (a runs record is a JSON object), so old rows read as they are.
"""

from __future__ import annotations

import bisect
import json
import operator
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from agent_core.llms.base import ChatMessage
from agent_core.store._records import messages_of
from agent_core.types import TaskStepOutput

__all__ = [
    "EncodedPrompt",
    "PromptLog",
    "PromptLogs",
    "copied_prompts",
    "decode_prompt",
    "encode_prompts",
    "is_runs_record",
    "message_record",
    "runs_of",
]

Run = tuple[int, int]


def message_record(message: ChatMessage) -> str:
    """One logged message as JSON (defaults left out, as whole prompts were stored)."""
    return message.model_dump_json(exclude_defaults=True)


def is_runs_record(record: str) -> bool:
    """True for a prompt stored as runs into its task's log, False for an old whole prompt."""
    return record.startswith("{")


def runs_of(record: str) -> list[Run]:
    """The runs of a runs record, in order."""
    return [(start, end) for start, end in json.loads(record)["runs"]]


@dataclass(slots=True)
class EncodedPrompt:
    """A prompt as runs into the log, and the messages to append to the log for it."""

    record: str
    appended: list[ChatMessage]
    start: int
    """The log index of the first appended message (the log's length before)."""


@dataclass(slots=True)
class PromptLog:
    """What a store knows of one task's log: its messages, and where each one went."""

    messages: list[ChatMessage] = field(default_factory=list)
    _by_object: dict[int, tuple[ChatMessage, int]] = field(default_factory=dict)
    """id(message) -> (message, index): the runner sends the same objects step after step."""
    _by_text: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    """(role, content) -> the indices holding that text, ascending."""

    def extend(self, messages: Iterable[ChatMessage]) -> None:
        """Add messages that are in the stored log now (read back, or just committed)."""
        for message in messages:
            index = len(self.messages)
            self.messages.append(message)
            self._by_object[id(message)] = (message, index)  # Held: the id stays its own.
            self._by_text.setdefault((message.role, message.content), []).append(index)

    def encode(self, sent: Sequence[ChatMessage]) -> EncodedPrompt:
        """`sent` as runs into the log, appending the messages the log lacks.

        A run goes on while the sent messages are the log's next ones (compared by identity
        in C: a ReAct prompt of thousands of messages costs microseconds). A message that
        breaks a run is found by identity, else by its text at the next index holding it; at
        the log's end, or when never logged, it is appended, so a growing prompt stays one
        run even when its texts repeat. A logged message found equal but not identical is
        replaced by the sent object, so the next prompt (which sends it again) runs in C.
        """
        start = len(self.messages)
        pending: list[ChatMessage] = []
        runs: list[list[int]] = []
        here, k = -1, 0
        while k < len(sent):
            here = self._place(sent[k], here, start, pending)
            same = _same_prefix(sent, k + 1, self.messages, here + 1) if here < start else 0
            if runs and runs[-1][1] == here:
                runs[-1][1] = here + 1 + same
            else:
                runs.append([here, here + 1 + same])
            here, k = here + same, k + 1 + same
        record = json.dumps({"runs": runs}, separators=(",", ":"))
        return EncodedPrompt(record=record, appended=pending, start=start)

    def _place(
        self, message: ChatMessage, here: int, start: int, pending: list[ChatMessage]
    ) -> int:
        """The log index for `message`, sent after the one at `here` (appending if need be)."""
        after = here + 1
        held = self._by_object.get(id(message))
        if held is not None and held[0] is message:
            return held[1]
        if after < start and self.messages[after] == message:
            return self._adopt(message, after)
        if 0 <= after - start < len(pending) and pending[after - start] == message:
            return after
        if here < 0 or after < start + len(pending):  # Not at the log's end: look it up.
            found = self._by_text_after(message, here, start)
            if found is not None:
                return self._adopt(message, found)
        pending.append(message)
        return start + len(pending) - 1

    def _by_text_after(self, message: ChatMessage, here: int, start: int) -> int | None:
        """The first logged index after `here` holding `message` (else the first at all)."""
        indices = self._by_text.get((message.role, message.content), [])
        first = bisect.bisect_right(indices, here)
        for index in [*indices[first : first + 4], *indices[:4]]:
            if index < start and self.messages[index] == message:
                return index
        return None

    def _adopt(self, message: ChatMessage, index: int) -> int:
        """Hold the sent object at `index` (it equals the logged one) and return the index."""
        self.messages[index] = message
        self._by_object[id(message)] = (message, index)
        return index

    def decode(self, runs: Iterable[Run]) -> list[ChatMessage]:
        """The messages the runs name (all must be in this log)."""
        return [m for start, end in runs for m in self.messages[start:end]]


def _same_prefix(a: Sequence[object], i: int, b: Sequence[object], j: int) -> int:
    """How many of a[i:] are b[j:], object for object (binary search over C-speed checks)."""
    low, high = 0, max(0, min(len(a) - i, len(b) - j))
    while low < high:
        mid = (low + high + 1) // 2
        if all(map(operator.is_, a[i + low : i + mid], b[j + low : j + mid])):
            low = mid
        else:
            high = mid - 1
    return low


class PromptLogs:
    """The logs of the tasks a store object wrote lately (a few: each holds a task's messages)."""

    def __init__(self, size: int = 8) -> None:
        self._logs: OrderedDict[str, PromptLog] = OrderedDict()
        self._size = size

    def get(self, task_id: str) -> PromptLog | None:
        """The task's log as last known, or None."""
        log = self._logs.get(task_id)
        if log is not None:
            self._logs.move_to_end(task_id)
        return log

    def put(self, task_id: str, log: PromptLog) -> None:
        """Remember `log` for the task, forgetting the least recently used past the size."""
        self._logs[task_id] = log
        self._logs.move_to_end(task_id)
        while len(self._logs) > self._size:
            self._logs.popitem(last=False)

    def drop(self, task_id: str) -> None:
        """Forget the task's log (it was deleted, or a write of it failed)."""
        self._logs.pop(task_id, None)


def encode_prompts(
    log: PromptLog, outputs: Iterable[TaskStepOutput]
) -> tuple[list[tuple[str, str]], list[tuple[int, str]]]:
    """The prompt records of the outputs that sent messages, and the log rows they add.

    Returns (step_id, runs record) pairs and (index, message JSON) pairs; `log` is extended
    with the new messages, so a store whose write then fails must forget it.
    """
    prompts, appended = [], []
    for output in outputs:
        if not output.messages_sent:
            continue
        encoded = log.encode(output.messages_sent)
        log.extend(encoded.appended)
        prompts.append((output.task_step.step_id, encoded.record))
        appended += [(encoded.start + i, message_record(m)) for i, m in enumerate(encoded.appended)]
    return prompts, appended


def decode_prompt(record: str, read_runs: Callable[[list[Run]], list[str]]) -> list[ChatMessage]:
    """The messages of a stored prompt: a runs record read through `read_runs`, or old JSON.

    `read_runs(runs)` returns the logged messages' JSON for the runs, in order.
    """
    if not is_runs_record(record):
        return messages_of(record)
    runs = runs_of(record)
    rows = read_runs(runs)
    if len(rows) != sum(end - start for start, end in runs):
        raise ValueError("the prompt names messages its task's log does not hold")
    return [ChatMessage.model_validate_json(row) for row in rows]


def copied_prompts(
    rows: Iterable[tuple[str, str]], steps: dict[str, str]
) -> tuple[list[tuple[str, str]], int]:
    """A fork's prompt records from the original's (step_id, record) rows, and its log's end.

    `steps` maps the fork's step ids to the original's. The records are copied as they are:
    runs name the same indices in the fork's log, which starts as a copy of the original's
    up to the returned end (the most the copied runs name); an old whole prompt names none.
    """
    by_old = dict(rows)
    prompts, end = [], 0
    for new, old in steps.items():
        record = by_old.get(old)
        if record is None:
            continue
        prompts.append((new, record))
        if is_runs_record(record):
            end = max([end, *(stop for _, stop in runs_of(record))])
    return prompts, end
