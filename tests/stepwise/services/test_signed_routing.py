"""A signed message is good for its own stream, addressee and hop only; a result counts once.

Issue 28, item 2: whoever can write to Redis (without the token) copies signed entries from
one stream into another, or replays a result, and the system does not move: the copy is
refused (logged, acknowledged, kept as a dead letter) and the task completes with the answer
of the service its hop was sent to; a human hop is answered only through the inbox.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging

import pytest
import redis

from stepwise.services import (
    ActionTypes,
    AgentService,
    ControlPlaneServer,
    HumanService,
    PipelineOrchestrator,
    QueueMessage,
    RedisStreamsMessageQueue,
    SimpleMessageQueue,
    TaskResult,
)
from stepwise.services.message_queues.signing import signing_key
from stepwise.services.messages import CONTROL_PLANE
from stepwise.services.records import HopStatus, HumanRequestStatus, TaskStatus

from ._system import echo_agent, eventually, running

TOKEN = "a-long-shared-secret-0123456789"


def _queue(redis_url: str, prefix: str) -> RedisStreamsMessageQueue:
    return RedisStreamsMessageQueue(
        redis_url, stream_prefix=prefix, block_ms=100, max_backoff=0.2, signing_token=TOKEN
    )


def _copy_entries(raw: redis.Redis, source: str, target: str) -> list[dict[str, str]]:
    """Copy every entry of `source` into `target` as it is (a replay by a Redis writer)."""
    entries = [fields for _, fields in raw.xrange(source)]
    assert entries, f"nothing to copy in {source}"
    for fields in entries:
        raw.xadd(target, fields)
    return entries


async def test_a_new_task_copied_into_another_services_stream_is_refused(
    redis_url: str, stream_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="stepwise.services")
    queue = _queue(redis_url, stream_prefix)
    secret_agent, secret_saw = echo_agent(lambda text: f"secret: {text}")
    dumb_agent, dumb_saw = echo_agent(lambda text: f"dumb: {text}")
    secret = AgentService(secret_agent, queue, service_name="secret_fact_agent")
    dumb = AgentService(dumb_agent, queue, service_name="dumb_fact_agent")
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["secret_fact_agent"]))
    raw = redis.Redis.from_url(redis_url, decode_responses=True)
    async with running([dumb], control_plane):
        await control_plane.register_service(secret.service_definition)  # Not consuming yet.
        task = await control_plane.create_task("the fact")
        await eventually(lambda: raw.xlen(f"{stream_prefix}secret_fact_agent") == 1)
        _copy_entries(raw, f"{stream_prefix}secret_fact_agent", f"{stream_prefix}dumb_fact_agent")
        refused = await eventually(
            lambda: raw.xlen(f"{stream_prefix}dead:dumb_fact_agent"), within=10
        )
        still = control_plane.state.get_task(task.task_id).status
        consuming = await secret.launch_local()
        try:
            ended = await control_plane.wait_for_task(task.task_id, timeout=20)
        finally:
            consuming.cancel()
            await asyncio.gather(consuming, return_exceptions=True)
    raw.close()
    await queue.close()
    assert refused == 1 and dumb_saw == [] and still is TaskStatus.RUNNING
    assert (ended.status, ended.result) == (TaskStatus.COMPLETED, "secret: the fact")
    assert secret_saw == ["the fact"]
    warnings = " ".join(r.getMessage() for r in caplog.records)
    assert f"signed for {stream_prefix}secret_fact_agent" in warnings, warnings


async def test_a_human_hop_copied_into_an_agents_stream_does_not_bypass_the_person(
    redis_url: str, stream_prefix: str
) -> None:
    queue = _queue(redis_url, stream_prefix)
    agent, agent_saw = echo_agent(str.upper)
    services = [
        HumanService(queue, service_name="human"),
        AgentService(agent, queue, service_name="echo"),
    ]
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["human"]))
    raw = redis.Redis.from_url(redis_url, decode_responses=True)
    async with running(services, control_plane):
        task = await control_plane.create_task("may I deploy?")
        (request,) = await eventually(control_plane.state.human_requests, within=10)
        _copy_entries(raw, f"{stream_prefix}human", f"{stream_prefix}echo")
        await eventually(lambda: raw.xlen(f"{stream_prefix}dead:echo"), within=10)
        waiting = control_plane.state.get_human_request(request.request_id)
        status = control_plane.state.get_task(task.task_id).status
        await control_plane.answer_human_request(request.request_id, "yes, go")
        ended = await control_plane.wait_for_task(task.task_id, timeout=20)
    raw.close()
    await queue.close()
    assert agent_saw == []  # The agent never ran the person's question.
    assert (waiting.status, status) == (HumanRequestStatus.WAITING, TaskStatus.AWAITING_HUMAN)
    assert (ended.status, ended.result) == (TaskStatus.COMPLETED, "yes, go")


async def test_a_replayed_result_is_refused_and_sends_nothing_again(
    redis_url: str, stream_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="stepwise.services")
    queue = _queue(redis_url, stream_prefix)
    first, _ = echo_agent(lambda text: f"{text} one")
    second, second_saw = echo_agent(lambda text: f"{text} two")
    one = AgentService(first, queue, service_name="one")
    two = AgentService(second, queue, service_name="two")
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["one", "two"]))
    raw = redis.Redis.from_url(redis_url, decode_responses=True)
    async with running([one], control_plane):
        await control_plane.register_service(two.service_definition)  # Not consuming yet.
        task = await control_plane.create_task("go")
        await eventually(lambda: raw.xlen(f"{stream_prefix}two") == 1, within=10)
        results = [
            fields
            for _, fields in raw.xrange(f"{stream_prefix}{CONTROL_PLANE}")
            if QueueMessage.model_validate_json(fields["message"]).action
            is ActionTypes.COMPLETED_TASK
        ]
        assert len(results) == 1  # Hop 1's result, accepted: hop 2 was sent.
        raw.xadd(f"{stream_prefix}{CONTROL_PLANE}", results[0])
        await eventually(lambda: "refused a result" in caplog.text, within=10)
        sent_to_two = raw.xlen(f"{stream_prefix}two")
        consuming = await two.launch_local()
        try:
            ended = await control_plane.wait_for_task(task.task_id, timeout=20)
        finally:
            consuming.cancel()
            await asyncio.gather(consuming, return_exceptions=True)
    raw.close()
    await queue.close()
    assert sent_to_two == 1  # The replay sent hop 2 nowhere again.
    assert (ended.status, ended.result) == (TaskStatus.COMPLETED, "go one two")
    assert second_saw == ["go one"]


async def test_an_old_format_signed_message_is_refused_with_a_clear_reason(
    redis_url: str, stream_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="stepwise.services")
    queue = _queue(redis_url, stream_prefix)
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["x"]))
    message = QueueMessage(
        type=CONTROL_PLANE, action=ActionTypes.NEW_TASK, data={"task_id": "old", "input": "x"}
    )
    payload = message.model_dump_json()
    v1 = hmac.new(signing_key(TOKEN), payload.encode(), hashlib.sha256).hexdigest()
    raw = redis.Redis.from_url(redis_url, decode_responses=True)
    async with running([], control_plane):
        raw.xadd(f"{stream_prefix}{CONTROL_PLANE}", {"message": payload, "sig": v1})
        await eventually(lambda: raw.xlen(f"{stream_prefix}dead:{CONTROL_PLANE}"), within=10)
        dead = await queue.dead_letters(CONTROL_PLANE)
    raw.close()
    await queue.close()
    assert control_plane.state.list_tasks() == []
    assert [letter.reason for letter in dead] == ["old-format signature"]
    assert "signed without its stream" in caplog.text


async def test_the_control_plane_takes_a_hops_result_only_from_its_service() -> None:
    queue = SimpleMessageQueue()
    services = [HumanService(queue, service_name="human")]
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["human"]))
    async with running(services, control_plane):
        task = await control_plane.create_task("approve?")
        (request,) = await eventually(control_plane.state.human_requests, within=5)
        for publisher in ("echo", "human"):  # Another service; the human's name, no inbox.
            forged = TaskResult(
                task_id=task.task_id,
                result=f"{publisher} says yes",
                data={"hop_id": request.hop_id, "service_name": publisher},
            )
            await control_plane.process_message(
                QueueMessage(
                    publisher_id=publisher,
                    type=CONTROL_PLANE,
                    action=ActionTypes.COMPLETED_TASK,
                    data=forged.model_dump(mode="json"),
                )
            )
        (hop,) = control_plane.state.hops(task.task_id)
        assert hop.status is HopStatus.SENT
        await control_plane.answer_human_request(request.request_id, "the person says yes")
        ended = await control_plane.wait_for_task(task.task_id, timeout=10)
    assert ended.result == "the person says yes"
