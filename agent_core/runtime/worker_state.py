"""Worker state (`task.extra_state`) as JSON: checked when a step commits, merged when parallel."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from agent_core.errors import WorkerStateError
from agent_core.types import short_id

__all__ = ["dump_state", "merge_state"]


def _as_json(value: object) -> Any:
    # LlamaIndex workers keep pydantic objects in their state (a `ToolOutput` in "sources"):
    # stored as their JSON, they come back as dicts on the next step.
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _serialisable(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False, default=_as_json)
    except (TypeError, ValueError):
        return False
    return True


def dump_state(extra_state: dict[str, Any], *, task_id: str, step_id: str) -> str:
    """`extra_state` as JSON, or `WorkerStateError` naming the keys that cannot be stored."""
    try:
        return json.dumps(extra_state, separators=(",", ":"), allow_nan=False, default=_as_json)
    except (TypeError, ValueError) as exc:
        bad = [key for key, value in extra_state.items() if not _serialisable(value)]
        raise WorkerStateError(
            f"the worker left state that cannot be stored as JSON in task {short_id(task_id)} "
            f"(keys {bad or list(extra_state)}: {exc}); keep only str, numbers, bools, None, "
            "lists and dicts in task.extra_state",
            task_id=task_id,
            step_id=step_id,
        ) from exc


def merge_state(base_json: str, current_json: str, written: dict[str, Any]) -> dict[str, Any]:
    """One step's worker state merged into the task's, key by key.

    A step starts from `base_json`; if another step committed meanwhile (`current_json`
    differs), only the keys this step changed or removed are applied on top of it.
    """
    if current_json == base_json:
        return written
    base, merged = json.loads(base_json), json.loads(current_json)
    for key, value in written.items():
        if base.get(key, object()) != value:
            merged[key] = value
    for key in base.keys() - written.keys():
        merged.pop(key, None)
    return merged
