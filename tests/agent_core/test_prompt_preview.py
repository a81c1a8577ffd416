"""The prompt preview is what the model gets: one builder serves the preview and the run."""

from __future__ import annotations

import json

from agent_core import AgentRunner, ParallelAgentRunner, StepKind
from agent_core.llms import ScriptedLLM
from agent_core.workers import ReActAgentWorker
from agent_core.workers.planner import PlannerAgentWorker, SubAgent

from .conftest import SEED_REPLIES

QUESTION = "What is (121 * 3) + 42?"


def test_each_step_records_the_messages_it_sent_and_the_preview_matched(tools):
    llm = ScriptedLLM(list(SEED_REPLIES))
    agent = AgentRunner(ReActAgentWorker.from_tools(tools, llm=llm))
    task_id = agent.create_task(QUESTION).task_id

    for _ in range(3):
        preview = agent.preview_messages(task_id)
        out = agent.run_step(task_id)
        assert out.messages_sent == preview == llm.requests[-1]


def test_the_preview_of_an_edited_input_is_what_the_run_sends(tools):
    llm = ScriptedLLM(list(SEED_REPLIES))
    agent = AgentRunner(ReActAgentWorker.from_tools(tools, llm=llm))
    task_id = agent.create_task(QUESTION).task_id
    step = agent.get_upcoming_steps(task_id)[0]

    preview = agent.preview_messages(task_id, step.step_id, "Use add, not sum")
    agent.run_step(task_id, "Use add, not sum", step_id=step.step_id)

    assert preview == llm.requests[-1]
    assert preview[-1].content == "Use add, not sum"


def test_a_tool_step_sends_nothing_to_a_model(tools):
    llm = ScriptedLLM(list(SEED_REPLIES))
    agent = AgentRunner(ReActAgentWorker.from_tools(tools, llm=llm, tool_approval=True))
    task_id = agent.create_task(QUESTION).task_id
    agent.run_step(task_id)

    assert agent.preview_messages(task_id) == []
    assert agent.run_step(task_id).messages_sent == []


def test_an_edited_plan_step_previews_the_edited_request_as_sent(tools):
    plan = {"plan": [{"id": "a", "agent": "math", "prompt": "add 1 and 2", "depends_on": []}]}
    llm = ScriptedLLM([json.dumps(plan), "Thought: ok\nAnswer: 3", "It is 3."])
    math = ReActAgentWorker.from_tools(tools, llm=llm)
    runner = ParallelAgentRunner(PlannerAgentWorker(llm, {"math": SubAgent("Math.", math)}))
    task_id = runner.create_task("original request").task_id
    plan_step = runner.get_upcoming_steps(task_id)[0]

    preview = runner.preview_messages(task_id, plan_step.step_id, "the edited request")
    out = runner.run_step(task_id, "the edited request", step_id=plan_step.step_id)

    assert preview == out.messages_sent == llm.requests[-1]
    assert preview[-1].content == "the edited request"
    delegate = next(s for s in runner.get_upcoming_steps(task_id) if s.kind is StepKind.DELEGATE)
    preview = runner.preview_messages(task_id, delegate.step_id)
    runner.run_step(task_id, step_id=delegate.step_id)
    assert preview == llm.requests[-1]  # The sub-agent's prompt, as it was sent.
    final = runner.get_upcoming_steps(task_id)[0]
    preview = runner.preview_messages(task_id, final.step_id, "be brief")
    assert runner.run_step(task_id, "be brief", step_id=final.step_id).messages_sent == preview


def test_prompts_are_stored_apart_and_read_back_after_a_restart(tools, tmp_path):
    from agent_core.store import SQLiteStore

    def agent() -> AgentRunner:
        llm = ScriptedLLM(list(SEED_REPLIES))
        worker = ReActAgentWorker.from_tools(tools, llm=llm)
        return AgentRunner(worker, store=SQLiteStore(tmp_path / "t.db"))

    first = agent()
    task_id = first.create_task(QUESTION).task_id
    sent = [first.run_step(task_id).messages_sent for _ in range(3)]

    again = agent()
    state = again.get_task_state(task_id)
    assert all(not o.messages_sent for o in state.outputs.values())  # Not loaded with the task.
    assert [again.get_messages_sent(task_id, s) for s in state.completed] == sent
    again.delete_task(task_id)
    assert again.store.load_messages_sent(task_id, state.completed[0]) == []
