"""Pipeline: wiring errors at build time, topological runs, types checked, failures named."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from agent_core.llms import ScriptedLLM
from agent_core.workers import ReActAgentWorker
from agent_core.workers.pipeline import (
    MAX_RECORDED_CHARS,
    ComponentError,
    Pipeline,
    PipelineBuildError,
)

from .conftest import answer


def shout(text: str) -> str:
    return text.upper() + "!"


def join(a: str, b: str, sep: str = " + ") -> str:
    return f"{a}{sep}{b}"


# ------------------------------------------------------------------------------ build time


def test_an_input_naming_nothing_is_an_error_that_lists_what_exists() -> None:
    pipeline = Pipeline(args=("input",)).add("loud", shout, inputs={"text": "inptu"})

    with pytest.raises(PipelineBuildError, match=r"reads 'text' from 'inptu', which is neither"):
        pipeline.build()


def test_a_cycle_is_an_error_naming_the_components_in_it() -> None:
    pipeline = (
        Pipeline(args=("input",))
        .add("start", shout, inputs={"text": "input"})
        .add("a", join, inputs={"a": "start", "b": "b"})
        .add("b", join, inputs={"a": "a", "b": "start"})
    )

    with pytest.raises(PipelineBuildError, match=r"\['a', 'b'\] feed each other in a cycle"):
        pipeline.build()


def test_a_required_parameter_left_unfed_is_an_error_when_added() -> None:
    with pytest.raises(PipelineBuildError, match="'both' needs an input for 'b'"):
        Pipeline(args=("input",)).add("both", join, inputs={"a": "input"})


def test_a_parameter_the_callable_lacks_is_an_error_when_added() -> None:
    with pytest.raises(PipelineBuildError, match=r"has no parameter 'txt' \(it takes \['text'\]\)"):
        Pipeline(args=("input",)).add("loud", shout, inputs={"txt": "input"})


def test_names_must_be_unique_across_components_and_args() -> None:
    pipeline = Pipeline(args=("input",)).add("loud", shout, inputs={"text": "input"})

    with pytest.raises(PipelineBuildError, match="'loud' is taken"):
        pipeline.add("loud", shout, inputs={"text": "input"})
    with pytest.raises(PipelineBuildError, match="'input' is taken"):
        pipeline.add("input", shout, inputs={"text": "loud"})


def test_an_empty_pipeline_and_wrong_run_args_are_errors() -> None:
    with pytest.raises(PipelineBuildError, match="no components"):
        Pipeline().build()
    pipeline = Pipeline(args=("input",)).add("loud", shout, inputs={"text": "input"})
    with pytest.raises(PipelineBuildError, match=r"takes args \['input'\], got \['query'\]"):
        asyncio.run(pipeline.arun(query="x"))


# ------------------------------------------------------------------------------- running


async def test_components_run_in_topological_order_whatever_order_they_were_added() -> None:
    ran: list[str] = []

    def record(name: str, value: str) -> str:
        ran.append(name)
        return f"{name}({value})"

    pipeline = (
        Pipeline(args=("input",))
        .add("last", lambda x, y: record("last", x + y), inputs={"x": "left", "y": "right"})
        .add("left", lambda v: record("left", v), inputs={"v": "first"})
        .add("right", lambda v: record("right", v), inputs={"v": "first"})
        .add("first", lambda v: record("first", v), inputs={"v": "input"})
    )

    result = await pipeline.arun(input="q")

    assert ran == ["first", "left", "right", "last"]
    assert result.last == "last"
    assert result.output == "last(left(first(q))right(first(q)))"
    assert [run.name for run in result.runs] == ran
    assert result.runs[0].inputs == {"v": "q"} and result.runs[0].output == "first(q)"
    assert all(run.latency_ms >= 0 for run in result.runs)


async def test_async_and_sync_components_mix_and_sync_ones_leave_the_loop_free() -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def sync_part(text: str) -> str:
        threads.append(threading.get_ident())
        return text + " sync"

    async def async_part(text: str) -> str:
        await asyncio.sleep(0)
        threads.append(threading.get_ident())
        return text + " async"

    pipeline = (
        Pipeline(args=("input",))
        .add("a", sync_part, inputs={"text": "input"})
        .add("b", async_part, inputs={"text": "a"})
    )

    assert (await pipeline.arun(input="go")).output == "go sync async"
    assert threads[0] != loop_thread and threads[1] == loop_thread


async def test_a_failing_component_is_named_in_the_error() -> None:
    def broken(text: str) -> str:
        raise KeyError("no such index")

    pipeline = (
        Pipeline(args=("input",))
        .add("fine", shout, inputs={"text": "input"})
        .add("lookup", broken, inputs={"text": "fine"})
    )

    with pytest.raises(ComponentError, match="component 'lookup' failed: KeyError") as caught:
        await pipeline.arun(input="x")
    assert caught.value.component == "lookup"


async def test_a_value_of_the_wrong_type_is_refused_at_the_component_it_reaches() -> None:
    def count(items: list[str]) -> int:
        return len(items)

    pipeline = (
        Pipeline(args=("input",))
        .add("number", lambda text: len(text), inputs={"text": "input"})
        .add("count", count, inputs={"items": "number"})
    )

    with pytest.raises(ComponentError, match="'count' got the wrong type for 'items'"):
        await pipeline.arun(input="abc")


async def test_typed_inputs_are_coerced_as_pydantic_does() -> None:
    def double(n: int) -> int:
        return n * 2

    pipeline = Pipeline(args=("input",)).add("double", double, inputs={"n": "input"})

    assert (await pipeline.arun(input="21")).output == 42


async def test_records_are_json_and_long_values_are_cut() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    pipeline = (
        Pipeline(args=("input",))
        .add("long", lambda text: text * MAX_RECORDED_CHARS, inputs={"text": "input"})
        .add("opaque", lambda text: Opaque(), inputs={"text": "input"})
    )

    result = await pipeline.arun(input="ab")

    long_run, opaque_run = result.runs
    assert len(long_run.output) == MAX_RECORDED_CHARS and long_run.output.endswith("…")
    assert opaque_run.output == "<opaque>"
    json.dumps([run.model_dump(mode="json") for run in result.runs])
    assert isinstance(result.outputs["opaque"], Opaque)  # the live object goes downstream


async def test_an_agent_is_a_component_that_answers_its_input() -> None:
    llm = ScriptedLLM([answer("Paris")])
    pipeline = (
        Pipeline(args=("input",))
        .add("ask", ReActAgentWorker.from_tools([], llm=llm), inputs={"input": "input"})
        .add("loud", shout, inputs={"text": "ask"})
    )

    result = await pipeline.arun(input="Capital of France?")

    assert result.output == "PARIS!"
    assert llm.requests[0][-1].content == "Capital of France?"
