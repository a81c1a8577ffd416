"""`stepwise import FILE`: one task id per line; exit 2 with the reason on a bad file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_core.store.sqlite import SQLiteStore
from stepwise.cli.main import main
from tests.agent_core.recordings.importers._traces import otlp_lines, pydantic_ai_trace


def test_import_prints_each_new_task_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "traces.jsonl"
    trace.write_bytes(otlp_lines(pydantic_ai_trace()) + otlp_lines(pydantic_ai_trace()))
    db = tmp_path / "stepwise.db"
    assert main(["import", str(trace), "--db", str(db)]) == 0
    printed = capsys.readouterr().out.split()
    assert len(printed) == 2
    store = SQLiteStore(db)
    try:
        for task_id in printed:
            state = store.load_task(task_id)
            assert state is not None and state.task.imported and len(state.completed) == 3
    finally:
        store.close()


def test_a_bad_file_exits_2_with_the_reason_and_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "notes.json"
    trace.write_text(json.dumps({"hello": "world"}))
    db = tmp_path / "stepwise.db"
    assert main(["import", str(trace), "--db", str(db), "--format", "auto"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "none of the formats Stepwise imports" in captured.err
    store = SQLiteStore(db)
    try:
        assert store.list_tasks() == []
    finally:
        store.close()


def test_format_names_a_format_the_file_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "traces.jsonl"
    trace.write_bytes(otlp_lines(pydantic_ai_trace()))
    code = main(["import", str(trace), "--db", str(tmp_path / "s.db"), "--format", "langfuse"])
    assert code == 2 and "stepwise import:" in capsys.readouterr().err
