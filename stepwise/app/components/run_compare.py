"""Compare branches, the summary: what each run used, and where and how they first differ.

`agent_core.recordings.compare` lines runs up on their shared prefix and names the first
difference (the kind, input, model request, tool calls, reply or tool result) with a diff.
This draws it for the runs picked in Compare branches: a row of totals per run (steps, tokens,
cost, time), then, against the first run picked, each other run's first difference. The
difference quotes the model and the tools: its sentence is shown with `st.text`, its diff with
`st.code`, never as markdown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import streamlit as st

from agent_core.errors import AgentCoreError
from agent_core.llms.base import ChatMessage
from agent_core.recordings.compare import Comparison, FirstDifference, RunRef, compare
from agent_core.types import TaskState
from stepwise.app.components.actions import show_message
from stepwise.app.components.messages import plural

__all__ = [
    "WHAT_DIFFERS",
    "SentMessages",
    "StateSource",
    "default_runs",
    "render_run_summary",
    "run_ref",
]

WHAT_DIFFERS = {
    "missing": "One run ends before the other",
    "kind": "The kind of step",
    "input": "The step's input",
    "request": "The model request",
    "tool_args": "The tool calls",
    "reply": "The reply",
    "tool_result": "A tool's result",
}
"""Each kind of first difference, as the page names it."""

SentMessages = Callable[[str, str], list[ChatMessage]]


class Branch(Protocol):
    """A run of the task, as `branch_compare.Branch` has it.

    That module draws this summary, so it is not imported here (a cycle).
    """

    @property
    def branch_id(self) -> str: ...

    @property
    def steps(self) -> tuple[str, ...]: ...

    @property
    def current(self) -> bool: ...


B = TypeVar("B", bound=Branch)


@dataclass(frozen=True)
class StateSource:
    """The task as the page drew it, for `compare`: the runs picked are the runs it shows.

    The runner's own snapshot could be newer (another tab ran a step) and lack a branch the
    page offered; the messages each step sent are read from the runner all the same.
    """

    state: TaskState
    sent: SentMessages | None = None

    def snapshot_task_state(self, task_id: str) -> TaskState:
        """The task's state as drawn (one task: `task_id` is the drawn task's)."""
        del task_id
        return self.state

    def get_messages_sent(self, task_id: str, step_id: str) -> list[ChatMessage]:
        """What the step sent its model ([] when no runner was given)."""
        return self.sent(task_id, step_id) if self.sent is not None else []


def run_ref(task_id: str, branch: Branch) -> RunRef:
    """The run as `compare` names it: the current line, or a branch by id."""
    return RunRef(task_id, None if branch.current else branch.branch_id)


def default_runs(branches: Sequence[B]) -> list[B]:
    """The run the current one diverged from, then the current one (or the newest).

    The run it diverged from shares the most steps with it; of several, the newest (the one
    that was current when its steps were undone).
    """
    if len(branches) < 2:
        return list(branches)
    now = next((b for b in branches if b.current), branches[-1])
    others = [b for b in branches if b is not now]
    parent = max(reversed(others), key=lambda b: _shared(b.steps, now.steps))
    return [parent, now]


def _shared(a: Sequence[str], b: Sequence[str]) -> int:
    count = 0
    for left, right in zip(a, b, strict=False):
        if left != right:
            break
        count += 1
    return count


def _named(text: str, comparison: Comparison, labels: Sequence[str]) -> str:
    """`text` with the runtime's run names ("task 1a2b · branch …") put as the page names them."""
    for run, label in zip(comparison.runs, labels, strict=True):
        text = text.replace(run.label, label)
    return text


def _totals(comparison: Comparison, labels: Sequence[str]) -> None:
    rows = [
        {
            "Run": label,
            "Steps": len(run.steps),
            "Tokens": run.tokens,
            "Cost": "unknown" if run.cost_usd is None else f"${run.cost_usd:.4f}",
            "Time (ms)": round(run.latency_ms),
        }
        for run, label in zip(comparison.runs, labels, strict=True)
    ]
    st.dataframe(rows, hide_index=True, width="stretch")


def _difference(found: FirstDifference | None, comparison: Comparison, labels: list[str]) -> None:
    if found is None:
        st.caption("No difference: the two runs ran the same steps.")
        return
    st.caption(f"First difference, at step {found.number}: {WHAT_DIFFERS[found.kind].lower()}")
    st.text(_named(found.message, comparison, labels))
    if found.diff:
        st.code(_named(found.diff, comparison, labels), language="diff", wrap_lines=True)


def render_run_summary(
    source: StateSource, chosen: Sequence[Branch], labels: dict[str, str]
) -> None:
    """Totals per run, then each run's first difference from the first one picked."""
    task_id = source.state.task_id
    names = [labels[b.branch_id] for b in chosen]
    try:
        everything = compare(source, [run_ref(task_id, b) for b in chosen])
        _totals(everything, names)
        shared = plural(everything.shared, "step")
        st.caption(f"The {len(chosen)} runs share {shared} at the start.")
        for branch, name in zip(chosen[1:], names[1:], strict=True):
            pair = compare(source, [run_ref(task_id, chosen[0]), run_ref(task_id, branch)])
            st.text(f"{names[0]}\n  against {name}")
            _difference(pair.first_difference, pair, [names[0], name])
    except AgentCoreError as error:  # A branch with no step left, say: the rest still shows.
        show_message("warning", error, headline="These runs could not be compared:")
