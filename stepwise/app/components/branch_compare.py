"""Two runs of one task side by side, step by step, with what differs flagged.

Undo keeps history: the undone steps stay (status `undone`, outputs kept) and the step that
is run again starts a new branch (`TaskStep.branch_id`), whose later steps inherit it. So
each branch is one run of the task as it stood at some point: the steps its parent branch
had before it forked, then its own. A step's `number` is its position in that run (the
runner numbers a step `len(completed) + 1`), so the two runs line up by number.

`task_branches`, `default_pair` and `pair_steps` are plain functions over a `TaskState`
(no Streamlit); `render_branch_compare` draws their result. Step text is shown with
`st.code` only, never as markdown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from itertools import zip_longest
from typing import Any

import streamlit as st

from agent_core.types import StepStatus, TaskState, TaskStep
from stepwise.app.components.run_compare import (
    SentMessages,
    StateSource,
    default_runs,
    render_run_summary,
)

__all__ = [
    "COMPARED_FIELDS",
    "FIELD_LABELS",
    "Branch",
    "StepPair",
    "StepView",
    "branch_label",
    "default_pair",
    "pair_steps",
    "render_branch_compare",
    "step_view",
    "task_branches",
]

FIELD_LABELS = {
    "kind": "Kind",
    "proposed": "Input as proposed",
    "input": "Input as run",
    "output": "Output",
    "tool_calls": "Tool calls",
    "tokens": "Tokens",
    "cost": "Cost",
    "latency": "Latency",
}
"""Every field shown for a step, in order, with its name on screen."""
COMPARED_FIELDS = ("kind", "proposed", "input", "output", "tool_calls", "tokens", "cost")
"""Fields whose difference is flagged. Latency is shown but never flagged: it differs on
every run."""
ROWS_SHOWN = 40
"""Steps drawn per comparison (the first ones after the fork); the rest are counted."""
_RAN = (StepStatus.COMPLETED, StepStatus.UNDONE, StepStatus.SKIPPED)


@dataclass(frozen=True)
class Branch:
    """One run of the task: every step it ran, in order, from the task's first step."""

    branch_id: str
    steps: tuple[str, ...]
    """Step ids, first step first (shared steps included)."""
    order: int
    """1 for the task's first run, then in the order the branches were made."""
    current: bool
    """Whether this is the run the task is on now (its last completed step is on it)."""
    forked_at: int
    """The number of the first step this run made itself (1 for the first run)."""


@dataclass(frozen=True)
class StepView:
    """One step as the comparison shows it: every field as short display text."""

    step_id: str
    number: int | None
    status: str
    kind: str
    proposed: str
    input: str
    output: str
    tool_calls: str
    tokens: int
    cost: float | None
    latency_ms: float
    estimated: bool = False
    """The tokens are an estimate (the server sent no counts)."""

    def text(self, name: str) -> str:
        """The field `name` as shown on screen."""
        if name == "tokens":
            return f"{'≈' if self.estimated else ''}{self.tokens:,}"
        if name == "cost":
            return "cost unknown" if self.cost is None else f"${self.cost:.4f}"
        if name == "latency":
            return f"{self.latency_ms:,.0f} ms"
        return str(getattr(self, name))


@dataclass(frozen=True)
class StepPair:
    """Step `number` of each run (None where that run has no such step), and what differs."""

    number: int
    old: StepView | None
    new: StepView | None
    changed: tuple[str, ...] = field(default=())
    """The `COMPARED_FIELDS` whose text differs (all of them when one side is missing)."""

    @property
    def differs(self) -> bool:
        """Whether anything compared differs."""
        return bool(self.changed)


def _text(value: Any, *, empty: str = "(none)") -> str:
    if value is None:
        return empty
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def step_view(state: TaskState, step_id: str) -> StepView:
    """The step's input as proposed and as run, output, tool calls, tokens, cost, latency."""
    step = state.steps[step_id]
    output = state.outputs.get(step_id)
    proposed = step.proposed_input if step.edited else step.input
    result = "(not run)"
    calls = "(none)"
    tokens, cost, latency, estimated = 0, None, 0.0, False
    if output is not None:
        rejection = step.rejection
        if output.error:
            result = f"Error: {output.error}"
        elif rejection:
            result = f"Rejected: {rejection}"
        else:
            result = _text(output.output)
        lines = [
            f"{call.tool_name}({json.dumps(call.args, ensure_ascii=False, default=str)})"
            f"{' (failed)' if call.is_error else ''} → {call.content}"
            for call in output.tool_calls
        ]
        calls = "\n".join(lines) or "(none)"
        tokens, cost, latency = output.usage.total_tokens, output.usage.cost_usd, output.latency_ms
        estimated = output.usage.estimated
    return StepView(
        step_id=step_id,
        number=step.number,
        status=step.status.value,
        kind=step.kind.value,
        proposed=_text(proposed, empty="(no input)"),
        input=_text(step.input, empty="(no input)"),
        output=result,
        tool_calls=calls,
        tokens=tokens,
        estimated=estimated,
        cost=cost,
        latency_ms=latency,
    )


def _ran(state: TaskState, step: TaskStep) -> bool:
    return step.number is not None and step.status in _RAN and step.step_id in state.outputs


def _own_steps(state: TaskState) -> dict[str, list[TaskStep]]:
    """Each branch's own steps that ran, by number; a number taken twice keeps the later.

    A number is taken twice on one branch only when an undone feedback step (which starts no
    branch of its own) was followed by another step there: the one that ran last stays.
    """
    by_branch: dict[str, dict[int, TaskStep]] = {}
    for step in state.steps.values():
        if not _ran(state, step):
            continue
        steps = by_branch.setdefault(step.branch_id, {})
        number = step.number or 0
        if number not in steps or _ran_at(step) >= _ran_at(steps[number]):
            steps[number] = step
    return {b: [steps[n] for n in sorted(steps)] for b, steps in by_branch.items()}


def _ran_at(step: TaskStep) -> datetime:
    return step.finished_at or step.started_at or step.created_at


def task_branches(state: TaskState) -> list[Branch]:
    """Every run of the task that ran at least one step of its own, oldest first."""
    own = _own_steps(state)
    current = state.steps[state.completed[-1]].branch_id if state.completed else None
    lines: dict[str, tuple[str, ...]] = {}

    def line(branch_id: str, seen: frozenset[str]) -> tuple[str, ...]:
        if branch_id not in lines:
            first = own[branch_id][0]
            parents = [state.steps[p] for p in first.prev_step_ids if p in state.steps]
            numbered = [p for p in parents if p.number is not None and p.branch_id in own]
            prefix: tuple[str, ...] = ()
            if numbered and branch_id not in seen:
                parent = max(numbered, key=lambda p: p.number or 0)
                if parent.branch_id != branch_id:
                    prefix = line(parent.branch_id, seen | {branch_id})
            prefix = prefix[: (first.number or 1) - 1]
            lines[branch_id] = prefix + tuple(s.step_id for s in own[branch_id])
        return lines[branch_id]

    branches = []
    for order, branch_id in enumerate(own, start=1):
        steps = tuple(state.completed) if branch_id == current else line(branch_id, frozenset())
        branches.append(
            Branch(
                branch_id=branch_id,
                steps=steps,
                order=order,
                current=branch_id == current,
                forked_at=own[branch_id][0].number or 1,
            )
        )
    return branches


def default_pair(branches: list[Branch]) -> tuple[Branch, Branch] | None:
    """The run compared by default: the newest other run, then the current one (or newest)."""
    if len(branches) < 2:
        return None
    new = next((b for b in branches if b.current), branches[-1])
    old = [b for b in branches if b is not new][-1]
    return old, new


def pair_steps(state: TaskState, old: Branch, new: Branch) -> list[StepPair]:
    """Both runs step by step from where they part (the steps they share are left out)."""
    shared = 0
    for a, b in zip(old.steps, new.steps, strict=False):
        if a != b:
            break
        shared += 1
    pairs = []
    rest = zip_longest(old.steps[shared:], new.steps[shared:])
    for offset, (old_id, new_id) in enumerate(rest, start=shared + 1):
        left = step_view(state, old_id) if old_id else None
        right = step_view(state, new_id) if new_id else None
        if left is None or right is None:
            changed = COMPARED_FIELDS
        else:
            changed = tuple(f for f in COMPARED_FIELDS if left.text(f) != right.text(f))
        pairs.append(StepPair(number=offset, old=left, new=right, changed=changed))
    return pairs


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def branch_label(branch: Branch, state: TaskState) -> str:
    """The run's name on screen: its order, where it starts, its length, and if it is now."""
    steps = _plural(len(branch.steps), "step")
    undone = sum(1 for s in branch.steps if state.steps[s].status is StepStatus.UNDONE)
    if branch.current:
        where = "current"
    elif undone:
        where = f"{_plural(undone, 'step')} undone"
    else:
        where = "shared with the current run"
    start = "first run" if branch.order == 1 else f"re-run from step {branch.forked_at}"
    return f"Run {branch.order} ({start}): {steps}, {where}"


# ---------------------------------------------------------------------------------- drawing


_USAGE = ("tokens", "cost", "latency")


def _label(text: str, *, changed: bool) -> None:
    st.caption(f":orange[**{text} · differs**]" if changed else text)


def _usage(view: StepView) -> str:
    return " · ".join([f"{view.text('tokens')} tokens", view.text("cost"), view.text("latency")])


def _shown_fields(pair: StepPair) -> list[str]:
    """The text fields worth a row.

    Kind only when it differs (the row's title names it), the proposed input only when a
    side ran an edited one, tool calls only when a side made any.
    """
    views = [v for v in (pair.old, pair.new) if v is not None]
    shown = ["kind"] if "kind" in pair.changed else []
    if any(v.proposed != v.input for v in views) or "proposed" in pair.changed:
        shown.append("proposed")
    shown += ["input", "output"]
    if any(v.tool_calls != "(none)" for v in views):
        shown.append("tool_calls")
    return shown


def _cell(view: StepView | None, label: str, text: str, *, changed: bool, code: bool) -> None:
    _label(label, changed=changed)
    if view is None:
        st.caption("(no such step in this run)")
    elif code:
        st.code(text, language=None, wrap_lines=True)
    else:
        st.text(text)


def _render_fields(pair: StepPair) -> None:
    """One row per field, the two runs side by side, so the same field lines up."""
    fields = _shown_fields(pair)
    for name in fields:
        label = "Input" if name == "input" and "proposed" not in fields else FIELD_LABELS[name]
        for column, view in zip(st.columns(2), (pair.old, pair.new), strict=True):
            with column:
                text = view.text(name) if view is not None else ""
                _cell(view, label, text, changed=name in pair.changed, code=True)
    changed = [FIELD_LABELS[f].lower() for f in _USAGE if f in pair.changed]
    label = f"Usage ({', '.join(changed)})" if changed else "Usage"
    for column, view in zip(st.columns(2), (pair.old, pair.new), strict=True):
        with column:
            text = _usage(view) if view is not None else ""
            _cell(view, label, text, changed=bool(changed), code=False)


def _row_title(pair: StepPair) -> str:
    kinds = {v.kind for v in (pair.old, pair.new) if v is not None}
    title = f"Step {pair.number} · {' / '.join(sorted(kinds))}"
    if pair.old is None or pair.new is None:
        return f"{title} · only in one run"
    if not pair.changed:
        return f"{title} · same"
    names = ", ".join(FIELD_LABELS[f].lower() for f in pair.changed)
    return f"{title} · differs: {names}"


def _render_pair(pair: StepPair) -> None:
    with st.expander(_row_title(pair), expanded=pair.differs):
        _render_fields(pair)


def _summary(pairs: list[StepPair]) -> str:
    if not pairs:
        return "The two runs ran the same steps."
    differing = sum(1 for p in pairs if p.differs)
    verb = "differs" if differing == 1 else "differ"
    parts = []
    shared = pairs[0].number - 1
    if shared:
        parts.append(f"Both runs share {_plural(shared, 'step')} before step {shared + 1}.")
    after = " after that" if shared else ""
    parts.append(f"{differing} of {_plural(len(pairs), 'step')}{after} {verb}.")
    parts.append("Latency is shown, not compared.")
    return " ".join(parts)


def render_branch_compare(
    state: TaskState, *, key: str = "compare", sent: SentMessages | None = None
) -> None:
    """Pick two runs of the task or more: their totals, first difference, and steps side by side.

    `sent` reads what a step sent its model (the runner's `get_messages_sent`), so that a
    difference in the model request is found; without it the request is not compared.
    """
    branches = task_branches(state)
    if len(branches) < 2:
        st.caption("Nothing to compare yet: undo a step, then run it again.")
        return
    labels = {b.branch_id: branch_label(b, state) for b in branches}
    by_id = {b.branch_id: b for b in branches}
    picked = st.multiselect(
        "Runs",
        [b.branch_id for b in branches],
        default=[b.branch_id for b in default_runs(branches)],
        format_func=labels.__getitem__,
        key=f"{key}-runs",
        help="Two runs or more. Each is compared with the first one picked; the steps side "
        "by side are the first two picked.",
    )
    if len(picked) < 2:
        st.caption("Pick two runs or more.")
        return
    chosen = [by_id[branch_id] for branch_id in picked]
    render_run_summary(StateSource(state, sent), chosen, labels)
    pairs = pair_steps(state, chosen[0], chosen[1])
    st.caption(_summary(pairs))
    for step_pair in pairs[:ROWS_SHOWN]:
        _render_pair(step_pair)
    if len(pairs) > ROWS_SHOWN:
        st.caption(f"Showing the first {ROWS_SHOWN} of {len(pairs)} steps.")
