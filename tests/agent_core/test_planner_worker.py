"""PlannerAgentWorker: plan, delegate to sub-agents (in parallel where possible), aggregate."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from agent_core import AgentRunner, ParallelAgentRunner, StepKind, StepStatus, Task
from agent_core.dag import build_dag
from agent_core.effects import FileWriteEffect, current_step, record_effect
from agent_core.errors import StepError, UserError
from agent_core.events import TokenDeltaEvent, ToolCallFinishedEvent
from agent_core.llms import ChatMessage, ChatResponse, ScriptedLLM, Usage
from agent_core.store import SQLiteStore
from agent_core.tools import FunctionTool
from agent_core.workers import CustomSimpleAgentWorker, ReActAgentWorker
from agent_core.workers._plan import PlanError
from agent_core.workers.planner import PlannerAgentWorker, SubAgent, result_key


class RecordingAgent(CustomSimpleAgentWorker):
    """A sub-agent that answers in one step and remembers what it was asked, and when."""

    def __init__(self, name: str, *, delay: float = 0.0, fail: bool = False) -> None:
        super().__init__()
        self.name, self.delay, self.fail = name, delay, fail
        self.inputs: list[str | None] = []
        self.spans: list[tuple[float, float]] = []

    async def _arun_step(
        self, state: dict[str, Any], task: Task, input: str | None
    ) -> tuple[str, bool]:
        self.inputs.append(input)
        start = time.perf_counter()
        await asyncio.sleep(self.delay)
        self.spans.append((start, time.perf_counter()))
        if self.fail:
            raise RuntimeError(f"{self.name} is broken")
        return f"{self.name} did: {(input or '').splitlines()[0]}", True


class EndlessAgent(CustomSimpleAgentWorker):
    def _run_step(self, state: dict[str, Any], task: Task, input: str | None) -> tuple[str, bool]:
        return "still thinking", False


def item(id: str, agent: str, prompt: str, deps=()) -> dict[str, Any]:
    return {"id": id, "agent": agent, "prompt": prompt, "depends_on": list(deps)}


PLAN = {
    "plan": [
        item("a", "researcher", "find A"),
        item("b", "researcher", "find B"),
        item("c", "writer", "write C", deps=["a"]),
    ]
}
PLAN_REPLY = json.dumps(PLAN)
ANSWER = "A, B and C, combined."


def make_planner(
    replies=(PLAN_REPLY, ANSWER),
    *,
    runner=ParallelAgentRunner,
    researcher: Any = None,
    writer: Any = None,
    **kwargs: Any,
):
    llm = ScriptedLLM(list(replies))
    researcher = researcher or RecordingAgent("researcher")
    writer = writer or RecordingAgent("writer")
    agents = {
        "researcher": SubAgent("Finds facts.", researcher),
        "writer": SubAgent("Writes prose.", writer),
    }
    worker = PlannerAgentWorker(llm, agents, **kwargs)
    return runner(worker), llm, researcher, writer


def delegate(agent: AgentRunner, task_id: str, item_id: str):
    (step,) = [
        s
        for s in agent.get_upcoming_steps(task_id)
        if s.kind is StepKind.DELEGATE and s.step_state["item"] == item_id
    ]
    return step


# ------------------------------------------------------------------- the happy path


def test_a_plan_runs_in_waves_to_the_aggregated_answer():
    agent, llm, researcher, writer = make_planner(
        researcher=RecordingAgent("researcher", delay=0.2)
    )
    task = agent.create_task("Report on A and B")

    (planned,) = agent.run_steps_in_queue(task.task_id)
    assert planned.task_step.kind is StepKind.PLAN
    assert planned.output == PLAN
    kinds = [s.kind for s in agent.get_upcoming_steps(task.task_id)]
    assert kinds == [StepKind.DELEGATE] * 3 + [StepKind.FINALIZE]

    started = time.perf_counter()
    wave1 = agent.run_steps_in_queue(task.task_id)
    elapsed = time.perf_counter() - started
    assert sorted(o.output for o in wave1) == ["researcher did: find A", "researcher did: find B"]
    assert max(s for s, _ in researcher.spans) < min(e for _, e in researcher.spans)
    assert elapsed < 0.4  # One after the other would take at least 0.4 s.
    assert writer.inputs == []  # c waits for a.

    (wave2,) = agent.run_steps_in_queue(task.task_id)
    assert wave2.output == "writer did: write C"
    (seen,) = writer.inputs
    assert seen is not None and seen.startswith("write C")
    assert "[a]\nresearcher did: find A" in seen
    assert "find B" not in seen  # Only its own dependencies' results.

    (final,) = agent.run_steps_in_queue(task.task_id)
    assert final.task_step.kind is StepKind.FINALIZE and final.is_last
    assert final.output == ANSWER
    assert agent.finalize_response(task.task_id).response == ANSWER
    assert llm.exhausted

    aggregate_request = llm.requests[1][-1].content
    for result in ("researcher did: find A", "researcher did: find B", "writer did: write C"):
        assert result in aggregate_request
    assert "Report on A and B" in "".join(m.content for m in llm.requests[1])


def test_a_skipped_item_lets_its_dependents_run_without_its_result():
    agent, _, researcher, writer = make_planner()
    task = agent.create_task("Report on A and B")
    agent.run_step(task.task_id)
    agent.skip_step(task.task_id, delegate(agent, task.task_id, "a").step_id)
    agent.run_steps_in_queue(task.task_id)  # b, and c (a was skipped, so c is ready)
    assert researcher.inputs == ["find B"]
    (seen,) = writer.inputs
    assert seen is not None and "[a]\n(no result: this item was skipped)" in seen
    (final,) = agent.run_steps_in_queue(task.task_id)
    assert final.is_last


def test_the_planning_request_lists_the_agents_and_the_format():
    agent, llm, *_ = make_planner()
    task = agent.create_task("Report on A and B")
    agent.run_step(task.task_id)
    system, *_, question = llm.requests[0]
    assert system.role == "system"
    assert "- researcher: Finds facts." in system.content
    assert "- writer: Writes prose." in system.content
    assert '"depends_on"' in system.content
    assert question == ChatMessage(role="user", content="Report on A and B")


def test_the_plan_is_stored_and_results_have_one_key_per_item():
    agent, *_ = make_planner()
    task = agent.create_task("Report")
    agent.run_until(task.task_id)
    state = agent.get_task(task.task_id).extra_state
    assert state["plan"] == PLAN
    assert state[result_key("a")] == "researcher did: find A"
    assert state[result_key("b")] == "researcher did: find B"
    assert state[result_key("c")] == "writer did: write C"


def test_the_sequential_runner_runs_the_plan_too_and_the_chat_remembers_the_answer():
    agent, llm, *_ = make_planner(runner=AgentRunner)
    response = agent.chat("Report on A and B")
    assert response.response == ANSWER
    assert [m.content for m in agent.memory.get_all()] == ["Report on A and B", ANSWER]
    assert llm.exhausted


def test_the_dag_has_the_plan_the_delegates_with_their_dependencies_and_the_aggregate():
    agent, *_ = make_planner()
    task = agent.create_task("Report")
    agent.run_until(task.task_id)
    steps = {s.kind: s for s in agent.get_steps(task.task_id) if s.kind is not StepKind.DELEGATE}
    delegates = {
        s.step_state["item"]: s.step_id
        for s in agent.get_steps(task.task_id)
        if s.kind is StepKind.DELEGATE
    }
    plan_id, final_id = steps[StepKind.PLAN].step_id, steps[StepKind.FINALIZE].step_id
    graph = build_dag(agent.get_task_state(task.task_id))

    assert graph.number_of_nodes() == 5
    assert graph.nodes[plan_id]["kind"] == "plan"
    assert graph.nodes[final_id]["kind"] == "finalize"
    assert all(graph.nodes[d]["kind"] == "delegate" for d in delegates.values())
    assert all(graph.nodes[n]["status"] == "completed" for n in graph.nodes)
    for step_id in delegates.values():
        assert graph.has_edge(plan_id, step_id)
        assert graph.has_edge(step_id, final_id)
    assert graph.edges[delegates["a"], delegates["c"]]["relation"] == "depends_on"
    assert not graph.has_edge(delegates["b"], delegates["c"])
    assert graph.nodes[final_id]["output"] == ANSWER


def test_a_sub_agent_with_tools_reports_its_tool_calls_usage_and_streams_them():
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def reply(text: str, prompt_tokens: int, completion_tokens: int) -> ChatResponse:
        usage = Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        return ChatResponse(message=ChatMessage(role="assistant", content=text), usage=usage)

    sub_llm = ScriptedLLM(
        [
            reply('Thought: add.\nAction: add\nAction Input: {"a": 2, "b": 3}', 10, 2),
            reply("Thought: done.\nAnswer: 5", 20, 3),
        ]
    )
    calculator = ReActAgentWorker.from_tools([FunctionTool.from_defaults(fn=add)], llm=sub_llm)
    plan = {"plan": [item("sum", "calculator", "What is 2 + 3?")]}
    llm = ScriptedLLM([json.dumps(plan), "The sum is 5."])
    worker = PlannerAgentWorker(llm, {"calculator": SubAgent("Does arithmetic.", calculator)})
    agent = AgentRunner(worker)
    task = agent.create_task("Add 2 and 3")
    agent.run_step(task.task_id)
    step = agent.get_upcoming_steps(task.task_id)[0]

    events = list(agent.stream_step(task.task_id))

    output = events[-1].output  # StepCompletedEvent
    assert output.output == "5"
    assert [(c.tool_name, c.content) for c in output.tool_calls] == [("add", "5")]
    assert output.usage == Usage(prompt_tokens=30, completion_tokens=5)
    finished = [e for e in events if isinstance(e, ToolCallFinishedEvent)]
    assert [(e.step_id, e.output.content) for e in finished] == [(step.step_id, "5")]
    assert any(isinstance(e, TokenDeltaEvent) and e.step_id == step.step_id for e in events)
    assert agent.run_until(task.task_id).reason == "last_step"
    assert [s.content for s in agent.finalize_response(task.task_id).sources] == ["5"]
    assert "5" in llm.requests[1][-1].content


# ---------------------------------------------------------------- a plan that is bad


BAD_REPLIES = {
    "invalid-json": 'Here you go: {"plan": [{"id": "a", "agent": "researcher",, }]}',
    "unknown-agent": json.dumps({"plan": [item("a", "painter", "paint")]}),
    "cycle": json.dumps(
        {"plan": [item("a", "writer", "x", deps=["b"]), item("b", "writer", "y", deps=["a"])]}
    ),
    "dangling": json.dumps({"plan": [item("a", "writer", "x", deps=["ghost"])]}),
    "not-json": "I would first research, then write.",
}


@pytest.mark.parametrize("reply", BAD_REPLIES.values(), ids=BAD_REPLIES.keys())
def test_a_bad_plan_fails_the_plan_step_with_the_raw_text_and_an_edit_fixes_it(reply):
    agent, llm, *_ = make_planner([reply, ANSWER])
    task = agent.create_task("Report")
    with pytest.raises(PlanError) as info:
        agent.run_step(task.task_id)
    assert reply in str(info.value)
    assert "corrected plan JSON" in str(info.value)
    assert info.value.raw_text == reply and info.value.problems  # The UI shows these.
    (failed,) = agent.get_upcoming_steps(task.task_id)
    assert failed.kind is StepKind.PLAN and failed.status is StepStatus.FAILED
    assert failed.error is not None and reply in failed.error
    assert "plan" not in agent.get_task(task.task_id).extra_state

    fixed = agent.run_step(task.task_id, input=PLAN)

    assert fixed.task_step.step_id == failed.step_id and fixed.task_step.proposed_input == "Report"
    assert fixed.output == PLAN
    assert len(llm.requests) == 1  # The person's plan needed no model call.
    assert agent.run_until(task.task_id).reason == "last_step"
    assert agent.finalize_response(task.task_id).response == ANSWER


def test_the_plan_can_be_given_as_json_text_and_invalid_text_is_checked_too():
    agent, llm, *_ = make_planner([ANSWER])
    task = agent.create_task("Report")
    with pytest.raises(PlanError, match="unknown agent 'painter'"):
        agent.run_step(task.task_id, input=json.dumps({"plan": [item("a", "painter", "x")]}))
    out = agent.run_step(task.task_id, input=f"```json\n{json.dumps(PLAN)}\n```")
    assert out.output == PLAN
    assert llm.requests == []


def test_an_edited_request_is_what_the_planner_is_asked():
    agent, llm, *_ = make_planner()
    task = agent.create_task("Report")
    agent.run_step(task.task_id, input="Report, but only on A and B")
    assert llm.requests[0][-1].content == "Report, but only on A and B"


def test_undoing_the_plan_drops_its_steps_and_a_new_plan_replaces_them():
    agent, *_ = make_planner()
    task = agent.create_task("Report")
    agent.run_step(task.task_id)
    agent.undo_step(task.task_id)
    assert [s.kind for s in agent.get_upcoming_steps(task.task_id)] == [StepKind.PLAN]
    agent.run_step(task.task_id, input={"plan": [item("only", "writer", "write it")]})
    upcoming = agent.get_upcoming_steps(task.task_id)
    assert [s.kind for s in upcoming] == [StepKind.DELEGATE, StepKind.FINALIZE]
    assert upcoming[0].input == {"item": "only", "agent": "writer", "prompt": "write it"}


# ------------------------------------------------------- steering the delegate steps


def test_editing_a_delegate_steps_prompt_changes_what_the_sub_agent_receives():
    agent, _, researcher, _ = make_planner()
    task = agent.create_task("Report")
    agent.run_step(task.task_id)
    step_a = delegate(agent, task.task_id, "a")
    edited = {"item": "a", "agent": "researcher", "prompt": "find A in the archive"}
    agent.edit_step(task.task_id, step_a.step_id, edited)
    agent.run_step(task.task_id, step_id=step_a.step_id)
    assert researcher.inputs == ["find A in the archive"]
    assert agent.get_task(task.task_id).extra_state[result_key("a")] == (
        "researcher did: find A in the archive"
    )


def test_a_delegate_step_takes_a_plain_text_prompt_and_a_different_agent():
    agent, _, researcher, writer = make_planner()
    task = agent.create_task("Report")
    agent.run_step(task.task_id)
    agent.run_step(task.task_id, step_id=delegate(agent, task.task_id, "a").step_id, input="A!")
    step_b = delegate(agent, task.task_id, "b")
    agent.run_step(task.task_id, step_id=step_b.step_id, input={"agent": "writer"})
    assert researcher.inputs == ["A!"]
    assert writer.inputs == ["find B"]


def test_a_delegate_step_edited_to_an_unknown_agent_fails_listing_the_agents():
    agent, *_ = make_planner()
    task = agent.create_task("Report")
    agent.run_step(task.task_id)
    step_a = delegate(agent, task.task_id, "a")
    with pytest.raises(StepError, match="unknown agent 'painter'; the agents are: researcher, wr"):
        agent.run_step(task.task_id, step_id=step_a.step_id, input={"agent": "painter"})
    out = agent.run_step(task.task_id, step_id=step_a.step_id, input={"agent": "writer"})
    assert out.output == "writer did: find A"


def test_undoing_a_delegate_step_and_re_running_it_feeds_the_new_result_onwards():
    agent, *_, writer = make_planner(runner=AgentRunner)
    task = agent.create_task("Report")
    agent.run_step(task.task_id)  # plan
    agent.run_step(task.task_id)  # a
    assert agent.get_task(task.task_id).extra_state[result_key("a")] == "researcher did: find A"

    again = agent.undo_step(task.task_id)

    assert again.kind is StepKind.DELEGATE and again.step_state["item"] == "a"
    assert result_key("a") not in agent.get_task(task.task_id).extra_state
    step_c = delegate(agent, task.task_id, "c")
    assert again.step_id in step_c.depends_on  # c now waits for the re-run.
    agent.run_step(task.task_id, input="find A, twice as hard")
    agent.run_step(task.task_id)  # b
    agent.run_step(task.task_id, step_id=step_c.step_id)
    assert "[a]\nresearcher did: find A, twice as hard" in (writer.inputs[0] or "")
    assert agent.run_until(task.task_id).reason == "last_step"


def test_a_sub_agent_failure_fails_only_its_delegate_step_naming_item_and_agent():
    agent, _, researcher, _ = make_planner(researcher=RecordingAgent("researcher", fail=True))
    task = agent.create_task("Report")
    agent.run_step(task.task_id)
    with pytest.raises(StepError) as info:
        agent.run_steps_in_queue(task.task_id)
    message = str(info.value)
    assert "plan item 'a' (agent 'researcher') failed" in message
    assert "RuntimeError: researcher is broken" in message
    researcher.fail = False
    outputs = agent.run_steps_in_queue(task.task_id)
    assert sorted(o.output for o in outputs) == [
        "researcher did: find A",
        "researcher did: find B",
    ]


def test_a_sub_agent_that_never_finishes_fails_after_max_sub_steps():
    endless = EndlessAgent()
    agent, *_ = make_planner(writer=endless, max_sub_steps=3)
    task = agent.create_task("Report")
    agent.run_step(task.task_id)
    step_b = delegate(agent, task.task_id, "b")
    with pytest.raises(StepError, match=r"'b' \(agent 'writer'\) did not finish within 3 steps"):
        agent.run_step(task.task_id, step_id=step_b.step_id, input={"agent": "writer"})


def test_the_aggregate_step_reads_a_note_a_person_gave_it():
    agent, llm, *_ = make_planner(runner=AgentRunner)
    task = agent.create_task("Report")
    for _ in range(4):
        agent.run_step(task.task_id)
    out = agent.run_step(task.task_id, input="Answer in one sentence.")
    assert out.is_last
    assert llm.requests[-1][-1].content.endswith(
        "Note from the user: Answer in one sentence.\n\n"
        "Combine these into the final answer to my request."
    )


# ------------------------------------------------------------ preview and storage


def test_preview_shows_the_planning_call_then_the_aggregating_call():
    agent, llm, *_ = make_planner(runner=AgentRunner)
    task = agent.create_task("Report")
    before = agent.preview_messages(task.task_id)
    agent.run_step(task.task_id)
    assert before == llm.requests[0]
    for _ in range(3):
        agent.run_step(task.task_id)
    preview = agent.preview_messages(task.task_id)
    agent.run_step(task.task_id)
    assert preview == llm.requests[1]


def test_a_planner_task_continues_after_a_restart(tmp_path):
    path = tmp_path / "stepwise.db"
    llm = ScriptedLLM([json.dumps(PLAN), ANSWER])
    agents = {
        "researcher": SubAgent("Finds facts.", RecordingAgent("researcher")),
        "writer": SubAgent("Writes prose.", RecordingAgent("writer")),
    }
    first = ParallelAgentRunner(PlannerAgentWorker(llm, agents), store=SQLiteStore(path))
    task = first.create_task("Report")
    first.run_steps_in_queue(task.task_id)
    first.run_steps_in_queue(task.task_id)

    second = ParallelAgentRunner(PlannerAgentWorker(llm, agents), store=SQLiteStore(path))
    assert second.run_until(task.task_id).reason == "last_step"
    assert second.finalize_response(task.task_id).response == ANSWER
    assert llm.exhausted


class FileWritingAgent(CustomSimpleAgentWorker):
    """Writes its input to a file, journaling the write as a tool would."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.workspaces: list[str] = []

    def _run_step(self, state: dict[str, Any], task: Task, input: str | None) -> tuple[str, bool]:
        context = current_step()
        assert context is not None
        self.workspaces.append(context.workspace_id)
        path = self.folder / "notes.txt"
        record_effect(FileWriteEffect.before_writing(path))
        path.write_text(input or "")
        return "written", True


def test_undoing_a_delegate_step_reverts_the_files_its_sub_agent_wrote(tmp_path):
    writer = FileWritingAgent(tmp_path)
    agent, *_ = make_planner([json.dumps({"plan": [item("w", "writer", "hello")]})], writer=writer)
    task = agent.create_task("Write hello")
    agent.run_step(task.task_id)
    out = agent.run_step(task.task_id)
    assert (tmp_path / "notes.txt").read_text() == "hello"
    assert [e.kind for e in out.effects] == ["file_write"]
    assert writer.workspaces == [task.task_id]  # The sub-agent works in the task's workspace.
    agent.undo_step(task.task_id)
    assert not (tmp_path / "notes.txt").exists()


# ------------------------------------------------------------------ construction


def test_the_planner_explains_what_it_needs():
    researcher = SubAgent("Finds facts.", RecordingAgent("r"))
    with pytest.raises(UserError, match="at least one sub-agent"):
        PlannerAgentWorker(ScriptedLLM([]), {})
    with pytest.raises(UserError, match=r"wrap it as SubAgent\(description=..., worker=...\)"):
        PlannerAgentWorker(ScriptedLLM([]), {"r": RecordingAgent("r")})  # type: ignore[dict-item]
    with pytest.raises(UserError, match="needs llm="):
        PlannerAgentWorker.from_agents({"r": researcher})
    worker = PlannerAgentWorker.from_agents({"r": researcher}, llm=ScriptedLLM([]))
    assert worker.agents == {"r": researcher}


def test_the_planning_reply_streams_as_token_deltas():
    agent, *_ = make_planner(runner=AgentRunner)
    task = agent.create_task("Report")
    events = list(agent.stream_step(task.task_id))
    deltas = "".join(e.delta for e in events if isinstance(e, TokenDeltaEvent))
    assert deltas == PLAN_REPLY
    assert events[-1].output.output == PLAN
