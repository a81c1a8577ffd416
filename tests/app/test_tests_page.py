"""Tasks as tests in the app (issue 29): Save as test and Replay on current code on the Stepper,
and the Tests page running the cases of the working folder with their divergences."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from agent_core.demos import ARITHMETIC_TASK
from agent_core.recordings import case_from_task, load_case, save_case
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from stepwise.app.components.messages import describe_data, unplain

TESTS_PAGE = "app_pages/tests.py"


def demo_task(db_path: Path) -> str:
    """A finished demo task in the app's database: multiply, add, then the answer."""
    store = SQLiteStore(db_path)
    try:
        runner = AgentSpec().build_runner(store=store)
        task_id = runner.create_task(ARITHMETIC_TASK).task_id
        runner.run_until(task_id)
        runner.finalize_response(task_id)
    finally:
        store.close()
    return task_id


def write_cases(db_path: Path, folder: Path) -> None:
    """`good` replays as recorded; `changed` has another multiply result; `broken` is no JSON."""
    store = SQLiteStore(db_path)
    try:
        case = case_from_task(store, demo_task(db_path), name="good")
    finally:
        store.close()
    save_case(case, folder)
    changed = case.model_copy(deep=True, update={"name": "changed"})
    changed.steps[0].tool_calls[0].result = "364"  # The code now gives 363: a divergence.
    save_case(changed, folder)
    (folder / "broken.case.json").write_text("{not json", encoding="utf-8")


def boxes(at: AppTest) -> list[str]:
    """Each coloured box's text as read (a bold headline's ** dropped; body escapes undone)."""
    found = [*at.error, *at.warning, *at.info, *at.success]
    return [unplain(e.value.replace("**", "")) for e in found]


def stepper_on(app: AppTest, task_id: str) -> AppTest:
    app.query_params["task"] = task_id
    return app


def test_save_as_test_writes_the_case_with_the_edited_expectations(app, db_path, tmp_path):
    task_id = demo_task(db_path)
    app = stepper_on(app, task_id)
    app.session_state["save-as-test"] = True  # The popover, open.
    app.run()
    assert not app.exception
    assert app.text_input(key="save-test-name").value == f"task-{task_id[-8:]}"
    assert app.text_area(key="save-test-answer").value == "(121 * 3) + 42 = 405"
    app.text_input(key="save-test-name").input("adds up")
    app.radio(key="save-test-calls").set_value("in order, names only")
    app.text_area(key="save-test-contains").input("405")
    app.number_input(key="save-test-steps").set_value(5)
    app.button(key="FormSubmitter:save-test-form-Save test").click().run()
    assert not app.exception

    path = tmp_path / "stepwise_cases" / "adds_up.case.json"
    assert path.is_file()
    assert str(path.resolve()) in [c.value for c in app.code]  # The page shows where.
    case = load_case(path)
    assert case.name == "adds up" and len(case.steps) == 3
    expected = case.expectations
    assert expected.answer == "(121 * 3) + 42 = 405" and expected.answer_contains == ["405"]
    assert expected.tool_calls is None and expected.tool_names == ["multiply", "add"]
    assert expected.max_steps == 5 and expected.max_cost_usd is None
    assert "sk-" not in path.read_text(encoding="utf-8")


def test_save_as_test_refuses_a_bad_regex_and_an_existing_name(app, db_path, tmp_path):
    task_id = demo_task(db_path)
    app = stepper_on(app, task_id)
    app.session_state["save-as-test"] = True
    app.run()
    app.text_input(key="save-test-matches").input("(unclosed")
    app.button(key="FormSubmitter:save-test-form-Save test").click().run()
    assert any("not a regular expression" in text for text in boxes(app))
    assert not (tmp_path / "stepwise_cases").exists()

    app.text_input(key="save-test-matches").input(r"\d+$")
    app.button(key="FormSubmitter:save-test-form-Save test").click().run()
    assert len(list((tmp_path / "stepwise_cases").iterdir())) == 1
    app.button(key="FormSubmitter:save-test-form-Save test").click().run()
    assert any("tick Replace" in text for text in boxes(app))


def test_replay_on_current_code_says_the_task_still_passes(app, db_path):
    task_id = demo_task(db_path)
    app = stepper_on(app, task_id)
    app.run()
    app.button(key="replay-current").click().run()
    assert not app.exception
    assert any(text.startswith("Passed: 3 steps replayed") for text in boxes(app))


def test_the_tests_page_runs_all_and_shows_the_divergence_and_the_broken_file(
    app, db_path, tmp_path
):
    write_cases(db_path, tmp_path / "stepwise_cases")
    app.run()
    app.switch_page(TESTS_PAGE).run()
    assert not app.exception
    names = [t.value for t in app.text]
    assert names == ["broken.case.json", "changed.case.json", "good.case.json"]
    # The broken file says which file and what to do; the others are listed to run.
    (broken,) = [b for b in boxes(app) if "broken.case.json" in b]
    assert broken.startswith("This case file cannot be read.") and "Save as test" in broken

    app.button(key="tests-run-all").click().run()
    assert not app.exception
    captions = " ".join(c.value for c in app.caption)
    assert "3 steps · passed (3 steps)" in captions
    assert "failed at step 1 (tool_result)" in captions
    assert "3 cases, 1 passed in this session." in captions
    diverged = [b for b in boxes(app) if b.startswith("Diverged at step 1 (llm step)")]
    assert len(diverged) == 1 and "tool multiply returned something else" in diverged[0]
    (diff,) = [c.value for c in app.code if c.language == "diff"]
    assert "-364" in diff and "+363" in diff
    steps = app.dataframe  # Expectations, then the recording beside the replay.
    side = [d.value for d in steps if "Recorded" in d.value.columns]
    assert len(side) == 1
    first = side[0].iloc[0]
    assert first["Recorded"].startswith("multiply(a=121, b=3) → 364")
    assert first[""] == "◀ first divergence"

    app.button(key="case-changed.case.json-open").click().run()
    assert not app.exception
    task_id = app.session_state["stepwise.task_id"]
    store = SQLiteStore(db_path)
    try:
        replayed = store.load_task(task_id)
    finally:
        store.close()
    assert replayed is not None and replayed.task.input == ARITHMETIC_TASK


def test_run_one_case_leaves_the_others_not_run(app, db_path, tmp_path):
    write_cases(db_path, tmp_path / "stepwise_cases")
    app.run()
    app.switch_page(TESTS_PAGE).run()
    app.button(key="case-good.case.json-run").click().run()
    captions = [c.value for c in app.caption]
    assert "3 steps · passed (3 steps)" in captions
    assert "3 steps · not run yet" in captions


def test_the_tests_page_says_how_to_make_a_case_when_there_is_none(app):
    app.run()
    app.switch_page(TESTS_PAGE).run()
    assert not app.exception
    assert any("press Save as test" in c.value for c in app.caption)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (
            {"code": "case_malformed", "params": {"file": "a.case.json", "detail": "bad"}},
            "Save as test",
        ),
        (
            {
                "code": "case_format_unknown",
                "params": {"file": "a.case.json", "format": "x/9", "supported": ["s/1"]},
            },
            "Upgrade Stepwise",
        ),
        (
            {"code": "case_field_missing", "params": {"file": "a.case.json", "field": "input"}},
            "lacks the field input",
        ),
        ({"code": "replay_unsupported", "params": {"reason": "x"}}, "Reload my code"),
        ({"code": "replay_diverged", "params": {"step": 3}}, "Open the replayed task"),
        ({"code": "case_check_failed", "params": {"check": "c:f"}}, "Tests page"),
    ],
)
def test_the_case_error_codes_name_the_button_or_page_that_fixes_them(data, words):
    text = describe_data({"message": "m", **data})
    assert words in text
    assert "replay_case" not in text and text != "M."  # The app's words, not the message.
