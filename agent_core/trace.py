"""Task traces: one task's whole history as a JSON file, to share, archive and view again.

`export_trace` writes everything a store keeps of a task: the task (memory and worker state
included), every step (undone and failed ones too), their outputs, the queue and the undo
snapshots. `import_trace` reads such a file back into a store as a new task.

A trace is untrusted input: it may come from another person or have been edited by hand. So
an imported task is for viewing only. It gets fresh task and step ids (importing twice, or
importing a task that is still in the store, never overwrites anything), it keeps its
status, and it is marked `imported`: the runner refuses to run, undo or edit any step of it,
since running a queued tool call or reverting a recorded file write from a stranger's trace
would touch this machine.
Nor does a trace choose where the copy's files live: the spec's `workspace` is dropped on
import, so the task's folder is under this machine's workspaces root, never a path the trace
names.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from agent_core._nesting import MAX_NESTING, too_deep
from agent_core.errors import UserError
from agent_core.runtime.fork import new_task_change, renamed_copy
from agent_core.spec import AgentSpec
from agent_core.store.base import Store
from agent_core.types import TaskState, new_id, short_id, utcnow

__all__ = ["MAX_TRACE_BYTES", "TRACE_FORMAT", "TRACE_VERSION", "export_trace", "import_trace"]

TRACE_FORMAT = "stepwise.trace"
"""The `format` field every trace carries."""
TRACE_VERSION = 1
"""The trace layout this module writes and reads."""
_MB = 1024 * 1024
MAX_TRACE_BYTES = 50 * _MB
"""The largest trace `import_trace` accepts (50 MB)."""

_HOW_TO_GET_ONE = "export the task again (export_trace) and import that file"
_MAX_TRACE_NESTING = 150
"""Deepest nesting accepted in a trace: a step input's bound plus the document's own levels,
with room for tool results, and well under what a stored task can be read back with."""
_MAX_PROBLEMS_SHOWN = 3
_MAX_SHOWN_CHARS = 60


def export_trace(state: TaskState) -> str:
    """The task as a trace: a JSON document that `import_trace` reads back.

    The document is `{"format": "stepwise.trace", "version": 1, "exported_at": ...,
    "task": <the TaskState as JSON>}`. It is ASCII-only (other characters are JSON
    escapes), so any text a model produced survives every file system and encoding. It holds
    no API keys: a task's spec never contains one, and the host and process that ran a step
    (`claimed_by`) are left out.
    """
    task = state.model_dump(mode="json")
    for step in task["steps"].values():
        step["claimed_by"] = None
    document = {
        "format": TRACE_FORMAT,
        "version": TRACE_VERSION,
        "exported_at": utcnow().isoformat(),
        "task": task,
    }
    return json.dumps(document, indent=1)


def import_trace(text: str | bytes, store: Store, *, as_new: bool = True) -> str:
    """Store the task in a trace as a read-only task; return its task id.

    The task keeps its status and is marked `imported`, so nothing of it runs (see the module
    docstring for why), with every step, output, snapshot and message as exported. Steps always get
    fresh ids, so an import never touches another task's rows.

    Args:
        text: The trace, as `export_trace` wrote it (bytes are read as UTF-8).
        store: Where to put the task.
        as_new: Give the task a fresh id (the default, so importing twice gives two tasks).
            False keeps the trace's task id, to restore a task into a store that lacks it.

    Raises:
        UserError: The text is not a trace this version can read (too large, not JSON, wrong
            format or version, fields that do not validate, steps that refer to nothing), or
            `as_new=False` and the store already has a task with that id.
    """
    state = _read_state(_parse(text))
    task_id = new_id() if as_new else _free_task_id(state.task_id, store)
    imported, _ = renamed_copy(state, task_id)
    imported.task.imported = True
    if imported.task.spec is not None:
        # A trace never chooses a folder on this machine: the task's workspace is under the
        # configured root (STEPWISE_WORKSPACES), as for any task that names none.
        imported.task.spec = {k: v for k, v in imported.task.spec.items() if k != "workspace"}
    store.commit(new_task_change(imported))
    return task_id


# ------------------------------------------------------------------------- reading


def _parse(text: str | bytes) -> dict[str, Any]:
    """The trace document, checked for size, encoding, JSON, format and version."""
    if len(text) > MAX_TRACE_BYTES:
        raise UserError(
            f"the trace is {len(text) / _MB:.1f} MB; traces over {MAX_TRACE_BYTES // _MB} MB "
            "are refused. Check that the file is a Stepwise trace"
        )
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise UserError(
                f"the file is not UTF-8 text (bad byte at offset {exc.start}); a Stepwise "
                f"trace is a JSON file: {_HOW_TO_GET_ONE}"
            ) from None
    try:
        document = json.loads(text.removeprefix("\ufeff"), parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"the file is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            f"it may be cut short: {_HOW_TO_GET_ONE}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise UserError(f"the file is not a JSON trace Stepwise can read ({exc})") from None
    if too_deep(document, _MAX_TRACE_NESTING):
        # Stored, it would not load again: pydantic reads back about 200 levels, no more.
        raise UserError(
            f"the trace nests more than {_MAX_TRACE_NESTING} levels deep, deeper than any "
            f"task Stepwise stores (step inputs stop at {MAX_NESTING}): {_HOW_TO_GET_ONE}"
        )
    _check_header(document)
    return document


def _refuse_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; a store would refuse them later, less clearly.
    raise ValueError(f"{name} is not a JSON value")


def _check_header(document: Any) -> None:
    found = document.get("format") if isinstance(document, dict) else None
    if found != TRACE_FORMAT:
        raise UserError(
            f"this JSON is not a Stepwise trace (its format is {_shown(found)}, expected "
            f"{TRACE_FORMAT!r}): {_HOW_TO_GET_ONE}"
        )
    version = document.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > TRACE_VERSION:
        raise UserError(
            f"this trace has format version {version}, but this Stepwise reads version "
            f"{TRACE_VERSION}; upgrade Stepwise to import it"
        )
    if isinstance(version, bool) or version != TRACE_VERSION:  # true == 1 in Python
        raise UserError(
            f"this trace's version is {_shown(version)}, expected {TRACE_VERSION}: "
            f"{_HOW_TO_GET_ONE}"
        )
    if not isinstance(document.get("task"), dict):
        raise UserError(
            f"this trace holds no task (its 'task' field is missing): {_HOW_TO_GET_ONE}"
        )


def _read_state(document: dict[str, Any]) -> TaskState:
    """The trace's task, validated field by field and checked for dangling step ids."""
    try:
        state = TaskState.model_validate(document["task"])
    except ValidationError as exc:
        raise UserError(_describe(exc, at=("task",))) from None
    except RecursionError:
        raise UserError("the trace is nested too deeply to be a Stepwise trace") from None
    if state.task.spec is not None:
        # The app rebuilds an agent from the spec to show the task: refuse one it cannot.
        try:
            AgentSpec.model_validate(state.task.spec)
        except ValidationError as exc:
            raise UserError(_describe(exc, at=("task", "task", "spec"))) from None
    _check_references(state)
    return state


def _describe(exc: ValidationError, *, at: tuple[str, ...]) -> str:
    """The first few validation problems, each with its place in the file (no values)."""
    problems = []
    for error in exc.errors(include_url=False)[:_MAX_PROBLEMS_SHOWN]:
        where = ".".join(_clip(str(part)) for part in (*at, *error["loc"]))
        problems.append(f"{where}: {error['msg']}")
    more = exc.error_count() - len(problems)
    tail = f"; and {more} more" if more > 0 else ""
    return (
        f"the trace does not match the trace format ({'; '.join(problems)}{tail}); it may "
        f"have been edited by hand or made by another program: {_HOW_TO_GET_ONE}"
    )


def _check_references(state: TaskState) -> None:
    for key, step in state.steps.items():
        if key != step.step_id:
            raise _inconsistent(
                f"the step under {_shown(key)} says its id is {_shown(step.step_id)}"
            )
    lists = {
        "queue": state.queue,
        "completed steps": state.completed,
        "outputs": state.outputs,
        "undo snapshots": state.snapshots,
    }
    for what, ids in lists.items():
        for step_id in ids:
            if step_id not in state.steps:
                raise _inconsistent(f"its {what} name step {_shown(step_id)}, which it lacks")


def _inconsistent(detail: str) -> UserError:
    return UserError(f"the trace is inconsistent ({detail}): {_HOW_TO_GET_ONE}")


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_SHOWN_CHARS else text[: _MAX_SHOWN_CHARS - 1] + "…"


def _shown(value: Any) -> str:
    return _clip(repr(value))


_TASK_ID = re.compile(r"[0-9a-f]{32}")


def _free_task_id(task_id: str, store: Store) -> str:
    if store.task_version(task_id) is not None:
        raise UserError(
            f"the store already has task {short_id(task_id)}; import the trace as a new task "
            "(as_new=True) or delete that task first"
        )
    # Ids name folders (a task's workspace) and share a table with conversations: keep only
    # the ones Stepwise makes, 32 hex digits.
    if not _TASK_ID.fullmatch(task_id):
        raise UserError(
            f"the trace's task id {_shown(task_id)} is not one Stepwise makes (32 hex digits); "
            "import the trace as a new task (as_new=True)"
        )
    return task_id
