"""Runs side by side: two or more branches or tasks, aligned step by step, the first difference.

A run is a task's current line of steps, or one of its branches (undo keeps history: the
step run again starts a new branch, `TaskStep.branch_id`), or another task (a fork, a
re-run). Runs line up by step number; the steps they share at the start (the same step, or
in two tasks the same kind, input, output and tool calls) are their shared prefix. The first
step after it is the first divergence, and `compare` says what differs there, in the order a
step happens: the kind, the input, the model request (a diff of the messages, as a replay's),
the tool calls and their arguments, the reply, the tool results.

```python
from agent_core.recordings.compare import RunRef, compare

result = compare(runner, [RunRef(task_id), RunRef(fork_id)])
print(result.report())
```
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_core.errors import TaskNotFoundError, UserError
from agent_core.llms.base import ChatMessage
from agent_core.recordings.cases import ModelRequest
from agent_core.recordings.requests import Normaliser, render_request
from agent_core.types import StepStatus, TaskState, TaskStep, short_id

__all__ = [
    "ComparedStep",
    "Comparison",
    "DifferenceKind",
    "FirstDifference",
    "RunLine",
    "RunRef",
    "branch_steps",
    "compare",
]

DifferenceKind = Literal["missing", "kind", "input", "request", "reply", "tool_args", "tool_result"]
_RAN = (StepStatus.COMPLETED, StepStatus.UNDONE, StepStatus.SKIPPED)
_CONTEXT_LINES = 2


@dataclass(frozen=True)
class RunRef:
    """A run to compare: task `task_id`'s current line, or its branch `branch_id`."""

    task_id: str
    branch_id: str | None = None


@dataclass(frozen=True)
class ComparedStep:
    """One step of a run, as the comparison reads it."""

    step_id: str
    number: int
    kind: str
    status: str
    input: str
    output: str
    tool_calls: tuple[tuple[str, str], ...]
    """Each call as (`name(args)` with sorted JSON arguments, its result)."""
    tokens: int = 0
    cost_usd: float | None = None
    latency_ms: float = 0.0
    messages_sent: tuple[ChatMessage, ...] = ()

    @property
    def signature(self) -> tuple[Any, ...]:
        """What makes two steps the same step of a run (usage and timing aside)."""
        return (self.kind, self.input, self.output, self.tool_calls)


@dataclass(frozen=True)
class RunLine:
    """A run's steps in order, and what the whole run used."""

    ref: RunRef
    label: str
    steps: tuple[ComparedStep, ...]

    @property
    def tokens(self) -> int:
        """Tokens of every step of the run."""
        return sum(s.tokens for s in self.steps)

    @property
    def cost_usd(self) -> float | None:
        """What the run cost; None when no step's price is known."""
        costs = [s.cost_usd for s in self.steps if s.cost_usd is not None]
        return sum(costs) if costs else None

    @property
    def latency_ms(self) -> float:
        """The time of every step of the run."""
        return sum(s.latency_ms for s in self.steps)


@dataclass(frozen=True)
class FirstDifference:
    """Where the runs first differ: the step number, what differs, and a diff."""

    number: int
    kind: DifferenceKind
    message: str
    diff: str = ""

    def __str__(self) -> str:
        return f"{self.message}\n{self.diff}" if self.diff else self.message


@dataclass(frozen=True)
class Comparison:
    """Runs aligned on their shared prefix."""

    runs: tuple[RunLine, ...]
    shared: int
    """How many steps every run shares at its start."""
    rows: tuple[tuple[ComparedStep | None, ...], ...] = field(default=())
    """Step `shared + 1` onward, one row per number, one cell per run (None: no such step)."""
    first_difference: FirstDifference | None = None

    def report(self) -> str:
        """The comparison as a person reads it first: shared steps, totals, the difference."""
        lines = [f"{len(self.runs)} runs share {self.shared} step(s)."]
        for run in self.runs:
            cost = "cost unknown" if run.cost_usd is None else f"${run.cost_usd:.4f}"
            lines.append(
                f"{run.label}: {len(run.steps)} steps, {run.tokens:,} tokens, {cost}, "
                f"{run.latency_ms:,.0f} ms"
            )
        lines.append(str(self.first_difference) if self.first_difference else "No difference.")
        return "\n".join(lines)


def compare(source: Any, runs: Sequence[RunRef]) -> Comparison:
    """Line up `runs` (two or more) read from `source`, an `AgentRunner` or a `Store`.

    Raises:
        UserError: `compare_runs_too_few`: fewer than two runs.
        TaskNotFoundError: A run names a task `source` lacks.
    """
    if len(runs) < 2:
        raise UserError(
            "a comparison needs two runs or more",
            hint="pass RunRef(task_id, branch_id) for each run",
            code="compare_runs_too_few",
            params={"runs": len(runs)},
        )
    lines = tuple(_run_line(source, ref) for ref in runs)
    shared = _shared_prefix(lines)
    longest = max(len(line.steps) for line in lines)
    rows = tuple(
        tuple(line.steps[i] if i < len(line.steps) else None for line in lines)
        for i in range(shared, longest)
    )
    first = _first_difference(lines[0], lines[1], shared) if rows else None
    return Comparison(runs=lines, shared=shared, rows=rows, first_difference=first)


# ----------------------------------------------------------------------------- the runs


def branch_steps(state: TaskState, branch_id: str) -> list[str]:
    """The step ids of branch `branch_id`, first step first: its parents' steps, then its own.

    Raises:
        UserError: `branch_not_found`: no step of the task ran on that branch.
    """
    own = _own_steps(state)
    if branch_id not in own:
        raise UserError(
            f"task {short_id(state.task_id)} has no branch {branch_id!r} with a step that ran",
            hint="compare the task's current line (branch_id=None), or one of its branches",
            task_id=state.task_id,
            code="branch_not_found",
            params={"branch_id": branch_id},
        )
    return list(_line(state, own, branch_id, frozenset()))


def _own_steps(state: TaskState) -> dict[str, list[TaskStep]]:
    """Each branch's own steps that ran, by number; a number taken twice keeps the later."""
    by_branch: dict[str, dict[int, TaskStep]] = {}
    for step in state.steps.values():
        if step.number is None or step.status not in _RAN or step.step_id not in state.outputs:
            continue
        steps = by_branch.setdefault(step.branch_id, {})
        if step.number not in steps or _ran_at(step) >= _ran_at(steps[step.number]):
            steps[step.number] = step
    return {b: [steps[n] for n in sorted(steps)] for b, steps in by_branch.items()}


def _ran_at(step: TaskStep) -> Any:
    return step.finished_at or step.started_at or step.created_at


def _line(
    state: TaskState, own: dict[str, list[TaskStep]], branch_id: str, seen: frozenset[str]
) -> tuple[str, ...]:
    """The branch's parent line up to where it forked, then its own steps."""
    first = own[branch_id][0]
    parents = [state.steps[p] for p in first.prev_step_ids if p in state.steps]
    numbered = [p for p in parents if p.number is not None and p.branch_id in own]
    prefix: tuple[str, ...] = ()
    if numbered and branch_id not in seen:
        parent = max(numbered, key=lambda p: p.number or 0)
        if parent.branch_id != branch_id:
            prefix = _line(state, own, parent.branch_id, seen | {branch_id})
    return prefix[: (first.number or 1) - 1] + tuple(s.step_id for s in own[branch_id])


def _run_line(source: Any, ref: RunRef) -> RunLine:
    state, sent = _read(source, ref.task_id)
    ids = state.completed if ref.branch_id is None else branch_steps(state, ref.branch_id)
    steps = tuple(
        _compared(state, step_id, number, sent) for number, step_id in enumerate(ids, start=1)
    )
    where = "current line" if ref.branch_id is None else f"branch {ref.branch_id}"
    return RunLine(ref=ref, label=f"task {short_id(ref.task_id)} · {where}", steps=steps)


def _read(source: Any, task_id: str) -> tuple[TaskState, Callable[[str], list[ChatMessage]]]:
    if hasattr(source, "snapshot_task_state"):  # An AgentRunner.
        state = source.snapshot_task_state(task_id)
        return state, lambda step_id: source.get_messages_sent(task_id, step_id)
    state = source.load_task(task_id)
    if state is None:
        raise TaskNotFoundError(f"no task {task_id} in this store", task_id=task_id)
    return state, lambda step_id: source.load_messages_sent(task_id, step_id)


def _compared(
    state: TaskState, step_id: str, number: int, sent: Callable[[str], list[ChatMessage]]
) -> ComparedStep:
    step = state.steps[step_id]
    output = state.outputs.get(step_id)
    calls: tuple[tuple[str, str], ...] = ()
    result, tokens, cost, latency = "(not run)", 0, None, 0.0
    if output is not None:
        result = f"Error: {output.error}" if output.error else _text(output.output)
        calls = tuple(
            (f"{c.tool_name}({json.dumps(c.args, sort_keys=True, default=str)})", c.content)
            for c in output.tool_calls
        )
        tokens, cost, latency = output.usage.total_tokens, output.usage.cost_usd, output.latency_ms
    return ComparedStep(
        step_id=step_id,
        number=number,
        kind=step.kind.value,
        status=step.status.value,
        input=_text(step.input),
        output=result,
        tool_calls=calls,
        tokens=tokens,
        cost_usd=cost,
        latency_ms=latency,
        messages_sent=tuple(sent(step_id)),
    )


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


# ----------------------------------------------------------------------------- the difference


def _shared_prefix(lines: Sequence[RunLine]) -> int:
    shared = 0
    normaliser = Normaliser()
    for steps in zip(*(line.steps for line in lines), strict=False):
        if len({s.step_id for s in steps}) != 1 and not _same_steps(steps, normaliser):
            break
        shared += 1
    return shared


def _same_steps(steps: Sequence[ComparedStep], normaliser: Normaliser) -> bool:
    """Whether steps of different runs did the same, asked the same (where both kept it)."""
    if len({s.signature for s in steps}) != 1:
        return False
    # A fork's copied steps keep no request: compare requests only where both runs kept one.
    requests = [_request_of(s) for s in steps if s.messages_sent]
    return all(normaliser.same(requests[0], r, ignore_system=False) for r in requests[1:])


def _request_of(step: ComparedStep) -> ModelRequest:
    return ModelRequest(messages=list(step.messages_sent))


def _first_difference(a: RunLine, b: RunLine, shared: int) -> FirstDifference | None:
    """What differs at the first step after the shared prefix, between the first two runs."""
    number = shared + 1
    left = a.steps[shared] if shared < len(a.steps) else None
    right = b.steps[shared] if shared < len(b.steps) else None
    if left is None or right is None:
        shorter = a if left is None else b
        return FirstDifference(number, "missing", f"step {number}: {shorter.label} ends before it")
    for check in (_kind, _input, _request, _tool_args, _reply, _tool_results):
        found = check(number, left, right, (a.label, b.label))
        if found is not None:
            return found
    return None


Names = tuple[str, str]


def _kind(n: int, left: ComparedStep, right: ComparedStep, names: Names) -> FirstDifference | None:
    if left.kind == right.kind:
        return None
    return FirstDifference(n, "kind", f"step {n}: a {left.kind} step, and a {right.kind} step")


def _input(n: int, left: ComparedStep, right: ComparedStep, names: Names) -> FirstDifference | None:
    if left.input == right.input:
        return None
    diff = _diff(left.input, right.input, names, "input")
    return FirstDifference(n, "input", f"step {n}: the step's input differs", diff)


def _request(
    n: int, left: ComparedStep, right: ComparedStep, names: Names
) -> FirstDifference | None:
    if not (left.messages_sent and right.messages_sent):
        return None
    mine, theirs = _request_of(left), _request_of(right)
    normaliser = Normaliser()
    if normaliser.same(mine, theirs, ignore_system=False):
        return None
    views = normaliser.views(mine, theirs, ignore_system=False)
    lines = [render_request(view) for view in views]
    diff = _unified(lines[0], lines[1], names, "request")
    return FirstDifference(n, "request", f"step {n}: the model request differs", diff)


def _tool_args(
    n: int, left: ComparedStep, right: ComparedStep, names: Names
) -> FirstDifference | None:
    calls = ["\n".join(call for call, _ in s.tool_calls) for s in (left, right)]
    if calls[0] == calls[1]:
        return None
    diff = _diff(calls[0], calls[1], names, "tool calls")
    return FirstDifference(n, "tool_args", f"step {n}: the tool calls differ", diff)


def _reply(n: int, left: ComparedStep, right: ComparedStep, names: Names) -> FirstDifference | None:
    if left.output == right.output:
        return None
    diff = _diff(left.output, right.output, names, "reply")
    return FirstDifference(n, "reply", f"step {n}: the reply differs", diff)


def _tool_results(
    n: int, left: ComparedStep, right: ComparedStep, names: Names
) -> FirstDifference | None:
    for (call, was), (_, now) in zip(left.tool_calls, right.tool_calls, strict=False):
        if was != now:
            diff = _diff(was, now, names, f"result of {call}")
            return FirstDifference(
                n, "tool_result", f"step {n}: {call} returned another result", diff
            )
    return None


def _diff(old: str, new: str, names: Names, what: str) -> str:
    return _unified(old.splitlines() or [""], new.splitlines() or [""], names, what)


def _unified(old: list[str], new: list[str], names: Names, what: str) -> str:
    diff = difflib.unified_diff(
        old,
        new,
        fromfile=f"{what}: {names[0]}",
        tofile=f"{what}: {names[1]}",
        n=_CONTEXT_LINES,
        lineterm="",
    )
    return "\n".join(diff)
