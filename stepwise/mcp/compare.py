"""Two runs side by side: where they first part, as text.

A run is a list of completed steps in order: a task's current run, a fork's, or the run a task
had before its last undo (the undone steps stay in history on their branch, `TaskStep.branch_id`).
Steps line up by position, as a step's `number` is its place in its run; a fork repeats its
original's steps up to the fork point under new ids, so steps are compared by what they did
(kind, input, output, tool calls, error), never by id.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass

from agent_core.types import StepStatus, TaskState
from stepwise.mcp.views import clip, value_text

__all__ = ["Run", "compare_runs", "previous_run", "run_of"]

_FIELDS = ("kind", "input", "output", "tool_calls", "error")
_DIFF_LINES = 40


@dataclass(frozen=True)
class Run:
    """One run to compare: its name for people, the state holding it, its step ids in order."""

    label: str
    state: TaskState
    steps: tuple[str, ...]


def run_of(state: TaskState, label: str) -> Run:
    """The run the task is on now: its completed steps."""
    return Run(label=label, state=state, steps=tuple(state.completed))


def previous_run(state: TaskState, label: str) -> Run | None:
    """The run the task had before its latest undo; None if no step was ever undone."""
    undone = [s for s in state.steps.values() if s.status is StepStatus.UNDONE and s.number]
    if not undone:
        return None
    latest = max(undone, key=lambda s: s.finished_at or s.created_at)
    branch = sorted(
        (s for s in undone if s.branch_id == latest.branch_id), key=lambda s: s.number or 0
    )
    first = branch[0].number or 1
    shared = tuple(state.completed[: first - 1])
    return Run(label=label, state=state, steps=shared + tuple(s.step_id for s in branch))


def _facts(run: Run, step_id: str) -> dict[str, str]:
    step = run.state.steps[step_id]
    output = run.state.outputs.get(step_id)
    calls = [
        f"{c.tool_name}({json.dumps(c.args, sort_keys=True, default=str)})"
        f"{' rejected' if c.rejected else ''} -> {c.content}"
        for c in (output.tool_calls if output is not None else [])
    ]
    return {
        "kind": step.kind.value,
        "input": value_text(step.input),
        "output": value_text(output.output) if output is not None else "",
        "tool_calls": "\n".join(calls),
        "error": step.error or (output.error if output is not None else None) or "",
    }


def compare_runs(left: Run, right: Run) -> str:
    """Where `left` and `right` first differ: the step, each field that differs, and a diff."""
    for index, (a, b) in enumerate(zip(left.steps, right.steps, strict=False)):
        old, new = _facts(left, a), _facts(right, b)
        changed = [name for name in _FIELDS if old[name] != new[name]]
        if changed:
            return _divergence(left, right, index, changed, old, new)
    agreed = min(len(left.steps), len(right.steps))
    if len(left.steps) == len(right.steps):
        return f"no divergence: {left.label} and {right.label} ran the same {agreed} step(s)"
    longer = left if len(left.steps) > len(right.steps) else right
    shorter = right if longer is left else left
    extra = _facts(longer, longer.steps[agreed])
    return (
        f"same first {agreed} step(s); {shorter.label} stops there while {longer.label} goes on"
        f" with step {agreed + 1} ({extra['kind']}): {clip(extra['input'], 200)}"
    )


def _divergence(left: Run, right: Run, index: int, changed: list[str], old: dict, new: dict) -> str:
    lines = [
        f"first divergence at step {index + 1} (steps 1-{index} agree)"
        if index
        else "first divergence at step 1",
        f"differs in: {', '.join(changed)}",
        f"  {left.label}: step_id={left.steps[index]}",
        f"  {right.label}: step_id={right.steps[index]}",
    ]
    for name in changed:
        lines.append(f"--- {name}")
        diff = difflib.unified_diff(
            old[name].splitlines() or [""],
            new[name].splitlines() or [""],
            fromfile=left.label,
            tofile=right.label,
            lineterm="",
        )
        shown = list(diff)
        lines.extend(clip(line, 300) for line in shown[:_DIFF_LINES])
        if len(shown) > _DIFF_LINES:
            lines.append(f"(+{len(shown) - _DIFF_LINES} diff lines)")
    return "\n".join(lines)
