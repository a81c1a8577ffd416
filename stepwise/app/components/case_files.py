"""The cases of the folder the app was started from, and this session's last result of each.

Cases live in `stepwise_cases/` of the working folder, where `stepwise test` looks too. A
replay's result is kept in the session as a `ReplaySummary` (data, never the replay's runner),
so the Tests page shows each case's last result until the browser session ends. Nothing is
written beside the case files: users commit that folder, and a results file would churn in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from agent_core.recordings import DEFAULT_CASES_DIR, CaseResult, Divergence
from agent_core.recordings.cases import CASE_SUFFIX
from agent_core.recordings.expectations import ExpectationResult

__all__ = ["ReplaySummary", "case_files", "cases_dir", "keep_result", "last_result"]

_RESULTS = "stepwise.case_results"


@dataclass(frozen=True)
class ReplaySummary:
    """What a page shows of a replay: its verdict, divergence and the replayed task's id."""

    passed: bool
    steps: int
    task_id: str = ""
    """The replayed task, in the app's store ("" when the replay could not start)."""
    divergence: Divergence | None = None
    expectations: tuple[ExpectationResult, ...] = ()
    error: dict[str, Any] | None = None
    """What kept the case from replaying, as `AgentCoreError.to_data` gives it."""

    @classmethod
    def of(cls, result: CaseResult) -> ReplaySummary:
        """The summary of `result` (the runner and the exception object are left behind)."""
        return cls(
            passed=result.passed,
            steps=result.steps,
            task_id=result.task_id,
            divergence=result.divergence,
            expectations=tuple(result.expectations),
            error=result.error.to_data() if result.error is not None else None,
        )

    @property
    def failed_expectations(self) -> list[ExpectationResult]:
        """The expectations that did not hold."""
        return [r for r in self.expectations if not r.passed]


def cases_dir() -> Path:
    """`stepwise_cases/` in the folder the app was started from (it may not exist yet)."""
    return Path.cwd() / DEFAULT_CASES_DIR


def case_files() -> list[Path]:
    """Every case file under `cases_dir()`, sorted (what `stepwise test` would run)."""
    folder = cases_dir()
    return sorted(folder.rglob(f"*{CASE_SUFFIX}")) if folder.is_dir() else []


def last_result(key: str) -> ReplaySummary | None:
    """This session's last replay of `key` (a case file's path, or a task id)."""
    found = st.session_state.get(_RESULTS, {}).get(key)
    return found if isinstance(found, ReplaySummary) else None


def keep_result(key: str, summary: ReplaySummary) -> None:
    """Remember `summary` as the last replay of `key` for this session."""
    results = dict(st.session_state.get(_RESULTS, {}))
    results[key] = summary
    st.session_state[_RESULTS] = results
