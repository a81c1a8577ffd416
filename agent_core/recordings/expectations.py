"""What a case expects of a replayed task, and the check of each expectation.

The defaults come from the recorded task: its final answer and its tool calls (names and
arguments) in order. A user can loosen or add: the answer contains some text or matches a
regex, only the tool names count, at most N steps, at most $X, no failed step, and a Python
check `module:function` that gets the `Outcome` and returns True, or text saying what is wrong.
"""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_core.recordings.errors import CaseCheckError
from agent_core.types import Task, TaskStepOutput, ToolOutput

__all__ = ["ExpectationResult", "Expectations", "ExpectedCall", "Outcome", "check_expectations"]


class ExpectedCall(BaseModel):
    """A tool call the task is expected to make, in its place in the order."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class Expectations(BaseModel):
    """What the replayed task must do; an unset expectation is not checked."""

    model_config = ConfigDict(extra="forbid")

    answer: str | None = None
    """The final answer, exactly."""
    answer_contains: list[str] = Field(default_factory=list)
    """Texts the final answer must contain."""
    answer_matches: str | None = None
    """A regular expression the final answer must match (`re.search`)."""
    tool_calls: list[ExpectedCall] | None = None
    """The tool calls with their arguments, in order."""
    tool_names: list[str] | None = None
    """The names of the tools called, in order (arguments free)."""
    max_steps: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, ge=0)
    no_failed_step: bool = True
    """No step of the replayed task failed (a failure that stops a replay fails it anyway)."""
    check: str | None = None
    """`module:function` or `file.py:function` in the user's project, imported when the case
    runs, called with the `Outcome`: True (or None) passes, False or a text fails."""


@dataclass
class Outcome:
    """A replayed (or live) task as the expectations see it; a Python check gets it."""

    task: Task
    answer: str | None
    """The final answer, or None when the task did not finish."""
    steps: list[TaskStepOutput]
    """The completed steps' outputs, in order."""
    failed_steps: int = 0
    cost_usd: float = 0.0

    @property
    def tool_calls(self) -> list[ToolOutput]:
        """Every tool call of the completed steps, in order."""
        return [call for step in self.steps for call in step.tool_calls]


@dataclass
class ExpectationResult:
    """One expectation checked: its name, whether it held, and what was found if not."""

    name: str
    passed: bool
    detail: str = ""


@dataclass
class _Checker:
    outcome: Outcome
    project: Path
    results: list[ExpectationResult] = field(default_factory=list)

    def add(self, name: str, passed: bool, detail: str = "") -> None:
        self.results.append(ExpectationResult(name, passed, "" if passed else detail))


def check_expectations(
    expectations: Expectations, outcome: Outcome, *, project: str | Path = "."
) -> list[ExpectationResult]:
    """Check each set expectation against `outcome`, in a fixed order.

    Raises:
        CaseCheckError: The Python check cannot be imported, or raised.
    """
    checker = _Checker(outcome, Path(project))
    answer = outcome.answer
    shown = "no answer" if answer is None else repr(_short(answer))
    if expectations.answer is not None:
        expected = repr(_short(expectations.answer))
        checker.add("answer", answer == expectations.answer, f"expected {expected}, got {shown}")
    for text in expectations.answer_contains:
        passed = answer is not None and text in answer
        checker.add(f"answer contains {text!r}", passed, f"got {shown}")
    if expectations.answer_matches is not None:
        passed = answer is not None and re.search(expectations.answer_matches, answer) is not None
        checker.add(f"answer matches {expectations.answer_matches!r}", passed, f"got {shown}")
    _check_calls(expectations, checker)
    _check_bounds(expectations, checker)
    if expectations.check is not None:
        passed, detail = _run_check(expectations.check, outcome, checker.project)
        checker.add(f"check {expectations.check}", passed, detail)
    return checker.results


def _check_calls(expectations: Expectations, checker: _Checker) -> None:
    calls = [c for c in checker.outcome.tool_calls if not c.rejected]
    if expectations.tool_calls is not None:
        got = [ExpectedCall(tool=c.tool_name, args=c.args) for c in calls]
        checker.add(
            "tool calls",
            got == expectations.tool_calls,
            f"expected {_calls(expectations.tool_calls)}, got {_calls(got)}",
        )
    if expectations.tool_names is not None:
        names = [c.tool_name for c in calls]
        checker.add(
            "tool names",
            names == expectations.tool_names,
            f"expected {expectations.tool_names}, got {names}",
        )


def _check_bounds(expectations: Expectations, checker: _Checker) -> None:
    outcome = checker.outcome
    if expectations.max_steps is not None:
        count = len(outcome.steps)
        checker.add(
            f"at most {expectations.max_steps} steps",
            count <= expectations.max_steps,
            f"took {count} steps",
        )
    if expectations.max_cost_usd is not None:
        checker.add(
            f"at most ${expectations.max_cost_usd:g}",
            outcome.cost_usd <= expectations.max_cost_usd,
            f"cost ${outcome.cost_usd:.6f}",
        )
    if expectations.no_failed_step:
        failed = outcome.failed_steps
        checker.add("no failed step", failed == 0, f"{failed} step(s) failed")


def _calls(calls: list[ExpectedCall]) -> str:
    return ", ".join(f"{c.tool}({json.dumps(c.args, sort_keys=True)})" for c in calls) or "none"


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _run_check(target: str, outcome: Outcome, project: Path) -> tuple[bool, str]:
    function = _import_check(target, project)
    try:
        verdict = function(outcome)
        if inspect.isawaitable(verdict):
            raise CaseCheckError(f"check {target} is async: make it a plain function")
    except CaseCheckError:
        raise
    except Exception as exc:
        raise CaseCheckError(
            f"check {target} raised {type(exc).__name__}: {exc}",
            params={"check": target, "detail": f"{type(exc).__name__}: {exc}"},
        ) from exc
    if verdict is None or verdict is True:
        return True, ""
    if verdict is False:
        return False, "returned False"
    return False, str(verdict)


def _import_check(target: str, project: Path) -> Any:
    """The check's function, imported now from the user's project (never on load)."""
    from agent_core.user_code.config import is_file_ref
    from agent_core.user_code.imports import import_user_module

    module_ref, _, name = target.rpartition(":")
    if not module_ref or not name:
        raise CaseCheckError(
            f"check {target!r} is not module:function (or file.py:function)",
            params={"check": target, "detail": "not module:function"},
        )
    if is_file_ref(module_ref) and not Path(module_ref).is_absolute():
        module_ref = str(project.resolve() / module_ref)
    try:
        module = import_user_module(module_ref, project.resolve())
        function = getattr(module, name)
    except Exception as exc:
        raise CaseCheckError(
            f"check {target} cannot be imported: {type(exc).__name__}: {exc}",
            params={"check": target, "detail": f"{type(exc).__name__}: {exc}"},
        ) from exc
    if not callable(function):
        raise CaseCheckError(
            f"check {target} is not a function", params={"check": target, "detail": "not callable"}
        )
    return function
