"""Stepwise's LangGraph checkpointer: a thread's latest checkpoint kept as JSON in the task.

LangGraph keeps a graph's state in a checkpointer (`BaseCheckpointSaver`), one thread per run.
Stepwise keeps a task's state in `task.extra_state`, snapshotted before every step. This saver
joins the two: it is LangGraph's own `InMemorySaver`, and for one step a thread is loaded into
it from the task (`open`), the super-step runs on it, and the thread's latest checkpoint, its
pending writes (an `interrupt()`'s question, the writes of nodes that finished beside it) and
the channel blobs it points at go back into the task (`dump`), then the thread is dropped
(`close`). So undoing a step is going back one checkpoint: the runner restores the task's
JSON from before it.

The bytes are LangGraph's own serde (`JsonPlusSerializer`, msgpack), base64 text in JSON, never
decoded and re-encoded here: a checkpoint comes back exactly as LangGraph wrote it.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.checkpoint.memory import InMemorySaver

__all__ = ["SAVED_FORMAT", "StepwiseSaver"]

SAVED_FORMAT = 1
"""The version of the JSON a thread is dumped as (`StepwiseSaver.dump`)."""

_NS_TASK = ":"
"""LangGraph's separator between a subgraph node's name and its task id in a namespace."""

Typed = tuple[str, bytes]


def _text(typed: Typed) -> list[str]:
    kind, data = typed
    return [kind, base64.b64encode(data).decode("ascii")]


def _typed(text: list[str]) -> Typed:
    return text[0], base64.b64decode(text[1])


class StepwiseSaver(InMemorySaver):
    """An `InMemorySaver` whose threads live one step at a time, loaded from and dumped to JSON.

    One saver serves every task of a worker: each step opens a thread of its own (a fresh id),
    so steps of different tasks, and previews, never meet.
    """

    def open(self, saved: dict[str, Any] | None) -> str:
        """A new thread holding `saved` (from `dump`; None: an empty thread); its id."""
        thread = uuid.uuid4().hex
        for ns, entry in ((saved or {}).get("namespaces") or {}).items():
            self._load_namespace(thread, ns, entry)
        return thread

    def dump(self, thread: str) -> dict[str, Any] | None:
        """The thread's latest checkpoint of each namespace it must keep, as JSON; None if empty.

        The root namespace is always kept. A subgraph's namespace is kept while the root
        waits on an interrupt (the subgraph resumes from it) or when it carries no task id
        (a subgraph compiled with `checkpointer=True` keeps its history across calls).
        """
        spaces = self.storage.get(thread) or {}
        root = spaces.get("")
        if not root:
            return None
        waiting = self._waits_on_interrupt(thread, max(root))
        namespaces = {
            ns: self._dump_namespace(thread, ns, checkpoints)
            for ns, checkpoints in spaces.items()
            if checkpoints and (ns == "" or waiting or _NS_TASK not in ns)
        }
        return {"format": SAVED_FORMAT, "namespaces": namespaces}

    def close(self, thread: str) -> None:
        """Forget the thread: the task keeps what `dump` gave."""
        self.delete_thread(thread)

    def _waits_on_interrupt(self, thread: str, checkpoint_id: str) -> bool:
        writes = self.writes.get((thread, "", checkpoint_id)) or {}
        interrupt_idx = WRITES_IDX_MAP["__interrupt__"]
        return any(idx == interrupt_idx for _, idx in writes)

    def _dump_namespace(self, thread: str, ns: str, checkpoints: dict[str, Any]) -> dict[str, Any]:
        checkpoint_id = max(checkpoints)
        checkpoint, metadata, parent = checkpoints[checkpoint_id]
        versions = self.serde.loads_typed(checkpoint).get("channel_versions", {})
        blobs = {
            channel: [version, *_text(self.blobs[key])]
            for channel, version in versions.items()
            if (key := (thread, ns, channel, version)) in self.blobs
        }
        writes = [
            [task_id, idx, channel, *_text(value), path]
            for (task_id, idx), (_, channel, value, path) in (
                self.writes.get((thread, ns, checkpoint_id)) or {}
            ).items()
        ]
        return {
            "id": checkpoint_id,
            "parent": parent,
            "checkpoint": _text(checkpoint),
            "metadata": _text(metadata),
            "blobs": blobs,
            "writes": writes,
        }

    def _load_namespace(self, thread: str, ns: str, entry: dict[str, Any]) -> None:
        checkpoint_id = entry["id"]
        self.storage[thread][ns][checkpoint_id] = (
            _typed(entry["checkpoint"]),
            _typed(entry["metadata"]),
            entry.get("parent"),
        )
        for channel, (version, kind, data) in entry["blobs"].items():
            self.blobs[(thread, ns, channel, version)] = _typed([kind, data])
        for task_id, idx, channel, kind, data, path in entry["writes"]:
            self.writes[(thread, ns, checkpoint_id)][(task_id, idx)] = (
                task_id,
                channel,
                _typed([kind, data]),
                path,
            )
