"""Step mode: each hop waits for a person, who approves, edits or rejects it."""

from __future__ import annotations

import httpx
import pytest

from agent_core.llms import ScriptedLLM
from stepwise.services import (
    AgentOrchestrator,
    AgentService,
    ControlPlaneServer,
    PipelineOrchestrator,
    ServicesClient,
    SimpleMessageQueue,
    TaskFailedError,
)
from stepwise.services.errors import HopNotPendingError, UnknownServiceError
from stepwise.services.records import HopStatus, TaskStatus

from ._system import call, echo_agent, eventually, free_port, running, served, wait_for


def _system(llm):
    queue = SimpleMessageQueue()
    french, french_saw = echo_agent(lambda t: f"fr: {t}")
    german, german_saw = echo_agent(lambda t: f"de: {t}")
    services = [
        AgentService(french, queue, service_name="french", description="Translates to French."),
        AgentService(german, queue, service_name="german", description="Translates to German."),
    ]
    control_plane = ControlPlaneServer(queue, AgentOrchestrator(llm=llm))
    return services, control_plane, french_saw, german_saw


async def _pending(control_plane, task_id):
    hops = await eventually(lambda: control_plane.state.pending_hops())
    assert hops[0].task_id == task_id
    return hops[0]


async def test_an_edited_hop_changes_which_service_runs_and_the_hops_show_both():
    llm = ScriptedLLM([call("french", input="hello"), "Done: de: good day"])
    services, control_plane, french_saw, german_saw = _system(llm)

    async with running(services, control_plane):
        task = await control_plane.create_task("Translate hello", step_mode=True)
        hop = await _pending(control_plane, task.task_id)
        assert control_plane.state.get_task(task.task_id).status is TaskStatus.AWAITING_APPROVAL
        assert (hop.proposed_service, hop.proposed_input, hop.service_name) == (
            "french",
            "hello",
            None,
        )

        await control_plane.edit_hop(
            task.task_id, hop.hop_id, service_name="german", input="good day"
        )
        done = await control_plane.wait_for_task(task.task_id, timeout=10)

    assert done.result == "Done: de: good day"
    assert (french_saw, german_saw) == ([], ["good day"])
    (ran,) = control_plane.state.hops(task.task_id)
    assert (ran.proposed_service, ran.proposed_input) == ("french", "hello")
    assert (ran.service_name, ran.input, ran.edited) == ("german", "good day", True)
    assert ran.result == "de: good day"
    # The orchestrator's model is shown the call that ran, and told a person changed it.
    call_shown, answer = llm.requests[1][-2:]
    assert call_shown.tool_calls[0].name == "german"
    assert call_shown.tool_calls[0].args == {"input": "good day"}
    assert "A person changed this call from french" in answer.content
    assert answer.content.endswith("de: good day")


async def test_each_hop_waits_for_approval_then_runs_as_proposed():
    queue = SimpleMessageQueue()
    upper, _ = echo_agent(str.upper)
    exclaim, _ = echo_agent(lambda t: f"{t}!")
    services = [
        AgentService(upper, queue, service_name="upper"),
        AgentService(exclaim, queue, service_name="exclaim"),
    ]
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["upper", "exclaim"]))

    async with running(services, control_plane):
        task = await control_plane.create_task("hi", step_mode=True)
        first = await _pending(control_plane, task.task_id)
        await control_plane.approve_hop(task.task_id, first.hop_id)
        second = await _pending(control_plane, task.task_id)
        assert (second.proposed_service, second.proposed_input) == ("exclaim", "HI")
        await control_plane.approve_hop(task.task_id, second.hop_id)
        done = await control_plane.wait_for_task(task.task_id, timeout=10)

        with pytest.raises(HopNotPendingError, match="not pending"):
            await control_plane.approve_hop(task.task_id, first.hop_id)

    assert done.result == "HI!"
    assert [h.edited for h in control_plane.state.hops(task.task_id)] == [False, False]


async def test_a_rejected_hop_ends_the_task_with_the_reason_and_nothing_runs():
    llm = ScriptedLLM([call("french", input="hello")])
    services, control_plane, french_saw, german_saw = _system(llm)

    async with running(services, control_plane):
        task = await control_plane.create_task("Translate hello", step_mode=True)
        hop = await _pending(control_plane, task.task_id)
        await control_plane.reject_hop(task.task_id, hop.hop_id, "we only ship German")
        done = await control_plane.wait_for_task(task.task_id, timeout=10)

    assert done.status is TaskStatus.FAILED
    assert "rejected hop 1 (to french): we only ship German" in done.error
    assert control_plane.state.hops(task.task_id)[0].status is HopStatus.REJECTED
    assert (french_saw, german_saw) == ([], [])
    with pytest.raises(TaskFailedError, match="we only ship German"):
        control_plane.get_task_result(task.task_id)


async def test_a_hop_cannot_be_sent_to_an_unknown_service():
    llm = ScriptedLLM([call("french", input="hello")])
    services, control_plane, _, _ = _system(llm)

    async with running(services, control_plane):
        task = await control_plane.create_task("Translate hello", step_mode=True)
        hop = await _pending(control_plane, task.task_id)
        with pytest.raises(UnknownServiceError, match="klingon"):
            await control_plane.edit_hop(task.task_id, hop.hop_id, service_name="klingon")

    assert control_plane.state.get_hop(hop.hop_id).status is HopStatus.PENDING


def test_a_person_steps_a_task_over_http():
    llm = ScriptedLLM([call("french", input="hello"), "Done."])
    services, control_plane, french_saw, _ = _system(llm)
    control_plane.port = free_port()
    queue = services[0].message_queue

    with served(services, control_plane, queue) as url, ServicesClient(url) as client:
        task_id = client.create_task("Translate hello", step_mode=True)
        (hop,) = wait_for(lambda: client.pending_hops())
        assert client.get_task(task_id).status is TaskStatus.AWAITING_APPROVAL
        client.edit_hop(task_id, hop.hop_id, input="hello there")
        result = client.wait_for_result(task_id, timeout=10)
        hops = client.get_hops(task_id)
        seen = httpx.get(f"{url}/tasks/{task_id}/orchestrator").json()["messages"]

    assert result.result == "Done."
    assert french_saw == ["hello there"]
    assert [(h.proposed_input, h.input, h.edited) for h in hops] == [("hello", "hello there", True)]
    assert [m["role"] for m in seen] == ["system", "user", "assistant", "tool", "assistant"]
    assert seen[-1]["content"] == "Done."
