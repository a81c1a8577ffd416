"""The control plane: dead letters fail tasks, redeliveries change nothing, state persists,
and its HTTP API follows `stepwise serve`'s token rule with JSON errors."""

from __future__ import annotations

import httpx
import pytest

from agent_core.errors import UserError
from agent_core.llms import ScriptedLLM
from stepwise.services import (
    ActionTypes,
    AgentOrchestrator,
    AgentService,
    ControlPlaneServer,
    PipelineOrchestrator,
    QueueMessage,
    SimpleMessageQueue,
    TaskDefinition,
    TaskResult,
)
from stepwise.services.control_plane import ControlPlaneState
from stepwise.services.records import HopStatus, TaskStatus
from stepwise.services.services.base import BaseService

from ._system import call, echo_agent, eventually, free_port, running, served


class AlwaysFailingService(BaseService):
    """A service whose every delivery fails."""

    def __init__(self, queue, name="flaky"):
        super().__init__(queue, service_name=name, description="Fails.")
        self.deliveries = 0

    async def process_message(self, message):
        self.deliveries += 1
        raise ConnectionError("the backend is down")


async def test_a_message_that_always_fails_is_dead_lettered_and_fails_its_task():
    queue = SimpleMessageQueue(max_deliveries=3)
    flaky = AlwaysFailingService(queue)
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["flaky"]))

    async with running([flaky], control_plane):
        task = await control_plane.create_task("go")
        done = await control_plane.wait_for_task(task.task_id, timeout=10)

    assert done.status is TaskStatus.FAILED
    assert "flaky could not handle a new_task message after 3 deliveries" in done.error
    assert "ConnectionError: the backend is down" in done.error
    assert flaky.deliveries == 3
    (hop,) = control_plane.state.hops(task.task_id)
    assert hop.status is HopStatus.FAILED
    assert len(await queue.dead_letters("flaky")) == 1


async def test_a_dead_letter_notice_fails_the_task_with_its_reason():
    queue = SimpleMessageQueue()
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["x"]))
    control_plane.state.add_task(TaskDefinition(task_id="t1", input="go"))
    dead = QueueMessage(type="x", action=ActionTypes.NEW_TASK, data={"task_id": "t1"})
    notice = QueueMessage(
        type="control_plane",
        action=ActionTypes.DEAD_LETTER,
        data={"message": dead.model_dump(mode="json"), "reason": "KeyError: 'y'"},
    )

    await control_plane.process_message(notice)
    await control_plane.process_message(notice)  # Redelivered: nothing more happens.

    task = control_plane.state.get_task("t1")
    assert task.status is TaskStatus.FAILED
    assert task.error.endswith("KeyError: 'y'")


async def test_a_redelivered_new_task_asks_the_orchestrator_once_and_resends_the_same_hop():
    queue = SimpleMessageQueue()
    llm = ScriptedLLM([call("echo", input="x")])  # A second question would exhaust it.
    control_plane = ControlPlaneServer(queue, AgentOrchestrator(llm=llm))
    control_plane.state.register_service(
        AgentService(echo_agent(str)[0], queue, service_name="echo").service_definition
    )
    message = QueueMessage(
        type="control_plane",
        action=ActionTypes.NEW_TASK,
        data=TaskDefinition(task_id="t1", input="go").model_dump(mode="json"),
    )

    await control_plane.process_message(message)
    await control_plane.process_message(message.model_copy(update={"delivery_count": 2}))

    assert len(llm.requests) == 1
    (hop,) = control_plane.state.hops("t1")
    assert queue.pending("echo") == 2  # Sent, then resent under the same message id.
    first = await _take(queue, "echo")
    second = await _take(queue, "echo")
    assert first.id_ == second.id_ == hop.message_id


async def _take(queue, message_type):
    return await queue._queues[message_type].get()


async def test_a_duplicated_result_completes_the_hop_once():
    queue = SimpleMessageQueue()
    llm = ScriptedLLM([call("echo", input="x"), "done"])
    control_plane = ControlPlaneServer(queue, AgentOrchestrator(llm=llm))
    echo = AgentService(echo_agent(lambda t: t * 2)[0], queue, service_name="echo")

    async with running([echo], control_plane):
        task = await control_plane.create_task("go")
        await control_plane.wait_for_task(task.task_id, timeout=10)
        (hop,) = control_plane.state.hops(task.task_id)
        late = TaskResult(task_id=task.task_id, result="late copy", data={"hop_id": hop.hop_id})
        await control_plane.process_message(
            QueueMessage(
                type="control_plane",
                action=ActionTypes.COMPLETED_TASK,
                data=late.model_dump(mode="json"),
                delivery_count=2,
            )
        )

    assert control_plane.state.get_task(task.task_id).result == "done"
    assert len(llm.requests) == 2  # The orchestrator was not asked again.
    assert [h.result for h in control_plane.state.hops(task.task_id)] == ["xx"]


async def test_tasks_and_hops_survive_a_restart_in_the_sqlite_file(tmp_path):
    db = str(tmp_path / "control_plane.db")
    queue = SimpleMessageQueue()
    echo = AgentService(echo_agent(str.upper)[0], queue, service_name="echo")
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["echo"]), db=db)

    async with running([echo], control_plane):
        task = await control_plane.create_task("persist me")
        await control_plane.wait_for_task(task.task_id, timeout=10)
    control_plane.state.close()

    reopened = ControlPlaneState(db)
    assert reopened.get_task(task.task_id).result == "PERSIST ME"
    assert [h.service_name for h in reopened.hops(task.task_id)] == ["echo"]
    assert [s.service_name for s in reopened.list_services()] == ["echo"]


def test_the_api_requires_the_token_when_one_is_set_and_health_is_open():
    queue = SimpleMessageQueue()
    control_plane = ControlPlaneServer(
        queue, PipelineOrchestrator(["echo"]), port=free_port(), token="s3cret"
    )
    with served([], control_plane, queue) as url:
        refused = httpx.get(f"{url}/tasks")
        allowed = httpx.get(f"{url}/tasks", headers={"Authorization": "Bearer s3cret"})
        health = httpx.get(f"{url}/health")

    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"
    assert "s3cret" not in refused.text
    assert (allowed.status_code, allowed.json()) == (200, [])
    assert health.status_code == 200


async def test_listening_beyond_loopback_without_a_token_is_refused():
    queue = SimpleMessageQueue()
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["x"]), host="0.0.0.0")

    with pytest.raises(UserError, match="without a token"):
        await control_plane.launch_server()


def test_the_api_registers_lists_and_deregisters_services_and_answers_json_errors():
    queue = SimpleMessageQueue()
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["x"]), port=free_port())
    with served([], control_plane, queue) as url, httpx.Client(base_url=url) as http:
        registered = http.post(
            "/services/register",
            json={"service_name": "search", "description": "Searches.", "kind": "tool"},
        )
        listed = http.get("/services").json()
        gone = http.post("/services/deregister", json={"service_name": "search"})
        again = http.post("/services/deregister", json={"service_name": "search"})
        missing = http.get("/tasks/nope")
        bad = http.post("/tasks", json={"input": ""})

    assert registered.status_code == 200 and registered.json()["kind"] == "tool"
    assert [s["service_name"] for s in listed] == ["search"]
    assert gone.json() == {"deregistered": "search"}
    assert (again.status_code, again.json()["error"]["code"]) == (404, "service_not_found")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "task_not_found")
    assert "GET /tasks" in missing.json()["error"]["hint"]
    assert (bad.status_code, bad.json()["error"]["code"]) == (422, "invalid_request")


async def test_a_task_created_before_its_message_is_handled_is_already_listed():
    queue = SimpleMessageQueue()
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["echo"]))

    task = await control_plane.create_task("queued")  # Nobody consumes yet.

    assert control_plane.state.get_task(task.task_id).status is TaskStatus.RUNNING
    echo = AgentService(echo_agent(str.upper)[0], queue, service_name="echo")
    async with running([echo], control_plane):
        done = await control_plane.wait_for_task(task.task_id, timeout=10)
    assert done.result == "QUEUED"
    assert await eventually(lambda: queue.pending("control_plane") == 0)
