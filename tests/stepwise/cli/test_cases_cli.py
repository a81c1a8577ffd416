"""`stepwise test`: cases saved from tasks, run as a table with exit statuses CI can read."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.user_code import UserCodeRegistry
from stepwise.cli.main import main
from tests.agent_core._user_projects import isolated_imports  # noqa: F401 - a fixture
from tests.agent_core.conftest import action, answer
from tests.agent_core.recordings._projects import change_agent, write_agent
from tests.llm_servers import OpenAIServer, react_policy

pytestmark = pytest.mark.usefixtures("isolated_imports")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write_agent(tmp_path)
    return tmp_path


def record(project: Path, *, name: str = "adds", a: int = 2, db: Path | None = None) -> str:
    """Run the project's agent on a scripted model, save the task as a case; its task id."""
    target = f"{project / 'agent.py'}:build_agent"
    registry = UserCodeRegistry(project=project, agents={"calc": target})
    llm = ScriptedLLM([action("add", json.dumps({"a": a, "b": 3})), answer(str(a + 3))])
    spec = AgentSpec.from_registry(registry, agent="calc")
    store = SQLiteStore(db) if db is not None else None
    runner = AgentRunner(registry.build_agent("calc", llm=llm), spec=spec.model_dump(), store=store)
    task_id = runner.create_task(f"What is {a} + 3?").task_id
    runner.run_until(task_id)
    runner.finalize_response(task_id)
    assert llm.exhausted
    if db is None:
        from agent_core.recordings import case_from_task, save_case

        save_case(case_from_task(runner, task_id, name=name), project / "stepwise_cases")
    return task_id


def test_every_case_passes_on_unchanged_code(project: Path, capsys) -> None:
    record(project, name="adds")
    record(project, name="adds-more", a=5)
    junit = project / "out" / "junit.xml"
    assert main(["test", "--junit-xml", str(junit)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == [
        "CASE",
        "RESULT",
        "STEPS",
        "DIVERGENCE",
        "/",
        "FAILED",
        "EXPECTATION",
    ]
    assert any(line.split()[:3] == ["adds", "PASS", "2"] for line in lines)
    assert "2 passed, 0 failed" in out
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "0", "0")


def test_a_changed_tool_fails_at_its_step_with_the_diff(project: Path, capsys) -> None:
    record(project)
    change_agent(project, "return a + b", "return a + b + 1")
    junit = project / "junit.xml"
    assert main(["test", "stepwise_cases", "--junit-xml", str(junit)]) == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("adds "))
    assert row.split()[:3] == ["adds", "FAIL", "1"]
    assert "diverged at step 1" in row
    assert "--- recorded result of add\n+++ replayed result of add\n@@ -1 +1 @@\n-5\n+6" in out
    failure = ET.parse(junit).getroot().find("testcase/failure")
    assert failure is not None and "diverged at step 1" in failure.get("message", "")
    assert "+6" in (failure.text or "")


def test_a_malformed_case_exits_2_and_the_others_still_run(project: Path, capsys) -> None:
    record(project)
    bad = project / "stepwise_cases" / "broken.case.json"
    bad.write_text('{"format": "stepwise.case/1", "name": ')
    old = project / "stepwise_cases" / "old.case.json"
    old.write_text(json.dumps({"format": "stepwise.case/0", "name": "old"}))
    assert main(["test"]) == 2
    out = capsys.readouterr().out
    assert any(line.split()[:2] == ["adds", "PASS"] for line in out.splitlines())
    assert f"{bad.relative_to(project)}: not JSON" in out and "[case_malformed]" in out
    assert "[case_format_unknown]" in out and str(old.relative_to(project)) in out


def test_k_selects_cases_by_name(project: Path, capsys) -> None:
    record(project, name="adds")
    record(project, name="other", a=5)
    assert main(["test", "-k", "oth*"]) == 0
    out = capsys.readouterr().out
    assert "other" in out and "adds" not in out


def test_save_writes_the_case_and_prints_its_path_last(project: Path, capsys) -> None:
    db = project / "runs.db"
    task_id = record(project, db=db)
    code = main(["test", "save", task_id[-8:], "--db", str(db), "--dir", "kept", "--name", "sum"])
    assert code == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert Path(last) == Path("kept") / "sum.case.json"
    assert json.loads((project / last).read_text())["source"]["task_id"] == task_id
    assert main(["test", "kept"]) == 0


def test_save_of_an_unknown_task_is_bad_input(project: Path, capsys) -> None:
    db = project / "runs.db"
    record(project, db=db)
    assert main(["test", "save", "nosuchtask", "--db", str(db)]) == 2
    assert "nosuchtask" in capsys.readouterr().err


def test_update_re_records_a_case_whose_prompt_changed(project: Path, capsys) -> None:
    record(project)
    change_agent(project, "INSTRUCTIONS = ''", "INSTRUCTIONS = 'You add carefully.'")
    assert main(["test"]) == 1
    assert main(["test", "--update"]) == 1  # This run still reports the divergence...
    assert "re-recorded" in capsys.readouterr().out
    assert main(["test"]) == 0  # ...and the case now holds the new prompt.
    saved = (project / "stepwise_cases" / "adds.case.json").read_text()
    assert "You add carefully." in saved


def test_the_agent_override_replays_on_another_target(project: Path, capsys) -> None:
    record(project)
    (project / "fixed.py").write_text(
        (project / "agent.py").read_text().replace("return a + b", "return b + a")
    )
    assert main(["test", "--agent", "calc=fixed.py:build_agent"]) == 0
    change_agent(project, "return a + b", "return a - b")  # The recorded target breaks...
    assert main(["test"]) == 1
    assert main(["test", "--agent", "calc=fixed.py:build_agent"]) == 0  # ...the override holds.


def test_live_repeat_reports_a_pass_rate_against_the_loopback_server(
    project: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-live-key-0123456789")
    target = f"{project / 'agent.py'}:build_agent"
    registry = UserCodeRegistry(project=project, agents={"calc": target})
    with OpenAIServer(policy=react_policy) as server:
        spec = AgentSpec.from_registry(
            registry, agent="calc", provider="openai", base_url=server.url + "/v1"
        )
        runner = spec.build_runner(registry=registry)
        task_id = runner.create_task("What is 1 + 2?").task_id
        runner.run_until(task_id)
        assert main(["test", "save", task_id, "--db", str(project / "none.db")]) == 2  # Not there.
        from agent_core.recordings import case_from_task, save_case

        save_case(case_from_task(runner, task_id, name="live"), project / "stepwise_cases")
        served = len(server.model_requests)
        code = main(["test", "--live", "--repeat", "5", "--min-pass-rate", "0.8"])
        assert len(server.model_requests) == served + 5 * 2  # Each run asked the live model.
    out = capsys.readouterr().out
    assert code == 0
    assert "live: 100% of 5 runs" in out
    assert "answer: 100%" in out and "tool calls: 100%" in out
