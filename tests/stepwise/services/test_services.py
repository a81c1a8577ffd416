"""Services: tools run remotely, people answer, services are tools, hops run once."""

from __future__ import annotations

import asyncio
import io

from agent_core.llms import ScriptedLLM
from agent_core.store import SQLiteStore
from agent_core.tools import FunctionTool
from stepwise.services import (
    ActionTypes,
    AgentService,
    CallableMessageConsumer,
    ControlPlaneServer,
    HumanService,
    MetaServiceTool,
    PipelineOrchestrator,
    QueueMessage,
    ServiceAsTool,
    SimpleMessageQueue,
    ToolService,
)
from stepwise.services.services.agent import ledger_key
from stepwise.services.services.base import HopRequest

from ._system import ROOT, call, echo_agent, eventually, runner, running

SECRET = "The secret fact is: A baby llama is called a 'Cria'."


def get_the_secret_fact() -> str:
    """Returns the secret fact."""
    return SECRET


async def _run(services, control_plane, text="go"):
    async with running(services, control_plane):
        task = await control_plane.create_task(text)
        return await control_plane.wait_for_task(task.task_id, timeout=10)


async def test_an_agent_calls_a_tool_that_a_tool_service_runs():
    queue = SimpleMessageQueue()
    tool_service = ToolService(queue, [FunctionTool.from_defaults(fn=get_the_secret_fact)])
    meta = MetaServiceTool.from_tool_service("get_the_secret_fact", tool_service, timeout=5)
    llm = ScriptedLLM([call("get_the_secret_fact"), "Found it."])
    agent = AgentService(runner(llm, [meta]), queue, service_name="secret_agent")
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["secret_agent"]))

    done = await _run([tool_service, agent], control_plane)

    assert done.result == "Found it."
    assert llm.exhausted
    tool_reply = llm.requests[1][-1]
    assert (tool_reply.role, tool_reply.content) == ("tool", SECRET)
    assert meta.metadata.description == "Returns the secret fact."
    await meta.close()


async def test_a_tool_service_that_does_not_answer_in_time_is_an_error_the_agent_reads():
    queue = SimpleMessageQueue()
    tool_service = ToolService(queue, [FunctionTool.from_defaults(fn=get_the_secret_fact)])
    meta = MetaServiceTool.from_tool_service("get_the_secret_fact", tool_service, timeout=0.2)
    llm = ScriptedLLM([call("get_the_secret_fact"), "The tool is down; I cannot say."])
    agent = AgentService(runner(llm, [meta]), queue, service_name="secret_agent")
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["secret_agent"]))

    done = await _run([agent], control_plane)  # The tool service is not running.

    assert done.result == "The tool is down; I cannot say."
    tool_reply = llm.requests[1][-1]
    assert tool_reply.role == "tool"
    assert "gave no answer within 0.2 s" in tool_reply.content
    assert "try again later" in tool_reply.content
    await meta.close()


async def test_a_tool_service_answers_an_unknown_tool_with_an_error():
    queue = SimpleMessageQueue()
    tool_service = ToolService(queue, [FunctionTool.from_defaults(fn=get_the_secret_fact)])
    other = FunctionTool.from_defaults(fn=lambda: "x", name="not_there")
    meta = MetaServiceTool(other.metadata, queue, tool_service.service_name, timeout=5)

    async with running([tool_service], ControlPlaneServer(queue, PipelineOrchestrator(["x"]))):
        output = await meta.acall({})

    assert output.is_error
    assert "has no tool 'not_there'" in output.content
    assert "get_the_secret_fact" in output.content
    await meta.close()


async def test_a_human_service_asks_in_the_terminal_for_a_script(monkeypatch):
    queue = SimpleMessageQueue()
    monkeypatch.setattr("sys.stdin", io.StringIO("Blue, definitely.\n"))
    human = HumanService(queue, terminal=True)
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["human"]))

    done = await _run([human], control_plane, "Which colour should the logo be?")

    assert done.result == "Blue, definitely."
    assert control_plane.state.human_requests() == []  # Asked in the terminal, not the inbox.


async def test_a_human_service_request_waits_in_the_inbox_until_answered():
    queue = SimpleMessageQueue()
    human = HumanService(queue, service_name="reviewer")
    shout, _ = echo_agent(str.upper)
    shouter = AgentService(shout, queue, service_name="shouter")
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["reviewer", "shouter"]))

    async with running([human, shouter], control_plane):
        task = await control_plane.create_task("Approve the draft?")
        (request,) = await eventually(control_plane.state.human_requests)
        assert request.prompt == "Approve the draft?"
        assert control_plane.state.get_task(task.task_id).status == "awaiting_human"

        await control_plane.answer_human_request(request.request_id, "approved")
        done = await control_plane.wait_for_task(task.task_id, timeout=10)

    assert done.result == "APPROVED"
    (answered,) = control_plane.state.human_requests()
    assert (answered.status, answered.answer) == ("answered", "approved")


async def test_a_service_is_a_tool_another_agent_calls():
    queue = SimpleMessageQueue()
    shout, shout_saw = echo_agent(str.upper)
    shouter = AgentService(shout, queue, service_name="shouter", description="Shouts text.")
    as_tool = ServiceAsTool.from_service(shouter, timeout=5)
    llm = ScriptedLLM([call("shouter", input="hello"), "It said HELLO."])
    caller = AgentService(runner(llm, [as_tool]), queue, service_name="caller")
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["caller"]))

    done = await _run([shouter, caller], control_plane)

    assert done.result == "It said HELLO."
    assert shout_saw == ["hello"]
    assert llm.requests[1][-1].content == "HELLO"
    assert as_tool.metadata.description == "Shouts text."
    await as_tool.close()


async def _deliver_twice(service, queue, message):
    results = []
    consumer = CallableMessageConsumer(message_type="control_plane", handler=results.append)
    consume = await queue.register_consumer(consumer)
    listening = asyncio.create_task(consume())
    await service.process_message(message)
    await service.process_message(message.model_copy(update={"delivery_count": 2}))
    await eventually(lambda: len(results) == 2)
    listening.cancel()
    return results


async def test_the_same_new_task_delivered_twice_runs_the_agent_once(tmp_path):
    queue = SimpleMessageQueue()
    llm = ScriptedLLM(["only once"])  # A second run would find the script empty and fail.
    agent = runner(llm, store=SQLiteStore(tmp_path / "stepwise.db"))
    service = AgentService(agent, queue, service_name="once")
    message = QueueMessage(
        type="once",
        action=ActionTypes.NEW_TASK,
        data=HopRequest(task_id="t1", input="hi", hop_id="h1").model_dump(mode="json"),
    )

    results = await _deliver_twice(service, queue, message)

    assert [r.data["result"] for r in results] == ["only once", "only once"]
    assert len(agent.list_tasks()) == 1 and len(llm.requests) == 1
    assert results[0].data["data"]["service_task_id"] == agent.list_tasks()[0].task_id


async def test_a_redelivered_hop_that_had_started_resumes_its_stepwise_task():
    queue = SimpleMessageQueue()
    llm = ScriptedLLM([call("get_the_secret_fact"), "Cria."])
    agent = runner(llm, [FunctionTool.from_defaults(fn=get_the_secret_fact)])
    service = AgentService(agent, queue, service_name="resumer")
    message = QueueMessage(
        type="resumer",
        action=ActionTypes.NEW_TASK,
        data=HopRequest(task_id="t1", input="secret?", hop_id="h1").model_dump(mode="json"),
    )
    # A replica started the hop and died after its first step.
    started = agent.create_task("secret?", ledger_key=ledger_key("resumer", message.id_))
    await agent.arun_step(started.task_id)

    results = await _deliver_twice(service, queue, message)

    assert results[0].data["result"] == "Cria."
    assert [t.task_id for t in agent.list_tasks()] == [started.task_id]
    assert llm.exhausted


async def test_a_service_is_built_from_the_users_agent_target(tmp_path):
    queue = SimpleMessageQueue()
    target = f"{ROOT / 'examples' / 'my_agent.py'}:build_agent"
    service = AgentService.from_agent_target(
        target,
        queue,
        service_name="headline",
        description="Writes headlines.",
        store=SQLiteStore(tmp_path / "stepwise.db"),
    )
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["headline"]))

    done = await _run([service], control_plane, "Llamas learn to code in record time")

    assert done.result.startswith("Headline:")
    (task,) = service.agent.list_tasks()
    assert (
        service.agent.get_task(task.task_id)
        .spec["agent_target"]
        .endswith("my_agent.py:build_agent")
    )
