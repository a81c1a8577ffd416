"""Stepwise's tests of LlamaIndex's instrumentation beside LlamaIndex's own (not ported).

LlamaIndex's `test_agent_dispatches_events` (tests/compat/test_runner_base.py) counts the
events of `chat()`. These follow the other ways a step runs (streamed, run until, in
parallel, failed and retried, `stream_chat`), a real ReAct agent, and the dispatcher itself:
names and propagation, spans, and handlers that fail.
"""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import agent_core.compat.llamaindex.instrumentation as instrument
from agent_core import AgentChatResponse, AgentRunner, ParallelAgentRunner, ReActAgent
from agent_core.compat.llamaindex.instrumentation import (
    AgentChatWithStepEndEvent,
    AgentChatWithStepStartEvent,
    AgentRunStepEndEvent,
    AgentRunStepStartEvent,
    BaseEvent,
    BaseEventHandler,
    BaseSpanHandler,
)
from agent_core.errors import StepError
from agent_core.llms import ScriptedLLM
from agent_core.runtime.streaming_response import StreamingAgentChatResponse
from agent_core.tools import FunctionTool
from agent_core.types import StepStatus, Task, TaskStep, TaskStepOutput
from agent_core.workers import BaseAgentWorker


class Collector(BaseEventHandler):
    events: list[BaseEvent] = []  # noqa: RUF012  # a pydantic field: each handler its own

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.events.append(event)

    def names(self) -> list[str]:
        return [event.class_name() for event in self.events]


class Spans(BaseSpanHandler):
    """Keeps each span as (id, parent id, instance, outcome)."""

    def new_span(self, id_, bound_args, instance=None, parent_span_id=None, tags=None, **kw):
        return {"id": id_, "parent": parent_span_id, "instance": instance, "args": bound_args}

    def prepare_to_exit_span(self, id_, bound_args, instance=None, result=None, **kw):
        return {**self.open_spans[id_], "result": result}

    def prepare_to_drop_span(self, id_, bound_args, instance=None, err=None, **kw):
        return {**self.open_spans[id_], "err": err}


@pytest.fixture
def collector() -> Iterator[Collector]:
    """A handler on the root dispatcher for one test (the root lives as long as the process)."""
    handler = Collector()
    root = instrument.get_dispatcher()
    root.add_event_handler(handler)
    yield handler
    root.event_handlers.remove(handler)


class CountingWorker(BaseAgentWorker):
    """Counts to `limit`, one step each; fails the steps whose numbers are in `fail_at` once."""

    def __init__(self, limit: int, fail_at: tuple[int, ...] = ()) -> None:
        self.limit = limit
        self.fail_at = set(fail_at)

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        task.extra_state["counter"] = 0
        return TaskStep(task_id=task.task_id, input=task.input)

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        counter = task.extra_state["counter"] + 1
        if counter in self.fail_at:
            self.fail_at.discard(counter)
            raise RuntimeError(f"step {counter} broke")
        task.extra_state["counter"] = counter
        done = counter >= self.limit
        return TaskStepOutput(
            output=AgentChatResponse(response=f"counter: {counter}"),
            task_step=step,
            is_last=done,
            next_steps=[] if done else [step.get_next_step()],
        )

    def finalize_task(self, task: Task, **kwargs: Any) -> None:
        return None


class ForkingWorker(CountingWorker):
    """One step, then two steps side by side."""

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        return TaskStep(task_id=task.task_id, input=task.input, step_state={"depth": 0})

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        depth = step.step_state["depth"]
        children = [step.get_next_step(step_state={"depth": 1}) for _ in range(2)]
        return TaskStepOutput(
            output=f"depth {depth}",
            task_step=step,
            is_last=depth == 1,
            next_steps=children if depth == 0 else [],
        )


def step_events(collector: Collector) -> list[tuple[str, str]]:
    """(event name, step id) of each step event, in order."""
    pairs = []
    for event in collector.events:
        if isinstance(event, AgentRunStepStartEvent):
            assert event.step is not None
            pairs.append(("start", event.step.step_id))
        elif isinstance(event, AgentRunStepEndEvent):
            pairs.append(("end", event.step_output.task_step.step_id))
    return pairs


# ------------------------------------------------------------------ the runner's events


def test_every_way_of_running_a_step_sends_its_pair(collector: Collector) -> None:
    runner = AgentRunner(CountingWorker(limit=4))
    task = runner.create_task("count")
    first = runner.run_step(task.task_id).task_step.step_id
    second = list(runner.stream_step(task.task_id))[-1].output.task_step.step_id
    result = runner.run_until(task.task_id)

    steps = [first, second, *(o.task_step.step_id for o in result.outputs)]
    assert len(steps) == 4
    assert step_events(collector) == [(kind, s) for s in steps for kind in ("start", "end")]
    assert not any(isinstance(e, AgentChatWithStepStartEvent) for e in collector.events)


def test_an_edited_input_is_the_start_events_input(collector: Collector) -> None:
    runner = AgentRunner(CountingWorker(limit=2))
    task = runner.create_task("count")
    runner.run_step(task.task_id, "count faster")

    start = collector.events[0]
    assert isinstance(start, AgentRunStepStartEvent)
    assert start.input == "count faster" and start.task_id == task.task_id


def test_parallel_steps_each_send_a_pair(collector: Collector) -> None:
    runner = ParallelAgentRunner(ForkingWorker(limit=0))
    task = runner.create_task("fork")
    runner.run_steps_in_queue(task.task_id)
    children = runner.run_steps_in_queue(task.task_id)

    pairs = step_events(collector)
    assert len(pairs) == 6
    for child in children:
        step_id = child.task_step.step_id
        assert pairs.index(("start", step_id)) < pairs.index(("end", step_id))


def test_a_failed_step_sends_no_end_and_its_retry_sends_both(collector: Collector) -> None:
    runner = AgentRunner(CountingWorker(limit=2, fail_at=(1,)))
    task = runner.create_task("count")
    with pytest.raises(StepError, match="step 1 broke"):
        runner.run_step(task.task_id)
    failed = runner.get_upcoming_steps(task.task_id)[0]
    assert failed.status is StepStatus.FAILED
    assert step_events(collector) == [("start", failed.step_id)]

    runner.run_step(task.task_id)
    assert step_events(collector)[1:] == [("start", failed.step_id), ("end", failed.step_id)]


def test_stream_chat_sends_the_stream_as_its_response(collector: Collector) -> None:
    runner = AgentRunner(CountingWorker(limit=2))
    stream = runner.stream_chat("count")

    assert collector.names() == ["AgentChatWithStepStartEvent", "AgentChatWithStepEndEvent"]
    assert collector.events[-1].response is stream  # type: ignore[attr-defined]
    assert isinstance(stream, StreamingAgentChatResponse)
    assert "".join(stream.response_gen) == "counter: 2"
    assert collector.names()[2:] == ["AgentRunStepStartEvent", "AgentRunStepEndEvent"] * 2


def test_a_react_agent_chat_is_told_in_order(collector: Collector) -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    llm = ScriptedLLM(
        [
            'Thought: add\nAction: add\nAction Input: {"a": 2, "b": 3}',
            "Thought: done\nAnswer: 5",
        ]
    )
    agent = ReActAgent.from_tools([FunctionTool.from_defaults(add)], llm=llm)
    response = agent.chat("2 + 3?")

    assert collector.names() == [
        "AgentChatWithStepStartEvent",
        "AgentRunStepStartEvent",
        "AgentRunStepEndEvent",
        "AgentRunStepStartEvent",
        "AgentRunStepEndEvent",
        "AgentChatWithStepEndEvent",
    ]
    first_end = collector.events[2]
    assert isinstance(first_end, AgentRunStepEndEvent)
    assert first_end.step_output.tool_calls[0].content == "5"
    end = collector.events[-1]
    assert isinstance(end, AgentChatWithStepEndEvent) and end.response == response


def test_a_handler_on_the_runners_dispatcher_hears_it_and_a_stranger_does_not() -> None:
    own, stranger = Collector(), Collector()
    runner_dispatcher = instrument.get_dispatcher("agent_core.runtime.runner")
    other = instrument.get_dispatcher(f"tests.{uuid.uuid4().hex}")
    runner_dispatcher.add_event_handler(own)
    other.add_event_handler(stranger)
    try:
        AgentRunner(CountingWorker(limit=1)).chat("count")
    finally:
        runner_dispatcher.event_handlers.remove(own)
        other.event_handlers.remove(stranger)

    assert own.names() == [
        "AgentChatWithStepStartEvent",
        "AgentRunStepStartEvent",
        "AgentRunStepEndEvent",
        "AgentChatWithStepEndEvent",
    ]
    assert stranger.events == []


def test_a_failing_handler_is_logged_and_the_chat_goes_on(
    collector: Collector, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(BaseEventHandler):
        def handle(self, event: BaseEvent, **kwargs: Any) -> None:
            raise ValueError("handler bug")

    broken = Broken()
    root = instrument.get_dispatcher()
    root.add_event_handler(broken)
    try:
        with caplog.at_level(logging.ERROR):
            response = AgentRunner(CountingWorker(limit=2)).chat("count")
    finally:
        root.event_handlers.remove(broken)

    assert str(response) == "counter: 2"
    assert len(collector.events) == 6  # the handler beside it still heard everything
    failures = [r for r in caplog.records if "Broken failed on" in r.getMessage()]
    assert len(failures) == 6 and "handler bug" in (failures[0].exc_text or "")


# ------------------------------------------------------------------ the dispatcher itself


def test_events_go_up_the_dotted_names_until_propagation_stops() -> None:
    base = f"tests.{uuid.uuid4().hex}"
    parent, child = instrument.get_dispatcher(base), instrument.get_dispatcher(f"{base}.mod")
    assert instrument.get_dispatcher(f"{base}.mod") is child and child.parent is parent
    heard_by_parent, heard_by_child = Collector(), Collector()
    parent.add_event_handler(heard_by_parent)
    child.add_event_handler(heard_by_child)

    child.event(BaseEvent())
    child.propagate = False
    child.event(BaseEvent())

    assert len(heard_by_child.events) == 2 and len(heard_by_parent.events) == 1
    assert heard_by_parent.events[0].model_dump()["class_name"] == "BaseEvent"


def test_spans_report_calls_and_events_inside_carry_their_id() -> None:
    dispatcher = instrument.get_dispatcher(f"tests.{uuid.uuid4().hex}")
    spans, heard = Spans(), Collector()
    dispatcher.add_span_handler(spans)
    dispatcher.add_event_handler(heard)

    class Greeter:
        @dispatcher.span
        def greet(self, name: str, punctuation: str = "!") -> str:
            dispatcher.event(BaseEvent())
            return inner(name) + punctuation

    @dispatcher.span
    def inner(name: str) -> str:
        return f"hello {name}"

    @dispatcher.span
    def broken() -> None:
        raise ValueError("no")

    greeter = Greeter()
    assert greeter.greet("ada") == "hello ada!"
    with pytest.raises(ValueError, match="no"):
        broken()

    inner_span, outer_span = spans.completed_spans
    assert outer_span["id"].startswith("Greeter.greet-")
    assert outer_span["instance"] is greeter and outer_span["parent"] is None
    assert outer_span["args"] == inspect.signature(Greeter.greet).bind(greeter, "ada")
    assert outer_span["result"] == "hello ada!"
    assert inner_span["parent"] == outer_span["id"] and inner_span["instance"] is None
    assert heard.events[0].span_id == outer_span["id"]
    (dropped,) = spans.dropped_spans
    assert "broken" in dropped["id"] and isinstance(dropped["err"], ValueError)
    assert spans.open_spans == {} and dispatcher.current_span_id is None


async def test_an_async_span_is_entered_and_left() -> None:
    dispatcher = instrument.get_dispatcher(f"tests.{uuid.uuid4().hex}")
    spans = Spans()
    dispatcher.add_span_handler(spans)

    @dispatcher.span
    async def fetch(n: int) -> int:
        assert dispatcher.current_span_id is not None
        return n * 2

    assert await fetch(21) == 42
    (span,) = spans.completed_spans
    assert span["result"] == 42 and dispatcher.current_span_id is None
