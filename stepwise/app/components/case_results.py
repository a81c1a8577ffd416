"""A replay's result on a page: passed, or the first divergence with its diff, and the task.

Everything here may quote the user's agent or its model (a divergence's message, a diff of two
requests, a tool's result), so it is shown through Streamlit's text elements: `st.code` for
the diff, `messages.plain` inside the coloured boxes, a dataframe for the tables.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from agent_core.errors import AgentCoreError
from agent_core.recordings import Case, CaseStep, Divergence
from agent_core.types import TaskStepOutput
from stepwise.app.components import navigation, runtime, state
from stepwise.app.components.actions import show_message
from stepwise.app.components.case_files import ReplaySummary
from stepwise.app.components.messages import describe_data, plural

__all__ = ["render_result", "verdict_text"]

_SUMMARY_CHARS = 80
_MARK = "◀ first divergence"


def verdict_text(summary: ReplaySummary | None) -> str:
    """One word or line for a list: "not run yet", "passed", "failed at step 3 (request)"."""
    if summary is None:
        return "not run yet"
    if summary.error is not None:
        return f"could not run ({summary.error.get('code') or 'error'})"
    if summary.passed:
        return f"passed ({plural(summary.steps, 'step')})"
    if summary.divergence is not None:
        return f"failed at step {summary.divergence.step} ({summary.divergence.kind})"
    return f"failed: {plural(len(summary.failed_expectations), 'expectation')} did not hold"


def render_result(summary: ReplaySummary, *, key: str, case: Case | None = None) -> None:
    """Draw `summary`: why it failed (or that it passed), and a way to its replayed task.

    Args:
        summary: The replay's result.
        key: Unique on the page: the widgets' keys start with it.
        case: The case that was replayed, to show its recording beside the replay.
    """
    if summary.error is not None:
        show_message("error", describe_data(summary.error), headline="The case could not run.")
        return
    if summary.passed:
        st.success(f"Passed: {plural(summary.steps, 'step')} replayed, every expectation held.")
    elif summary.divergence is not None:
        _divergence(summary.divergence)
    for failed in summary.failed_expectations:
        show_message("error", failed.detail, headline=f"Expected: {failed.name}")
    if summary.expectations:
        _expectations(summary)
    if case is not None and summary.task_id and not summary.passed:
        _side_by_side(case, summary, key=key)
    if summary.task_id:
        if st.button(
            "Open the replayed task in the Stepper",
            key=f"{key}-open",
            help="Its steps up to the divergence, to inspect or to run on from there live.",
        ):
            state.set_current_task_id(summary.task_id)
            navigation.switch_to("stepper")


def _divergence(divergence: Divergence) -> None:
    headline = (
        f"Diverged at step {divergence.step} ({divergence.step_kind} step): "
        f"{divergence.kind.replace('_', ' ')}"
    )
    show_message("error", divergence.message, headline=headline)
    if divergence.diff:
        st.caption("Recorded (-) against replayed (+):")
        st.code(divergence.diff, language="diff")


def _expectations(summary: ReplaySummary) -> None:
    rows = [
        {"Expectation": r.name, "Held": "yes" if r.passed else "no", "Found": r.detail}
        for r in summary.expectations
    ]
    st.dataframe(rows, hide_index=True, width="stretch")


def _side_by_side(case: Case, summary: ReplaySummary, *, key: str) -> None:
    """The recording's steps beside the replay's, the first divergence marked."""
    try:
        replayed = runtime.reader().get_task_state(summary.task_id).completed_steps
    except AgentCoreError:  # Deleted on the Tasks page since: the recording alone.
        replayed = []
    where = summary.divergence.step if summary.divergence is not None else None
    with st.expander("The recording beside the replay", expanded=where is not None):
        rows = [_row(recorded, replayed, where) for recorded in case.steps]
        st.dataframe(rows, hide_index=True, width="stretch", key=f"{key}-steps")


def _row(recorded: CaseStep, replayed: list[TaskStepOutput], where: int | None) -> dict[str, Any]:
    index = recorded.number - 1
    now = replayed[index] if 0 <= index < len(replayed) else None
    mark = _MARK if recorded.number == where else ""
    return {
        "Step": recorded.number,
        "Kind": recorded.kind,
        "Recorded": _recorded_text(recorded),
        "Replayed": _replayed_text(now, missing="(not replayed)" if where is not None else ""),
        "": mark,
    }


def _recorded_text(step: CaseStep) -> str:
    calls = [f"{c.tool}({_args(c.args)}) → {c.result}" for c in step.tool_calls]
    return _short("; ".join(calls) if calls else _text(step.output))


def _replayed_text(output: TaskStepOutput | None, *, missing: str) -> str:
    if output is None:
        return missing
    calls = [f"{c.tool_name}({_args(c.args)}) → {c.content}" for c in output.tool_calls]
    return _short("; ".join(calls) if calls else _text(output.output))


def _args(args: dict[str, Any]) -> str:
    return ", ".join(f"{name}={json.dumps(value)}" for name, value in args.items())


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _SUMMARY_CHARS else line[: _SUMMARY_CHARS - 1] + "…"
