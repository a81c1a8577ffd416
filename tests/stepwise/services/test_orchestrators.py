"""Orchestrators: a pipeline feeds each output to the next; an LLM picks among services."""

from __future__ import annotations

from agent_core.llms import ScriptedLLM
from stepwise.services import (
    AgentOrchestrator,
    AgentService,
    ControlPlaneServer,
    PipelineOrchestrator,
    SimpleMessageQueue,
)
from stepwise.services.records import TaskStatus

from ._system import call, echo_agent, running


def _service(queue, name, transform, description=""):
    agent, seen = echo_agent(transform)
    service = AgentService(agent, queue, service_name=name, description=description or name)
    return service, seen


async def test_a_pipeline_runs_two_services_in_order_each_output_feeding_the_next():
    queue = SimpleMessageQueue()
    upper, upper_saw = _service(queue, "upper", str.upper)
    exclaim, exclaim_saw = _service(queue, "exclaim", lambda text: f"{text}!")
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["upper", "exclaim"]))

    async with running([exclaim, upper], control_plane):
        task = await control_plane.create_task("hello")
        done = await control_plane.wait_for_task(task.task_id, timeout=10)

    assert done.result == "HELLO!"
    assert (upper_saw, exclaim_saw) == (["hello"], ["HELLO"])
    hops = control_plane.state.hops(task.task_id)
    assert [(h.seq, h.service_name, h.input, h.result) for h in hops] == [
        (1, "upper", "hello", "HELLO"),
        (2, "exclaim", "HELLO", "HELLO!"),
    ]


async def test_a_pipeline_naming_an_unregistered_service_fails_the_task_saying_so():
    queue = SimpleMessageQueue()
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["missing"]))

    async with running([], control_plane):
        task = await control_plane.create_task("hello")
        done = await control_plane.wait_for_task(task.task_id, timeout=10)

    assert done.status is TaskStatus.FAILED
    assert "'missing' is not registered" in done.error


async def test_the_agent_orchestrator_picks_one_of_three_services_by_its_llm():
    queue = SimpleMessageQueue()
    math, math_saw = _service(queue, "math_agent", lambda t: "4", "Does arithmetic.")
    poet, poet_saw = _service(queue, "poet_agent", lambda t: "Roses...", "Writes poems.")
    chef, chef_saw = _service(queue, "chef_agent", lambda t: "Add salt.", "Gives recipes.")
    llm = ScriptedLLM([call("poet_agent", input="a poem about llamas"), "Here it is: Roses..."])
    control_plane = ControlPlaneServer(queue, AgentOrchestrator(llm=llm))

    async with running([math, poet, chef], control_plane):
        task = await control_plane.create_task("Write me a llama poem")
        done = await control_plane.wait_for_task(task.task_id, timeout=10)

    assert done.result == "Here it is: Roses..."
    assert llm.exhausted
    assert (math_saw, poet_saw, chef_saw) == ([], ["a poem about llamas"], [])
    first, second = llm.requests
    assert first[-1].content == "Write me a llama poem"
    assert second[-1].role == "tool" and second[-1].content == "Roses..."


async def test_each_service_is_a_tool_named_and_described_after_it_with_one_input():
    queue = SimpleMessageQueue()
    tools_seen = []

    async def chat(messages, *, tools=None):
        tools_seen.extend(tools or [])
        return await ScriptedLLM(["nothing to do"]).chat(messages, tools=tools)

    llm = ScriptedLLM([])
    llm.chat = chat  # Records the tools offered, answers without a call.
    math, _ = _service(queue, "math_agent", str, "Does arithmetic.")
    chef, _ = _service(queue, "chef_agent", str, "Gives recipes.")
    control_plane = ControlPlaneServer(queue, AgentOrchestrator(llm=llm))

    async with running([math, chef], control_plane):
        task = await control_plane.create_task("hi")
        done = await control_plane.wait_for_task(task.task_id, timeout=10)

    assert done.result == "nothing to do"
    assert {(t.name, t.description) for t in tools_seen} == {
        ("math_agent", "Does arithmetic."),
        ("chef_agent", "Gives recipes."),
    }
    assert all(t.parameters["required"] == ["input"] for t in tools_seen)
    assert all(t.parameters["properties"]["input"]["type"] == "string" for t in tools_seen)


async def test_a_call_of_an_unknown_service_is_an_error_the_orchestrator_reads_and_fixes():
    queue = SimpleMessageQueue()
    math, math_saw = _service(queue, "math_agent", lambda t: "4")
    llm = ScriptedLLM(
        [call("calculator", input="2+2"), call("math_agent", input="2+2"), "2+2 is 4"]
    )
    control_plane = ControlPlaneServer(queue, AgentOrchestrator(llm=llm))

    async with running([math], control_plane):
        task = await control_plane.create_task("2+2?")
        done = await control_plane.wait_for_task(task.task_id, timeout=10)

    assert done.result == "2+2 is 4"
    assert math_saw == ["2+2"]
    error = llm.requests[1][-1]
    assert error.role == "tool" and "no service named 'calculator'" in error.content
    assert "math_agent" in error.content
