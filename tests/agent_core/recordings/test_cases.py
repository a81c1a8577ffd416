"""The case file: what `case_from_task` records, how it is written, and bad files' errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.recordings import (
    CASE_FORMAT,
    CaseFileError,
    case_from_task,
    load_case,
    save_case,
)
from agent_core.store import SQLiteStore
from agent_core.tools.arithmetic import arithmetic_tools
from agent_core.workers import ReActAgentWorker
from tests.agent_core.conftest import action, answer

KEY = "sk-proj-abcdefghijklmnop1234567890"


def finished_task(store=None, *, question: str = "What is 2 + 3?") -> tuple[AgentRunner, str]:
    llm = ScriptedLLM([action("add", '{"a": 2, "b": 3}'), answer("5")])
    runner = AgentRunner(ReActAgentWorker(arithmetic_tools(), llm), store=store)
    task_id = runner.create_task(question).task_id
    runner.run_until(task_id)
    assert llm.exhausted
    return runner, task_id


def test_a_case_holds_each_step_request_reply_and_the_default_expectations() -> None:
    runner, task_id = finished_task()
    case = case_from_task(runner, task_id, name="adds")

    assert [s.kind for s in case.steps] == ["llm", "llm"]
    first = case.steps[0]
    assert first.request is not None and first.reply is not None
    assert [m.role for m in first.request.messages] == ["system", "user"]
    assert first.reply.message.content == action("add", '{"a": 2, "b": 3}')
    assert [(c.tool, c.args, c.result) for c in first.tool_calls] == [
        ("add", {"a": 2, "b": 3}, "5")
    ]
    assert case.steps[1].is_last and case.answer == "5"
    assert case.expectations.answer == "5"
    assert [(c.tool, c.args) for c in case.expectations.tool_calls or []] == [
        ("add", {"a": 2, "b": 3})
    ]


def test_a_case_is_read_from_a_store_as_from_a_runner(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    _, task_id = finished_task(store)
    from_store = case_from_task(SQLiteStore(tmp_path / "runs.db"), task_id, name="adds")
    assert from_store.steps[0].request is not None
    assert from_store.steps[0].reply is not None
    assert from_store.answer == "5"


def test_the_file_is_stable_sorted_and_round_trips(tmp_path: Path) -> None:
    runner, task_id = finished_task()
    case = case_from_task(runner, task_id, name="adds")
    path = save_case(case, tmp_path)
    assert path == tmp_path / "adds.case.json"
    text = path.read_text()
    data = json.loads(text)
    assert data["format"] == CASE_FORMAT
    assert list(data) == sorted(data)
    assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert load_case(path) == case
    assert save_case(load_case(path), tmp_path).read_text() == text  # Saving again: same bytes.


def test_no_key_is_ever_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "key-from-the-environment-123")
    question = f"My key is {KEY}; the env one is key-from-the-environment-123. Add 2 and 3."
    runner, task_id = finished_task(question=question)
    case = case_from_task(runner, task_id, name="secret")
    text = save_case(case, tmp_path).read_text()
    assert KEY not in text
    assert "key-from-the-environment-123" not in text
    assert "[redacted]" in text
    assert KEY in case.input  # Only the file is redacted: the recording in memory is as run.


def test_loading_runs_and_imports_nothing(tmp_path: Path) -> None:
    runner, task_id = finished_task()
    case = case_from_task(runner, task_id, name="checked")
    case.expectations.check = "no_such_module_anywhere:check"
    loaded = load_case(save_case(case, tmp_path))
    assert loaded.expectations.check == "no_such_module_anywhere:check"
    import sys

    assert "no_such_module_anywhere" not in sys.modules


def _saved(tmp_path: Path) -> tuple[Path, dict]:
    runner, task_id = finished_task()
    path = save_case(case_from_task(runner, task_id, name="bad"), tmp_path)
    return path, json.loads(path.read_text())


def test_a_file_that_is_not_json_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.case.json"
    path.write_text('{"format": "stepwise.case/1",\n  "name": oops}')
    with pytest.raises(CaseFileError) as caught:
        load_case(path)
    assert caught.value.code == "case_malformed"
    assert str(path) in str(caught.value) and "line 2" in str(caught.value)
    assert caught.value.params["file"] == str(path)


def test_an_unknown_format_says_which_it_reads(tmp_path: Path) -> None:
    path, data = _saved(tmp_path)
    path.write_text(json.dumps({**data, "format": "stepwise.case/9"}))
    with pytest.raises(CaseFileError) as caught:
        load_case(path)
    assert caught.value.code == "case_format_unknown"
    assert caught.value.params["supported"] == [CASE_FORMAT]
    assert "stepwise.case/9" in str(caught.value)


def test_a_missing_field_names_the_step_and_the_field(tmp_path: Path) -> None:
    path, data = _saved(tmp_path)
    del data["steps"][1]["kind"]
    path.write_text(json.dumps(data))
    with pytest.raises(CaseFileError) as caught:
        load_case(path)
    assert caught.value.code == "case_field_missing"
    assert caught.value.field == "steps.1.kind"
    assert "step 2" in str(caught.value) and str(path) in str(caught.value)


def test_a_wrong_field_names_it(tmp_path: Path) -> None:
    path, data = _saved(tmp_path)
    data["expectations"]["max_steps"] = "many"
    path.write_text(json.dumps(data))
    with pytest.raises(CaseFileError) as caught:
        load_case(path)
    assert caught.value.code == "case_malformed"
    assert caught.value.field == "expectations.max_steps"
