"""QueryPipelineAgentWorker: each step runs the pipeline; state carries over and undoes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_core import AgentRunner, StepKind, StepStatus
from agent_core.errors import StepError, WorkerStateError
from agent_core.store import SQLiteStore
from agent_core.workers import PipelineReply, QueryPipelineAgentWorker
from agent_core.workers.pipeline import ComponentError, Pipeline, PipelineBuildError

QUESTION = "Count to three"


def count_pipeline(*, fail_at: int | None = None) -> Pipeline:
    """Each step says the next number; the third says it is done."""

    def read(input: str | None, state: dict[str, Any]) -> int:
        state["seen"] = [*state.get("seen", []), input]
        return state.get("count", 0) + 1

    def count(n: int, state: dict[str, Any]) -> int:
        if n == fail_at:
            raise ValueError(f"cannot count to {n}")
        state["count"] = n
        return n

    def respond(n: int) -> PipelineReply:
        return PipelineReply(f"{n}!", done=n >= 3)

    return (
        Pipeline(args=("input", "state"))
        .add("read", read, inputs={"input": "input", "state": "state"})
        .add("count", count, inputs={"n": "read", "state": "state"})
        .add("respond", respond, inputs={"n": "count"})
    )


def make(pipeline: Pipeline | None = None, **kwargs: Any) -> AgentRunner:
    return AgentRunner(QueryPipelineAgentWorker(pipeline or count_pipeline()), **kwargs)


def test_each_step_runs_the_pipeline_until_its_output_says_done() -> None:
    agent = make()
    task = agent.create_task(QUESTION)

    outputs = [agent.run_step(task.task_id) for _ in range(3)]

    assert [o.output for o in outputs] == ["1!", "2!", "3!"]
    assert [o.is_last for o in outputs] == [False, False, True]
    assert all(o.task_step.kind is StepKind.CUSTOM for o in outputs)
    assert agent.finalize_response(task.task_id).response == "3!"
    state = agent.get_task(task.task_id).extra_state["pipeline_state"]
    assert state == {"seen": [QUESTION, QUESTION, QUESTION], "count": 3}


def test_each_component_is_recorded_with_its_inputs_output_and_latency() -> None:
    agent = make()
    task = agent.create_task(QUESTION)

    out = agent.run_step(task.task_id)

    assert [c.name for c in out.components] == ["read", "count", "respond"]
    read, count, respond = out.components
    assert read.inputs == {"input": QUESTION, "state": {}}
    assert read.output == 1
    assert count.output == 1 and respond.output == ["1!", False]
    assert all(c.latency_ms >= 0 for c in out.components)


def test_undo_returns_the_state_to_before_the_step_and_the_rerun_repeats_it() -> None:
    agent = make()
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    agent.run_step(task.task_id)

    agent.undo_step(task.task_id)
    state = agent.get_task(task.task_id).extra_state["pipeline_state"]
    assert state == {"seen": [QUESTION], "count": 1}

    again = agent.run_step(task.task_id, input="go on")
    assert again.output == "2!"
    state = agent.get_task(task.task_id).extra_state["pipeline_state"]
    assert state == {"seen": [QUESTION, "go on"], "count": 2}


def test_a_failing_component_fails_the_step_with_its_name_and_leaves_state_alone() -> None:
    agent = make(count_pipeline(fail_at=2))
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)

    with pytest.raises(StepError, match="component 'count' failed: ValueError: cannot count to 2"):
        agent.run_step(task.task_id)

    (failed,) = agent.get_upcoming_steps(task.task_id)
    assert failed.status is StepStatus.FAILED
    assert "component 'count'" in (failed.error or "")
    state = agent.get_task(task.task_id).extra_state["pipeline_state"]
    assert state == {"seen": [QUESTION], "count": 1}  # the failed step's writes were dropped


def test_the_component_error_keeps_its_type_and_name_through_the_runner() -> None:
    agent = make(count_pipeline(fail_at=1))
    task = agent.create_task(QUESTION)

    with pytest.raises(ComponentError) as caught:
        agent.run_step(task.task_id)

    assert caught.value.component == "count"
    assert caught.value.task_id == task.task_id


def test_components_and_state_survive_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "stepwise.db"
    agent = make(store=SQLiteStore(db))
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)

    again = make(store=SQLiteStore(db))
    (stored,) = again.get_completed_steps(task.task_id)
    assert [c.name for c in stored.components] == ["read", "count", "respond"]
    assert again.run_step(task.task_id).output == "2!"


def test_a_bare_response_ends_the_task_and_history_and_step_are_offered() -> None:
    def respond(task_input: str, step: int, history: list) -> str:
        return f"{task_input} at step {step} after {len(history)} messages"

    pipeline = Pipeline(args=("task_input", "step", "history")).add(
        "respond",
        respond,
        inputs={"task_input": "task_input", "step": "step", "history": "history"},
    )
    agent = make(pipeline)
    task = agent.create_task(QUESTION)

    out = agent.run_step(task.task_id)

    assert out.is_last and out.output == f"{QUESTION} at step 1 after 0 messages"
    messages = agent.get_task(task.task_id).memory.get_all()
    assert [(m.role, m.content) for m in messages] == [
        ("user", QUESTION),
        ("assistant", out.output),
    ]


def test_the_named_output_component_is_the_reply_even_if_another_runs_last() -> None:
    pipeline = (
        Pipeline(args=("input",))
        .add("answer", lambda input: ("done", True), inputs={"input": "input"})
        .add("log", lambda reply: f"logged {reply[0]}", inputs={"reply": "answer"})
    )
    agent = AgentRunner(QueryPipelineAgentWorker(pipeline, output="answer"))
    task = agent.create_task(QUESTION)

    out = agent.run_step(task.task_id)

    assert (out.output, out.is_last) == ("done", True)
    assert [c.name for c in out.components] == ["answer", "log"]


def test_state_that_is_not_json_fails_the_step_naming_the_key() -> None:
    pipeline = Pipeline(args=("state",)).add(
        "keep",
        lambda state: state.update(handle=object()) or ("ok", False),
        inputs={"state": "state"},
    )
    agent = make(pipeline)
    task = agent.create_task(QUESTION)

    with pytest.raises(WorkerStateError, match="pipeline_state"):
        agent.run_step(task.task_id)


def test_max_steps_bounds_a_pipeline_that_never_finishes() -> None:
    pipeline = Pipeline(args=("input",)).add(
        "again", lambda input: ("more", False), inputs={"input": "input"}
    )
    agent = AgentRunner(QueryPipelineAgentWorker(pipeline, max_steps=2))
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    agent.run_step(task.task_id)

    with pytest.raises(StepError, match="max_steps=2"):
        agent.run_step(task.task_id)


def test_the_worker_refuses_a_pipeline_it_cannot_feed_or_an_unknown_output() -> None:
    wants_query = Pipeline(args=("query",)).add("x", lambda query: query, inputs={"query": "query"})
    with pytest.raises(PipelineBuildError, match="takes 'query', which no step provides"):
        QueryPipelineAgentWorker(wants_query)
    with pytest.raises(PipelineBuildError, match="output='nope' names no component"):
        QueryPipelineAgentWorker(count_pipeline(), output="nope")
    cyclic = (
        Pipeline().add("a", lambda b: b, inputs={"b": "b"}).add("b", lambda a: a, inputs={"a": "a"})
    )
    with pytest.raises(PipelineBuildError, match="cycle"):
        QueryPipelineAgentWorker(cyclic)
