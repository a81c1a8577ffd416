"""Tests: the cases in `stepwise_cases/` of the working folder, run one or all on current code.

Each case shows this session's last result; a failed one shows its first divergence with the
diff, the recording beside the replay, and opens the replayed task in the Stepper. A case file
that cannot be read says why (the file, the field) and the others still run.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from agent_core.recordings import Case, CaseFileError, load_case
from stepwise.app.components.actions import show_message, show_notice
from stepwise.app.components.case_files import case_files, cases_dir, keep_result, last_result
from stepwise.app.components.case_replay import replay_here
from stepwise.app.components.case_results import render_result, verdict_text
from stepwise.app.components.database import when_database_answers
from stepwise.app.components.messages import plural

_EMPTY = (
    "No test cases here yet. Open a task on the Stepper and press Save as test, or run "
    "`stepwise test save TASK_ID`: cases are saved in this folder."
)


def render() -> None:
    """Draw the Tests page (or say that its database does not answer)."""
    with when_database_answers():
        _render()


def _render() -> None:
    show_notice()
    st.header("Tests")
    st.caption("Cases replayed on your current code, the model answered from each recording.")
    st.code(str(cases_dir()), language=None)
    files = case_files()
    if not files:
        st.caption(_EMPTY)
        return
    cases = {path: _load(path) for path in files}
    # Callbacks: a run ends before the page draws, so every line shows the new results.
    st.button("Run all", key="tests-run-all", type="primary", on_click=_run, args=(cases, files))
    passed = sum(1 for path in files if _passed(path))
    st.caption(f"{plural(len(files), 'case')}, {passed} passed in this session.")
    for path, case in cases.items():
        _case_row(path, case, cases)


def _load(path: Path) -> Case | CaseFileError:
    try:
        return load_case(path)
    except CaseFileError as exc:
        return exc


def _passed(path: Path) -> bool:
    summary = last_result(str(path))
    return summary is not None and summary.passed


def _run(cases: dict[Path, Case | CaseFileError], paths: list[Path]) -> None:
    for path in paths:
        case = cases[path]
        if isinstance(case, Case):  # A file that cannot be read says so in its row.
            keep_result(str(path), replay_here(case))


def _case_row(
    path: Path, case: Case | CaseFileError, cases: dict[Path, Case | CaseFileError]
) -> None:
    key = f"case-{path.name}"
    with st.container(border=True):
        info, run_col = st.columns([8, 1], vertical_alignment="center")
        info.text(path.name)
        if isinstance(case, CaseFileError):
            with info:
                show_message("error", case, headline="This case file cannot be read.")
            return
        summary = last_result(str(path))
        info.caption(f"{plural(len(case.steps), 'step')} · {verdict_text(summary)}")
        run_col.button("Run", key=f"{key}-run", on_click=_run, args=(cases, [path]))
        if summary is not None:
            with st.expander("Result", expanded=not summary.passed):
                render_result(summary, key=key, case=case)
