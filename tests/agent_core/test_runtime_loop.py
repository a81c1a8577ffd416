"""The runtime loop: any thread, any loop, interrupts, and steps that outlive their caller."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from typing import Any

import pytest

from agent_core import AgentRunner, StepStatus
from agent_core.errors import StepError, UserError
from agent_core.llms import FunctionLLM, ScriptedLLM
from agent_core.llms.base import ChatMessage, ToolSpec
from agent_core.runtime.loop import run_sync, runtime_loop
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker

ANSWER = "Thought: done.\nAnswer: 42"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class SlowModel:
    """Answers after `gate` opens (or at once when it is open); records what happened."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.gate = threading.Event()
        self.finished: list[str] = []

    async def reply(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        self.started.set()
        deadline = time.monotonic() + 20  # A test that never opens the gate fails, not hangs.
        while not self.gate.is_set():
            assert time.monotonic() < deadline, "the test never opened the gate"
            await asyncio.sleep(0.005)
        self.finished.append(messages[-1].content)
        return ANSWER


def slow_runner() -> tuple[AgentRunner, SlowModel]:
    model = SlowModel()
    worker = ReActAgentWorker.from_tools([], llm=FunctionLLM(model.reply))
    return AgentRunner(worker), model


def add_then_slow_runner() -> tuple[AgentRunner, SlowModel]:
    """An agent whose first step calls `add` at once and whose next step waits on the gate."""
    model = SlowModel()
    replies = iter(['Thought: add.\nAction: add\nAction Input: {"a": 1, "b": 2}'])

    async def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        return next(replies, None) or await model.reply(messages, tools)

    tools = [FunctionTool.from_defaults(add)]
    return AgentRunner(ReActAgentWorker.from_tools(tools, llm=FunctionLLM(reply))), model


def test_steps_run_on_one_loop_whichever_thread_or_loop_calls() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    def remember_loop(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        loops.append(asyncio.get_running_loop())
        return ANSWER

    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=FunctionLLM(remember_loop)))
    for _ in range(5):
        thread = threading.Thread(target=lambda: agent.run_step(agent.create_task("q").task_id))
        thread.start()
        thread.join()
        asyncio.run(agent.arun_step(agent.create_task("q").task_id))

    assert len(loops) == 10
    assert set(loops) == {runtime_loop()}


def test_a_sync_twin_inside_a_running_loop_names_the_async_twin() -> None:
    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM([ANSWER])))
    task_id = agent.create_task("q").task_id

    async def call_sync() -> None:
        agent.run_step(task_id)

    with pytest.raises(UserError, match=r"await arun_step"):
        asyncio.run(call_sync())
    assert agent.get_upcoming_steps(task_id)[0].status is StepStatus.UPCOMING


def test_a_tool_in_a_worker_thread_may_not_call_a_sync_twin() -> None:
    agent: AgentRunner

    def nested(task_id: str) -> str:
        """Run another step from inside a tool."""
        agent.run_step(task_id)
        return "ran"

    llm = ScriptedLLM(
        [
            'Thought: nest.\nAction: nested\nAction Input: {"task_id": "%s"}',
            ANSWER,
        ]
    )
    agent = AgentRunner(ReActAgentWorker.from_tools([FunctionTool.from_defaults(nested)], llm=llm))
    other = agent.create_task("other").task_id
    llm._replies[0] = llm._replies[0] % other  # type: ignore[attr-defined]
    task_id = agent.create_task("q").task_id

    out = agent.run_step(task_id)

    observation = out.tool_calls[0]
    assert observation.is_error
    assert "await arun_step" in observation.content
    assert agent.get_upcoming_steps(other)[0].status is StepStatus.UPCOMING


@pytest.mark.usefixtures("ctrl_c")
def test_an_interrupted_run_step_is_cancelled_and_drained_not_resumed_later() -> None:
    agent, model = slow_runner()
    task_id = agent.create_task("first").task_id
    main = threading.main_thread().ident
    assert main is not None and threading.get_ident() == main
    # A real SIGINT to the main thread, as Ctrl-C sends: it interrupts the blocked wait.
    timer = threading.Timer(
        0.0, lambda: (model.started.wait(5), signal.pthread_kill(main, signal.SIGINT))
    )
    timer.start()

    with pytest.raises(KeyboardInterrupt):
        agent.run_step(task_id)
    timer.join()

    # Drained before run_step returned: the step is back to upcoming, untouched.
    step = agent.get_upcoming_steps(task_id)[0]
    assert step.status is StepStatus.UPCOMING and step.error is None
    model.gate.set()
    # An unrelated call later does not resume the interrupted coroutine.
    other = agent.create_task("second").task_id
    agent.run_step(other)
    assert model.finished == ["second"]
    assert agent.run_step(task_id).is_last


def test_a_cancelled_foreign_await_cancels_the_step_and_waits_for_it() -> None:
    agent, model = slow_runner()
    task_id = agent.create_task("q").task_id

    async def impatient() -> None:
        await asyncio.wait_for(agent.arun_step(task_id), timeout=0.05)

    with pytest.raises(TimeoutError):
        asyncio.run(impatient())

    assert agent.get_upcoming_steps(task_id)[0].status is StepStatus.UPCOMING
    assert agent.running_steps(task_id) == []
    model.gate.set()
    assert agent.run_step(task_id).is_last


def test_a_started_step_outlives_the_thread_that_started_it() -> None:
    agent, model = slow_runner()
    task_id = agent.create_task("q").task_id
    runs: list[Any] = []
    starter = threading.Thread(target=lambda: runs.append(agent.start_step(task_id)))
    starter.start()
    starter.join()

    (run,) = runs
    assert agent.running_steps(task_id) == [run] and not run.done
    model.gate.set()
    output = run.result(timeout=5)

    assert output.is_last and run.done
    assert agent.running_steps(task_id) == []
    assert agent.get_completed_steps(task_id)[-1].task_step.step_id == run.step_id


def test_a_late_watcher_sees_the_streamed_text_so_far_then_the_end() -> None:
    reply = "Thought: stream me.\nAnswer: all the words"
    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM([reply])))
    task_id = agent.create_task("q").task_id

    run = agent.start_step(task_id)
    run.wait(5)
    kinds = [event.kind for event in run.watch(timeout=5)]

    assert kinds[0] == "step_started" and kinds[-1] == "step_completed"
    assert "token_delta" in kinds
    assert run.text == reply


def test_start_step_raises_at_once_when_the_step_cannot_start() -> None:
    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM([])))
    with pytest.raises(UserError, match="no task with id"):
        agent.start_step("missing")


def test_stop_records_the_step_as_failed_keeps_the_rest_and_it_can_run_again() -> None:
    agent, model = add_then_slow_runner()
    task_id = agent.create_task("q").task_id
    agent.run_step(task_id)  # completed: it called add
    run = agent.start_step(task_id)
    assert model.started.wait(5)

    stopped = agent.cancel_step(task_id, run.step_id)

    assert stopped.status is StepStatus.FAILED and "stopped by you" in (stopped.error or "")
    with pytest.raises(StepError, match="stopped by you"):
        run.result(timeout=5)
    assert len(agent.get_completed_steps(task_id)) == 1
    model.gate.set()
    assert agent.run_step(task_id, step_id=run.step_id).is_last


def test_stopping_a_step_that_is_not_running_says_so() -> None:
    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM([])))
    task_id = agent.create_task("q").task_id
    step_id = agent.get_upcoming_steps(task_id)[0].step_id
    with pytest.raises(UserError, match="only a running step can be stopped"):
        agent.cancel_step(task_id, step_id)


def test_run_sync_refuses_on_the_runtime_loop_itself() -> None:
    async def inner() -> None:
        async def nothing() -> None:
            return None

        run_sync(nothing(), name="run_step")

    with pytest.raises(UserError, match="await arun_step"):
        run_sync(inner(), name="outer")


def test_stream_step_from_a_consumer_that_stops_early_still_commits() -> None:
    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM([ANSWER])))
    task_id = agent.create_task("q").task_id
    events = agent.stream_step(task_id)
    assert next(events).kind == "step_started"
    events.close()
    deadline = time.monotonic() + 5
    while agent.running_steps(task_id) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert agent.get_completed_steps(task_id)[-1].is_last


def test_start_until_streams_its_steps_and_cancelling_it_returns_the_step() -> None:
    agent, model = add_then_slow_runner()
    task_id = agent.create_task("q").task_id

    job = agent.start_until(task_id)
    assert model.started.wait(5)  # The first step ran; the second waits on the model.
    (run,) = agent.running_steps(task_id)
    assert run.events_since(0, timeout=0)[0].kind == "step_started"  # Watchable.
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        job.result(timeout=5)

    assert len(agent.get_completed_steps(task_id)) == 1
    step = agent.get_upcoming_steps(task_id)[0]
    assert step.step_id == run.step_id and step.status is StepStatus.UPCOMING
    model.gate.set()
    assert agent.start_until(task_id).result(timeout=5).reason == "last_step"


def test_run_until_resume_runs_past_the_breakpoint_it_stands_on() -> None:
    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM([ANSWER])))
    task_id = agent.create_task("q").task_id

    def everywhere(state: object, step: object) -> str:
        return "breakpoint: on every step"

    assert agent.run_until(task_id, stop=everywhere).reason == "breakpoint"
    assert agent.run_until(task_id, stop=everywhere, resume=True).reason == "last_step"
