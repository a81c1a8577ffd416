"""The three built-in demo scenarios run end to end on the scripted demo model, tools for real."""

from __future__ import annotations

import pytest

from agent_core import StepKind, StepStatus
from agent_core.demos import DEMO_MODEL_NAME, OFF_SCRIPT, SCENARIOS, demo_llm
from agent_core.store import SQLiteStore
from agent_core.tools.image import sanitize_svg


def _runner(name, tmp_path, **kwargs):
    scenario = SCENARIOS[name]
    spec = scenario.spec.model_copy(update={"workspace": str(tmp_path / "ws")})
    return spec.build_runner(**kwargs), scenario


def test_react_arithmetic_answers_405_with_real_tool_calls(tmp_path):
    agent, scenario = _runner("arithmetic", tmp_path)
    task = agent.create_task(scenario.task)
    result = agent.run_until(task.task_id)
    assert result.reason == "last_step"
    calls = [(c.tool_name, c.content) for o in result.outputs for c in o.tool_calls]
    assert calls == [("multiply", "363"), ("add", "405")]  # Whole numbers stay whole.
    assert str(agent.finalize_response(task.task_id)) == "(121 * 3) + 42 = 405"
    usage = agent.get_task(task.task_id).usage  # The demo model is free: $0, not "unknown".
    assert usage.cost_usd == 0.0 and usage.total_tokens > 0
    assert agent.get_task(task.task_id).spec == scenario.spec.model_dump(mode="json") | {
        "workspace": str(tmp_path / "ws")
    }


def test_function_calling_runs_the_parallel_tool_call_as_two_tool_steps(tmp_path):
    agent, scenario = _runner("parallel", tmp_path)
    task = agent.create_task(scenario.task)
    first = agent.run_step(task.task_id)
    assert first.usage.total_tokens > 50  # Estimated like the ReAct demo's, not 0.
    upcoming = agent.get_upcoming_steps(task.task_id)
    assert [s.kind for s in upcoming] == [StepKind.TOOL, StepKind.TOOL, StepKind.LLM]
    both = agent.run_steps_in_queue(task.task_id)
    assert sorted(o.output for o in both) == ["14", "84"]
    result = agent.run_until(task.task_id)
    assert result.reason == "last_step"
    assert agent.finalize_response(task.task_id).response.endswith("together 98.")


def test_master_agent_writes_draws_and_builds_the_page_with_two_items_in_parallel(tmp_path):
    agent, scenario = _runner("haiku", tmp_path, store=SQLiteStore(tmp_path / "demo.db"))
    task = agent.create_task(scenario.task)
    (plan,) = agent.run_steps_in_queue(task.task_id)
    assert [i["id"] for i in plan.output["plan"]] == ["haiku", "drawing", "page"]

    wave = agent.run_steps_in_queue(task.task_id)
    assert sorted(o.task_step.step_state["item"] for o in wave) == ["drawing", "haiku"]
    (page,) = agent.run_steps_in_queue(task.task_id)
    assert "index.html" in page.output
    (final,) = agent.run_steps_in_queue(task.task_id)
    assert final.is_last

    folder = tmp_path / "ws" / task.task_id
    haiku = (folder / "haiku.txt").read_text()
    assert haiku.count("\n") == 2 and "llama" in haiku
    assert sanitize_svg((folder / "llama.svg").read_text())  # A well-formed, safe drawing.
    html = (folder / "index.html").read_text()
    assert "<pre>Soft wool on the wind" in html and "src='llama.svg'" in html
    assert agent.finalize_response(task.task_id).response.startswith("Done.")


def test_undoing_the_parallel_wave_removes_its_files_and_a_rerun_replays_it(tmp_path):
    agent, scenario = _runner("haiku", tmp_path)
    task = agent.create_task(scenario.task)
    agent.run_steps_in_queue(task.task_id)
    agent.run_steps_in_queue(task.task_id)
    folder = tmp_path / "ws" / task.task_id
    assert (folder / "llama.svg").exists() and (folder / "haiku.txt").exists()
    wave = [o.task_step for o in agent.get_completed_steps(task.task_id)[1:]]
    agent.undo_step(task.task_id, steps=2)
    assert not (folder / "llama.svg").exists() and not (folder / "haiku.txt").exists()
    assert all(agent.get_step(task.task_id, s.step_id).status is StepStatus.UNDONE for s in wave)
    agent.run_steps_in_queue(task.task_id)
    assert (folder / "haiku.txt").read_text().startswith("Soft wool")


async def test_the_demo_model_says_what_it_is_when_off_script():
    reply = await demo_llm().chat([])
    assert reply.model == DEMO_MODEL_NAME
    from agent_core.llms import ChatMessage

    reply = await demo_llm().chat([ChatMessage(role="user", content="Tell me a joke")])
    assert reply.text == OFF_SCRIPT and "scripted demo model" in reply.text


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_names_a_task_and_a_demo_spec(name):
    scenario = SCENARIOS[name]
    assert scenario.spec.is_demo and scenario.task and scenario.title


def test_the_parallel_wave_overlaps(tmp_path):
    agent, scenario = _runner("haiku", tmp_path)
    task = agent.create_task(scenario.task)
    agent.run_steps_in_queue(task.task_id)
    agent.run_steps_in_queue(task.task_id)
    steps = [o.task_step for o in agent.get_completed_steps(task.task_id)[1:]]
    assert len(steps) == 2
    first_end = min(s.finished_at for s in steps)
    assert all(s.started_at < first_end for s in steps)  # Both began before either ended.
