"""The runner over real sockets, driven from many threads and event loops, as the app drives it.

Each Streamlit rerun runs on a new thread. Steps run on the runtime's one loop, so the model
client and its keep-alive pool outlive every caller: these tests step agents whose models are
`OpenAILLM` and `AnthropicLLM` talking to `tests.llm_servers` over TCP, from fresh threads,
from `asyncio.run`, two at once, streamed, started and stopped, and interrupted.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agent_core import AgentRunner, StepKind, StepRun, StepStatus, TaskStepOutput
from agent_core.errors import StepError
from agent_core.llms.anthropic import AnthropicLLM
from agent_core.llms.base import LLM
from agent_core.llms.openai import OpenAILLM
from agent_core.tools import FunctionTool
from agent_core.workers import FunctionCallingAgentWorker, ReActAgentWorker
from tests.llm_servers import (
    AnthropicServer,
    LoopbackModelServer,
    OpenAIServer,
    Policy,
    Reply,
    ReplyToolCall,
    default_policy,
    react_policy,
)

QUESTION = "What is 1 + 2?"
SLOW_TEXT = "Let me think about this for quite a long while before I answer you."
WAIT_S = 5.0
"""Upper bound on any wait; a passing test never comes near it."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@dataclass
class Agents:
    """A loopback server, and runners of one kind of agent whose model talks to it."""

    server: LoopbackModelServer
    kind: str
    answer: str
    """The last step's output for `QUESTION` under the server's default script."""
    policy: Policy

    def model(self) -> LLM:
        if isinstance(self.server, OpenAIServer):
            return OpenAILLM(
                model="m", base_url=self.server.url + "/v1", api_key="k", max_retries=0
            )
        return AnthropicLLM(model="m", base_url=self.server.url, api_key="k", max_retries=0)

    def runner(self) -> AgentRunner:
        tools = [FunctionTool.from_defaults(fn=add)]
        if self.kind == "function_calling":
            return AgentRunner(FunctionCallingAgentWorker(tools, self.model()))
        return AgentRunner(ReActAgentWorker.from_tools(tools, llm=self.model()))

    def tool_call_reply(self) -> Reply:
        """The reply that makes the agent call `add(1, 2)`."""
        if self.kind == "function_calling":
            return Reply(tool_calls=[ReplyToolCall("add", {"a": 1, "b": 2})])
        return Reply(text='Thought: add.\nAction: add\nAction Input: {"a": 1, "b": 2}')

    def final_reply(self, text: str, **kwargs: Any) -> Reply:
        """A reply that ends the task with `final_output(text)`."""
        if self.kind == "function_calling":
            return Reply(text=text, **kwargs)
        return Reply(text=f"Thought: {text}\nAnswer: 3", **kwargs)

    def final_output(self, text: str) -> str:
        """The last step's output when the model answered with `final_reply(text)`."""
        return text if self.kind == "function_calling" else "3"


@pytest.fixture(
    params=[
        ("function_calling", "openai"),
        ("function_calling", "anthropic"),
        ("react", "openai"),
        ("react", "anthropic"),
    ],
    ids=lambda p: "-".join(p),
)
def agents(request: pytest.FixtureRequest) -> Iterator[Agents]:
    kind, provider = request.param
    policy = default_policy if kind == "function_calling" else react_policy
    answer = "The answer is 3." if kind == "function_calling" else "3"
    server_type = OpenAIServer if provider == "openai" else AnthropicServer
    with server_type(policy=policy, api_key="k") as server:
        yield Agents(server, kind, answer, policy)


def gated(policy: Policy) -> tuple[Policy, threading.Event]:
    """`policy`, answering only once the returned event is set."""
    gate = threading.Event()

    def wait_then_answer(body: dict[str, Any]) -> Reply | str:
        assert gate.wait(WAIT_S), "the test never opened the gate"
        return policy(body)

    return wait_then_answer, gate


def run_to_the_last_reasoning_step(runner: AgentRunner, task_id: str) -> None:
    """Run the task's steps up to (not including) the reasoning step that answers."""
    runner.run_step(task_id)  # The model calls add.
    while runner.get_upcoming_steps(task_id)[0].kind is not StepKind.LLM:
        runner.run_step(task_id)  # The function-calling agent's tool step.


def in_a_thread(action: Callable[[], Any]) -> Any:
    """Run `action` on a fresh thread, as a Streamlit rerun would; return or raise its result."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(("ok", action()))
        except BaseException as exc:
            outcome.append(("error", exc))

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    (status, value), *_ = outcome
    if status == "error":
        raise value
    return value


# --- stepping from many threads and loops ------------------------------------------------------


def test_one_runner_stepped_from_ten_fresh_threads_reuses_one_connection(agents: Agents) -> None:
    runner = agents.runner()
    tasks: list[str] = []

    def ready_task() -> str:
        if not tasks or not runner.get_upcoming_steps(tasks[-1]):
            tasks.append(runner.create_task(QUESTION).task_id)
        return tasks[-1]

    outputs: list[TaskStepOutput] = []
    for _ in range(10):
        outputs.append(in_a_thread(lambda: runner.run_step(ready_task())))
        outputs.append(asyncio.run(runner.arun_step(ready_task())))

    assert len(outputs) == 20
    finished = [t for t in tasks if not runner.get_upcoming_steps(t)]
    assert len(finished) >= 6
    for task_id in finished:
        last = runner.get_completed_steps(task_id)[-1]
        assert last.is_last and last.output == agents.answer
    server = agents.server
    assert len(server.model_requests) >= 12
    assert server.connections_accepted == 1  # Every step ran on one loop: one pooled socket.


def test_two_runners_step_at_the_same_time_from_two_threads(agents: Agents) -> None:
    both_asked = threading.Barrier(2, timeout=2)
    first_calls = iter(range(2))

    def first_calls_wait_for_each_other(body: dict[str, Any]) -> Reply | str:
        if next(first_calls, None) is not None:
            both_asked.wait()  # Both runners' first calls are open before either is answered.
        return agents.policy(body)

    agents.server.script(policy=first_calls_wait_for_each_other)
    runners = [agents.runner(), agents.runner()]
    task_ids = [runner.create_task(QUESTION).task_id for runner in runners]
    answers: dict[int, Any] = {}
    errors: list[BaseException] = []

    def run_task(index: int) -> None:
        runner, task_id = runners[index], task_ids[index]
        try:
            while not (output := runner.run_step(task_id)).is_last:
                pass
            answers[index] = output.output
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run_task, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert answers == {0: agents.answer, 1: agents.answer}
    assert len(agents.server.model_requests) == 4


def test_stream_step_yields_the_servers_text_as_token_deltas(agents: Agents) -> None:
    runner = agents.runner()
    task_id = runner.create_task(QUESTION).task_id
    kinds: list[str] = []
    streamed = ""

    while runner.get_upcoming_steps(task_id):
        events = list(runner.stream_step(task_id))
        step_kinds = [event.kind for event in events]
        assert step_kinds[0] == "step_started" and step_kinds[-1] == "step_completed"
        kinds += step_kinds
        streamed = "".join(e.delta for e in events if e.kind == "token_delta")

    last_reply = agents.server.model_requests[-1].reply
    assert last_reply is not None
    assert streamed == last_reply.text
    assert kinds.count("token_delta") > 1
    assert "tool_call_started" in kinds and "tool_call_finished" in kinds
    assert runner.get_completed_steps(task_id)[-1].output == agents.answer


# --- start_step, running_steps and cancel_step (the step-run API) -------------------------------


def test_start_step_returns_at_once_and_the_run_can_be_watched(agents: Agents) -> None:
    runner = agents.runner()
    task_id = runner.create_task(QUESTION).task_id
    run_to_the_last_reasoning_step(runner, task_id)
    policy, gate = gated(agents.policy)
    agents.server.script(policy=policy)

    try:
        run = runner.start_step(task_id)
        assert isinstance(run, StepRun) and not run.done
        assert runner.running_steps(task_id) == [run]
    finally:
        gate.set()
    output = run.result(timeout=WAIT_S)

    kinds = [event.kind for event in run.watch(timeout=WAIT_S)]
    assert kinds[0] == "step_started" and kinds[-1] == "step_completed"
    assert "token_delta" in kinds
    reply = agents.server.model_requests[-1].reply
    assert reply is not None and run.text == reply.text
    assert output.is_last and output.output == agents.answer
    assert runner.running_steps(task_id) == []


def test_start_step_from_a_thread_that_exits_still_completes(agents: Agents) -> None:
    policy, gate = gated(agents.policy)
    agents.server.script(policy=policy)
    runner = agents.runner()
    task_id = runner.create_task(QUESTION).task_id

    try:
        run = in_a_thread(lambda: runner.start_step(task_id))
        assert not run.done  # Its thread is gone; the step is still running in the runtime.
    finally:
        gate.set()

    assert run.result(timeout=WAIT_S).task_step.step_id == run.step_id
    assert runner.get_completed_steps(task_id)[-1].task_step.step_id == run.step_id


def test_astart_step_from_an_asyncio_run_that_ended_still_completes(agents: Agents) -> None:
    policy, gate = gated(agents.policy)
    agents.server.script(policy=policy)
    runner = agents.runner()
    task_id = runner.create_task(QUESTION).task_id

    try:
        run = asyncio.run(runner.astart_step(task_id))  # Its loop is closed when this returns.
        assert not run.done
    finally:
        gate.set()

    assert run.result(timeout=WAIT_S).task_step.step_id == run.step_id


def test_cancel_step_mid_stream_fails_the_step_keeps_the_rest_and_it_runs_again(
    agents: Agents,
) -> None:
    server = agents.server
    server.script(
        agents.tool_call_reply(),
        agents.final_reply(SLOW_TEXT, delay_s=0.2),
        agents.final_reply("Now quickly."),
    )
    runner = agents.runner()
    task_id = runner.create_task(QUESTION).task_id
    run_to_the_last_reasoning_step(runner, task_id)
    completed_before = [o.task_step.step_id for o in runner.get_completed_steps(task_id)]

    run = runner.start_step(task_id)
    first = next(e for e in run.watch(timeout=WAIT_S) if e.kind == "token_delta")
    stopped = runner.cancel_step(task_id, run.step_id)

    slow = server.model_requests[-1].reply
    assert first.delta and slow is not None
    assert slow.text.startswith(run.text) and run.text != slow.text  # Stopped partway.
    assert stopped.status is StepStatus.FAILED
    assert "stopped by you" in (stopped.error or "")
    with pytest.raises(StepError, match="stopped by you"):
        run.result(timeout=WAIT_S)
    assert [event.kind for event in run.watch(timeout=WAIT_S)][-1] == "step_failed"
    assert runner.running_steps(task_id) == []
    assert [o.task_step.step_id for o in runner.get_completed_steps(task_id)] == completed_before
    assert server.wait_until(lambda: server.disconnects == 1)
    assert server.model_requests[-1].client_went_away  # The stream was closed, not drained.

    again = runner.run_step(task_id, step_id=run.step_id)

    assert again.is_last and again.output == agents.final_output("Now quickly.")
    assert runner.get_step(task_id, run.step_id).status is StepStatus.COMPLETED
    assert server.remaining == 0


# --- interrupts -------------------------------------------------------------------------------


@pytest.mark.usefixtures("ctrl_c")
def test_an_interrupted_run_step_closes_its_call_and_never_resumes(agents: Agents) -> None:
    server = agents.server
    server.script(agents.final_reply("Too slow.", delay_s=WAIT_S), policy=agents.policy)
    runner = agents.runner()
    task_id = runner.create_task(QUESTION).task_id
    main = threading.main_thread().ident
    assert main == threading.get_ident(), "Ctrl-C reaches the main thread only"

    def press_ctrl_c_once_the_model_is_asked() -> None:
        if server.wait_until(lambda: bool(server.requests)):
            # A real signal: `_thread.interrupt_main` only sets a flag, which a thread blocked
            # waiting for the step would not see until the step had finished.
            signal.pthread_kill(main, signal.SIGINT)

    ctrl_c = threading.Thread(target=press_ctrl_c_once_the_model_is_asked)
    ctrl_c.start()
    with pytest.raises(KeyboardInterrupt):
        runner.run_step(task_id)
    ctrl_c.join()

    # Unwound before run_step returned: the step is upcoming again, untouched, and its call
    # was closed (a coroutine left suspended would still hold the connection open).
    step = runner.get_upcoming_steps(task_id)[0]
    assert step.status is StepStatus.UPCOMING and step.error is None
    assert runner.get_completed_steps(task_id) == []
    assert runner.running_steps(task_id) == []
    assert server.wait_until(lambda: server.disconnects == 1)
    (interrupted,) = server.model_requests
    assert interrupted.client_went_away and not interrupted.finished

    assert runner.run_step(task_id).task_step.step_id == step.step_id
    assert len(server.model_requests) == 2
