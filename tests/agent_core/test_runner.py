"""AgentRunner: the seed's usage pattern, steering, abandon, typed errors, chat, streaming."""

from __future__ import annotations

import asyncio

import pytest

from agent_core import AgentRunner, StepKind, StepStatus, TaskStatus
from agent_core.errors import (
    InputTooLargeError,
    NothingToRunError,
    StepError,
    StepNotFoundError,
    TaskNotActiveError,
    TaskNotFoundError,
    UserError,
)
from agent_core.events import (
    StepCompletedEvent,
    StepStartedEvent,
    TokenDeltaEvent,
    ToolCallFinishedEvent,
    ToolCallStartedEvent,
)

from .conftest import CALLS, SEED_REPLIES, action, answer

QUESTION = "What is (121 * 3) + 42?"


def test_seed_usage_pattern_answers_405_step_by_step(make_agent):
    agent, llm = make_agent()
    task = agent.create_task(QUESTION)
    assert CALLS == []  # Creating a task runs nothing.

    out = agent.run_step(task.task_id)
    assert not out.is_last
    assert [c.content for c in out.tool_calls] == ["363"]
    out = agent.run_step(task.task_id)
    assert [c.content for c in out.tool_calls] == ["405"]
    out = agent.run_step(task.task_id)
    assert out.is_last and out.output == "405"

    response = agent.finalize_response(task.task_id)
    assert str(response) == "405"
    assert [s.tool_name for s in response.sources] == ["multiply", "add"]
    assert CALLS == [("multiply", 121, 3), ("add", 363, 42)]
    assert llm.exhausted
    assert agent.get_task(task.task_id).status is TaskStatus.COMPLETED
    assert [m.content for m in agent.memory.get_all()] == [QUESTION, "405"]


def test_the_model_sees_the_question_its_replies_and_the_observations(make_agent):
    agent, llm = make_agent()
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    agent.run_step(task.task_id)
    second_request = llm.requests[1]
    assert second_request[0].role == "system" and "multiply" in second_request[0].content
    assert [m.role for m in second_request[1:]] == ["user", "assistant", "user"]
    assert second_request[1].content == QUESTION
    assert second_request[3].content == "Observation: 363"
    # The preview is what the next step will send.
    assert agent.preview_messages(task.task_id)[-1].content == "Observation: 405"


def test_steering_input_is_what_the_model_saw_and_both_inputs_are_recorded(make_agent):
    agent, llm = make_agent()
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    out = agent.run_step(task.task_id, input="Use add, not sum")
    assert llm.requests[1][-1].content == "Use add, not sum"
    step = out.task_step
    assert step.edited and step.proposed_input is None and step.input == "Use add, not sum"


def test_edit_step_changes_an_upcoming_step_without_running_it(make_agent):
    agent, llm = make_agent()
    task = agent.create_task(QUESTION)
    first = agent.get_upcoming_steps(task.task_id)[0]
    edited = agent.edit_step(task.task_id, first.step_id, "What is (121 * 3) + 42? Show work.")
    assert edited.status is StepStatus.UPCOMING and llm.requests == []
    agent.run_step(task.task_id)
    assert llm.requests[0][1].content.endswith("Show work.")
    ran = agent.get_step(task.task_id, first.step_id)
    assert ran.proposed_input == QUESTION and ran.edited


def test_abandon_stops_the_task_and_leaves_shared_memory_alone(make_agent):
    agent, _ = make_agent([*SEED_REPLIES, action("add", '{"a": 1, "b": 1}')])
    agent.chat(QUESTION)
    before = agent.memory.get_all()
    assert len(before) == 2
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    agent.abandon_task(task.task_id)
    assert agent.get_task(task.task_id).status is TaskStatus.ABANDONED
    with pytest.raises(TaskNotActiveError, match="abandoned"):
        agent.run_step(task.task_id)
    assert agent.memory.get_all() == before
    assert len(agent.get_completed_steps(task.task_id)) == 1  # Its steps stay visible.


def test_chat_runs_to_the_end_and_merges_question_and_answer(make_agent):
    agent, _ = make_agent()
    response = agent.chat(QUESTION)
    assert response.response == "405"
    assert agent.get_completed_tasks()[0].task_id == response.task_id
    assert [m.role for m in agent.memory.get_all()] == ["user", "assistant"]


def test_a_second_task_sees_the_first_conversation(make_agent):
    agent, llm = make_agent([*SEED_REPLIES, answer("It was 405.")])
    agent.chat(QUESTION)
    task = agent.create_task("What did you say?")
    agent.run_step(task.task_id)
    contents = [m.content for m in llm.requests[-1]]
    assert contents[1:4] == [QUESTION, "405", "What did you say?"]


async def test_async_twins_work_inside_a_running_loop(make_agent):
    agent, _ = make_agent()
    task = agent.create_task(QUESTION)
    out = await agent.arun_step(task.task_id)
    assert out.tool_calls[0].content == "363"
    with pytest.raises(UserError, match="await arun_step"):
        agent.run_step(task.task_id)
    result = await agent.arun_until(task.task_id)
    assert result.reason == "last_step" and result.outputs[-1].output == "405"


def test_unknown_ids_give_typed_errors_that_name_them(make_agent):
    agent, _ = make_agent()
    with pytest.raises(TaskNotFoundError, match="nope"):
        agent.run_step("nope")
    task = agent.create_task(QUESTION)
    with pytest.raises(StepNotFoundError, match="missing-step"):
        agent.run_step(task.task_id, step_id="missing-step")
    with pytest.raises(TaskNotFoundError):
        agent.get_task("nope")


def test_running_a_finished_task_says_where_it_ended(make_agent):
    agent, _ = make_agent()
    task = agent.create_task(QUESTION)
    agent.run_until(task.task_id)
    with pytest.raises(NothingToRunError, match="finished at step 3"):
        agent.run_step(task.task_id)
    agent.finalize_response(task.task_id)
    with pytest.raises(TaskNotActiveError, match="finished"):
        agent.run_step(task.task_id)


def test_finalize_before_the_last_step_is_refused(make_agent):
    agent, _ = make_agent()
    task = agent.create_task(QUESTION)
    with pytest.raises(NothingToRunError, match="has not reached its last step"):
        agent.finalize_response(task.task_id)
    agent.run_step(task.task_id)
    with pytest.raises(NothingToRunError, match="run it further"):
        agent.finalize_response(task.task_id)


def test_a_one_megabyte_input_is_refused_and_nothing_is_lost(make_agent):
    agent, _ = make_agent()
    huge = "x" * 1_000_000
    with pytest.raises(InputTooLargeError, match="limit is 100,000"):
        agent.create_task(huge)
    assert agent.list_tasks() == []
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    with pytest.raises(InputTooLargeError):
        agent.run_step(task.task_id, input=huge)
    with pytest.raises(InputTooLargeError):
        agent.add_feedback(task.task_id, huge)
    upcoming = agent.get_upcoming_steps(task.task_id)[0]
    assert upcoming.status is StepStatus.UPCOMING and upcoming.attempts == 0
    assert len(agent.get_completed_steps(task.task_id)) == 1


def test_a_wrong_input_type_is_a_user_error(make_agent):
    agent, _ = make_agent()
    task = agent.create_task(QUESTION)
    with pytest.raises(UserError, match="must be a str, a dict"):
        agent.run_step(task.task_id, input=42)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="must be a str"):
        agent.create_task(["not", "text"])  # type: ignore[arg-type]


def test_malformed_model_output_becomes_an_observation_the_model_sees(make_agent):
    replies = ["Thought: hmm\nAction: add\nAction Input: not json", answer("3")]
    agent, llm = make_agent(replies)
    task = agent.create_task("1 + 2?")
    out = agent.run_step(task.task_id)
    assert not out.is_last and out.task_step.status is StepStatus.COMPLETED
    agent.run_step(task.task_id)
    observation = llm.requests[1][-1].content
    assert observation.startswith("Observation: Error:") and "Action Input" in observation
    assert CALLS == []


def test_unknown_tool_and_wrong_argument_types_are_observations(make_agent):
    replies = [
        action("sum", '{"a": 1, "b": 2}'),
        action("add", '{"a": "one", "b": 2}'),
        answer("3"),
    ]
    agent, llm = make_agent(replies)
    task = agent.create_task("1 + 2?")
    first = agent.run_step(task.task_id)
    assert first.tool_calls[0].is_error
    second = agent.run_step(task.task_id)
    assert second.tool_calls[0].is_error
    agent.run_step(task.task_id)
    assert "no tool named 'sum'" in llm.requests[1][-1].content
    assert "multiply, add" in llm.requests[1][-1].content
    assert "a:" in llm.requests[2][-1].content  # Names the bad argument.
    assert CALLS == []


def test_a_failed_step_is_recorded_and_can_be_retried(make_agent):
    agent, llm = make_agent(SEED_REPLIES[:1])
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    memory_before = agent.get_task(task.task_id).memory.get_all()
    with pytest.raises(StepError, match="no reply left") as caught:
        agent.run_step(task.task_id)
    failed = agent.get_step(task.task_id, caught.value.step_id)
    assert failed.status is StepStatus.FAILED and "no reply left" in (failed.error or "")
    assert agent.get_task(task.task_id).status is TaskStatus.FAILED
    assert agent.get_task(task.task_id).memory.get_all() == memory_before
    assert len(agent.get_completed_steps(task.task_id)) == 1

    llm.add_replies(*SEED_REPLIES[1:])
    out = agent.run_step(task.task_id)
    assert out.task_step.step_id == failed.step_id and out.task_step.attempts == 2
    assert agent.get_task(task.task_id).status is TaskStatus.ACTIVE


def test_max_iterations_fails_the_step_with_a_clear_error(make_agent):
    loop = [action("add", '{"a": 1, "b": 1}')] * 3
    agent, _ = make_agent(loop, worker_kwargs={"max_iterations": 2})
    task = agent.create_task("loop forever")
    agent.run_step(task.task_id)
    agent.run_step(task.task_id)
    with pytest.raises(StepError, match="max_iterations=2"):
        agent.run_step(task.task_id)


def test_add_feedback_is_a_human_step_the_model_sees_next(make_agent):
    agent, llm = make_agent()
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    human = agent.add_feedback(task.task_id, "Remember to add 42.")
    assert human.kind is StepKind.HUMAN and human.status is StepStatus.COMPLETED
    agent.run_step(task.task_id)
    assert llm.requests[1][-1].content == "Remember to add 42."
    upcoming = agent.get_upcoming_steps(task.task_id)[0]
    assert human.step_id not in upcoming.prev_step_ids  # Only the step it preceded links it.
    ran = agent.get_completed_steps(task.task_id)[-1].task_step
    assert human.step_id in ran.prev_step_ids


def test_undoing_feedback_removes_the_message(make_agent):
    agent, _ = make_agent()
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    before = agent.get_task(task.task_id).memory.get_all()
    human = agent.add_feedback(task.task_id, "Remember to add 42.")
    agent.undo_step(task.task_id)
    assert agent.get_task(task.task_id).memory.get_all() == before
    assert agent.get_step(task.task_id, human.step_id).status is StepStatus.UNDONE
    assert all(human.step_id not in s.prev_step_ids for s in agent.get_upcoming_steps(task.task_id))


def test_delete_task_forgets_it(make_agent):
    agent, _ = make_agent()
    task = agent.create_task(QUESTION)
    agent.delete_task(task.task_id)
    assert agent.list_tasks() == []
    with pytest.raises(TaskNotFoundError):
        agent.get_task(task.task_id)


def test_delete_on_finish_returns_the_response_before_deleting(make_agent):
    agent, _ = make_agent(delete_task_on_finish=True)
    assert agent.chat(QUESTION).response == "405"
    assert agent.list_tasks() == []


def test_stream_step_yields_typed_events_in_order(make_agent):
    agent, _ = make_agent()
    task = agent.create_task(QUESTION)
    events = list(agent.stream_step(task.task_id))
    assert isinstance(events[0], StepStartedEvent)
    assert isinstance(events[-1], StepCompletedEvent)
    deltas = "".join(e.delta for e in events if isinstance(e, TokenDeltaEvent))
    assert deltas == SEED_REPLIES[0]
    kinds = [type(e) for e in events if not isinstance(e, TokenDeltaEvent)]
    assert kinds == [
        StepStartedEvent,
        ToolCallStartedEvent,
        ToolCallFinishedEvent,
        StepCompletedEvent,
    ]
    assert events[-1].output.tool_calls[0].content == "363"
    assert len(agent.get_completed_steps(task.task_id)) == 1


async def test_astream_step_reports_a_failure_then_raises(make_agent):
    agent, _ = make_agent([])
    task = agent.create_task(QUESTION)
    seen = []
    with pytest.raises(StepError):
        async for event in agent.astream_step(task.task_id):
            seen.append(event.kind)
    assert seen[0] == "step_started" and seen[-1] == "step_failed"


def test_a_worker_without_an_llm_is_refused(tools):
    from agent_core.workers import ReActAgentWorker

    with pytest.raises(UserError, match="needs llm"):
        ReActAgentWorker.from_tools(tools)


def test_runner_survives_a_cancelled_step(make_agent):
    from agent_core.llms import FunctionLLM
    from agent_core.workers import ReActAgentWorker

    async def slow(messages, tools):
        await asyncio.sleep(10)
        return "never"

    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=FunctionLLM(slow)))
    task = agent.create_task("hi")

    async def cancel_it():
        job = asyncio.ensure_future(agent.arun_step(task.task_id))
        await asyncio.sleep(0.05)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    asyncio.run(cancel_it())
    step = agent.get_upcoming_steps(task.task_id)[0]
    assert step.status is StepStatus.UPCOMING and step.claimed_by is None


def test_a_quick_step_commits_once_and_a_slow_one_is_marked_running_in_the_store():
    from agent_core.llms import FunctionLLM
    from agent_core.store import InMemoryStore
    from agent_core.workers import ReActAgentWorker

    store = InMemoryStore()
    commits = []
    commit = store.commit
    store.commit = lambda change: (commits.append(change), commit(change))  # type: ignore[method-assign]
    seen_while_running = []

    async def reply(messages, tools):
        if len(messages) > 2:  # The second step is slow: it outlives the claim delay.
            await asyncio.sleep(0.2)
            seen_while_running.append(store.load_task(task.task_id).steps[step_id].status)
        return answer("done") if len(messages) > 2 else action("add", '{"a": 1, "b": 2}')

    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=FunctionLLM(reply)), store=store)
    task = agent.create_task("hi")
    commits.clear()
    agent.run_step(task.task_id)
    assert len(commits) == 1  # Claim and completion in one write.

    step_id = agent.get_upcoming_steps(task.task_id)[0].step_id
    commits.clear()
    agent.run_step(task.task_id)
    assert seen_while_running == [StepStatus.RUNNING]
    assert len(commits) == 2


def test_without_a_conversation_tasks_share_no_history(make_agent):
    agent, llm = make_agent([*SEED_REPLIES, answer("again")], conversation_id=None)
    agent.chat(QUESTION)
    assert agent.memory.get_all() == []
    task = agent.create_task("second")
    agent.run_step(task.task_id)
    assert [m.content for m in llm.requests[-1][1:]] == ["second"]
