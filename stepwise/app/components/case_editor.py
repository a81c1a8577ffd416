"""Save as test: a task as a case file, with an editor for what a replay must do.

The form starts from `default_expectations` (the task's final answer, its tool calls in order)
and offers the others a case can hold. It writes `stepwise_cases/NAME.case.json` in the folder
the app was started from, where `stepwise test` finds it; `save_case` keeps keys out of it.
The task's answer and tool calls are the model's text: shown in boxes and `st.code`, never as
markdown.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import streamlit as st
from pydantic import ValidationError

from agent_core.errors import AgentCoreError
from agent_core.recordings import Case, Expectations, case_from_task, save_case
from agent_core.recordings.cases import case_path
from stepwise.app.components.actions import show_message
from stepwise.app.components.case_files import cases_dir

__all__ = ["render_save_as_test"]

_CALLS = ("in order, with their arguments", "in order, names only", "not checked")


def render_save_as_test(source: Any, task_id: str, *, key: str = "save-test") -> None:
    """The Save as test form for task `task_id` of `source` (a runner or a store).

    Args:
        source: Where the task is read from (`case_from_task`).
        task_id: The task.
        key: Unique on the page: the widgets' keys start with it.
    """
    try:
        case = case_from_task(source, task_id)
    except AgentCoreError as exc:
        show_message("error", exc, headline="This task cannot be saved as a test.")
        return
    # The last file saved here, by task: another task's popover must not show it.
    saved_for, saved = st.session_state.get(f"{key}-saved") or ("", None)
    saved = saved if saved_for == task_id else None
    with st.form(f"{key}-form", border=False):
        name = st.text_input("Test name", value=case.name, key=f"{key}-name")
        fields = _expectation_fields(case, key)
        replace = st.checkbox("Replace a test of the same name", key=f"{key}-replace")
        submitted = st.form_submit_button("Save test", type="primary")
    if submitted:
        saved = _save(case, name, fields, replace=replace)
        st.session_state[f"{key}-saved"] = (task_id, saved)
    if saved:
        st.success("Saved. `stepwise test` and the Tests page run it:")
        st.code(saved, language=None)


def _expectation_fields(case: Case, key: str) -> dict[str, Any]:
    """The editor's widgets, filled from the task's defaults; their values by name."""
    defaults = case.expectations
    st.caption("Expectations: what the replay on your current code must do.")
    fields: dict[str, Any] = {}
    fields["exact"] = st.checkbox(
        "The final answer is exactly", value=defaults.answer is not None, key=f"{key}-exact"
    )
    fields["answer"] = st.text_area(
        "Final answer", value=defaults.answer or "", key=f"{key}-answer", height=80
    )
    calls = defaults.tool_calls or []
    fields["calls"] = st.radio(
        f"Tool calls ({len(calls)} recorded)",
        _CALLS,
        index=0 if calls else 2,
        key=f"{key}-calls",
        horizontal=True,
    )
    if calls:
        st.code(json.dumps([c.model_dump() for c in calls], indent=1), language="json")
    fields["contains"] = st.text_area(
        "The answer contains (one text a line)", key=f"{key}-contains", height=68
    )
    fields["matches"] = st.text_input(
        "The answer matches (a regular expression)", key=f"{key}-matches"
    )
    steps_col, cost_col = st.columns(2)
    fields["max_steps"] = steps_col.number_input(
        "At most this many steps (0: any)", min_value=0, value=0, step=1, key=f"{key}-steps"
    )
    fields["max_cost"] = cost_col.number_input(
        "At most this many dollars (0: any)",
        min_value=0.0,
        value=0.0,
        format="%.4f",
        key=f"{key}-cost",
    )
    fields["no_failed"] = st.checkbox("No step failed", value=True, key=f"{key}-no-failed")
    fields["check"] = st.text_input(
        "Python check (module:function, given the outcome; True passes)",
        key=f"{key}-check",
        placeholder="checks.py:answer_is_polite",
    )
    fields["names"] = [c.tool for c in calls]
    return fields


def expectations_of(fields: dict[str, Any], case: Case) -> Expectations:
    """The `Expectations` the editor's values say.

    Raises:
        ValueError: A field a case cannot hold (a regular expression that does not compile,
            a check that is not `module:function`); the message names the field.
    """
    matches = fields["matches"].strip() or None
    if matches is not None:
        try:
            re.compile(matches)
        except re.error as exc:
            raise ValueError(f"The answer matches: not a regular expression ({exc}).") from exc
    check = fields["check"].strip() or None
    if check is not None and not re.fullmatch(r"[^:\s]+:[A-Za-z_]\w*", check):
        raise ValueError("Python check: write it as module:function (or file.py:function).")
    mode = fields["calls"]
    return Expectations(
        answer=fields["answer"] if fields["exact"] else None,
        answer_contains=[line for line in fields["contains"].splitlines() if line.strip()],
        answer_matches=matches,
        tool_calls=case.expectations.tool_calls if mode == _CALLS[0] else None,
        tool_names=fields["names"] if mode == _CALLS[1] else None,
        max_steps=int(fields["max_steps"]) or None,
        max_cost_usd=float(fields["max_cost"]) or None,
        no_failed_step=bool(fields["no_failed"]),
        check=check,
    )


def _save(case: Case, name: str, fields: dict[str, Any], *, replace: bool) -> str | None:
    """Write the case; its path, or None after saying why it was not written."""
    if not name.strip():
        st.warning("Give the test a name.")
        return None
    try:
        expectations = expectations_of(fields, case)
    except (ValueError, ValidationError) as exc:  # pydantic's ValidationError is a ValueError
        show_message("warning", str(exc), headline="Not saved:")
        return None
    path = case_path(name.strip(), cases_dir())
    if path.exists() and not replace:
        show_message(
            "warning",
            str(path),
            headline="A test of that name exists; tick Replace, or choose another name:",
        )
        return None
    named = case.model_copy(update={"name": name.strip(), "expectations": expectations})
    try:
        written = save_case(named, cases_dir())
    except OSError as exc:
        show_message("error", str(exc), headline="The case file could not be written:")
        return None
    return str(Path(written).resolve())
