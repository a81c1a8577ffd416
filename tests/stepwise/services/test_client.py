"""The clients: tasks, results, services and the human inbox over a real HTTP server."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from stepwise.services import (
    AgentService,
    AsyncServicesClient,
    ControlPlaneError,
    ControlPlaneServer,
    HumanService,
    PipelineOrchestrator,
    ServicesClient,
    SimpleMessageQueue,
    TaskFailedError,
)
from stepwise.services.records import HumanRequestStatus, TaskStatus

from ._system import ROOT, echo_agent, free_port, served, wait_for
from .test_control_plane import AlwaysFailingService


def _review_pipeline(**control_plane_options):
    queue = SimpleMessageQueue(max_deliveries=2)
    shout, _ = echo_agent(str.upper)
    services = [
        HumanService(queue, service_name="reviewer"),
        AgentService(shout, queue, service_name="shouter"),
        AlwaysFailingService(queue),
    ]
    control_plane = ControlPlaneServer(
        queue, PipelineOrchestrator(["reviewer", "shouter"]), port=free_port(),
        **control_plane_options,
    )  # fmt: skip
    return services, control_plane, queue


def test_a_human_request_is_answered_through_the_inbox_api():
    services, control_plane, queue = _review_pipeline()
    with served(services, control_plane, queue) as url, ServicesClient(url) as client:
        task_id = client.create_task("Ship it?")
        (request,) = wait_for(client.list_human_requests)
        assert (request.task_id, request.prompt, request.service_name) == (
            task_id,
            "Ship it?",
            "reviewer",
        )
        assert client.get_task(task_id).status is TaskStatus.AWAITING_HUMAN
        assert client.get_task_result(task_id) is None

        client.answer_human_request(request.request_id, "yes, ship it")
        result = client.wait_for_result(task_id, timeout=10)
        with pytest.raises(ControlPlaneError) as twice:
            client.answer_human_request(request.request_id, "no")
        answered = client.list_human_requests(HumanRequestStatus.ANSWERED)

    assert result.result == "YES, SHIP IT"
    assert [hop["service_name"] for hop in result.history] == ["reviewer", "shouter"]
    assert (twice.value.status, twice.value.code) == (409, "human_request_answered")
    assert [r.answer for r in answered] == ["yes, ship it"]


def test_a_failed_task_raises_its_reason_from_the_client():
    queue = SimpleMessageQueue(max_deliveries=2)
    flaky = AlwaysFailingService(queue)
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["flaky"]), port=free_port())
    with served([flaky], control_plane, queue) as url, ServicesClient(url) as client:
        task_id = client.create_task("go")
        with pytest.raises(TaskFailedError, match="backend is down"):
            client.wait_for_result(task_id, timeout=10)
        with pytest.raises(ControlPlaneError) as unknown:
            client.get_task_result("no-such-task")

    assert (unknown.value.status, unknown.value.code) == (404, "task_not_found")


async def test_the_async_client_creates_tasks_and_answers_the_inbox():
    services, control_plane, queue = _review_pipeline(token="tok")
    with served(services, control_plane, queue) as url:
        async with AsyncServicesClient(url, token="tok") as client:
            task_id = await client.create_task("Ship it?")
            while not (requests := await client.list_human_requests()):  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            await client.answer_human_request(requests[0].request_id, "fine")
            result = await client.wait_for_result(task_id, timeout=10)
            services_listed = await client.list_services()
            tasks = await client.list_tasks()

    assert result.result == "FINE"
    assert {s.service_name: s.kind for s in services_listed} == {
        "reviewer": "human",
        "shouter": "agent",
        "flaky": "agent",
    }
    assert [t.task_id for t in tasks] == [task_id]


def test_a_client_in_another_process_gets_the_result():
    services, control_plane, queue = _review_pipeline(token="tok")
    script = (
        "import sys\n"
        "from stepwise.services import ServicesClient\n"
        "with ServicesClient(sys.argv[1], token='tok') as client:\n"
        "    task_id = client.create_task('from afar')\n"
        "    import time\n"
        "    while not (asks := client.list_human_requests()):\n"
        "        time.sleep(0.02)\n"
        "    client.answer_human_request(asks[0].request_id, asks[0].prompt + ', answered')\n"
        "    print(client.wait_for_result(task_id, timeout=20).result)\n"
    )
    with served(services, control_plane, queue) as url:
        done = subprocess.run(
            [sys.executable, "-c", script, url],
            capture_output=True, text=True, timeout=60, cwd=ROOT,
        )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "FROM AFAR, ANSWERED"
