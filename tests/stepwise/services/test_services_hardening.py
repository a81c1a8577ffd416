"""The services refuse bad names, time out hops nobody answers, and fail fast without Redis.

Issue 23, item 10 (and item 12's 10 MB message): each test runs a control plane on this
session's real redis-server, with short timeouts set here.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
import redis

from agent_core.errors import UserError
from agent_core.llms import ChatMessage, FunctionLLM, ToolSpec
from stepwise.cli.services_config import load_config
from stepwise.services import (
    AgentService,
    ControlPlaneServer,
    PipelineOrchestrator,
    QueueMessage,
    RedisStreamsMessageQueue,
    ServiceDefinition,
    SimpleMessageQueue,
)
from stepwise.services.errors import InvalidServiceNameError
from stepwise.services.messages import CONTROL_PLANE, ActionTypes
from stepwise.services.names import MAX_SERVICE_NAME
from stepwise.services.records import TASK_LIST_TEXT_LIMIT, TaskStatus
from tests._redis_server import RedisServer

from ._system import echo_agent, eventually, free_port, runner, running, served, wait_for

BAD_NAMES = ["", "../x", "a/b", "control_plane", "default", "x" * (MAX_SERVICE_NAME + 1),
             "a b", "dead:x", "x.replies.1", "-lead", "ünï"]  # fmt: skip


def _queue(redis_url: str, prefix: str, **options: float) -> RedisStreamsMessageQueue:
    return RedisStreamsMessageQueue(
        redis_url, stream_prefix=prefix, block_ms=100, max_backoff=0.2, **options
    )


def test_bad_service_names_are_refused_with_a_stable_code_everywhere_a_name_arrives(
    tmp_path,
) -> None:
    queue = SimpleMessageQueue()
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["ok"]), port=free_port())
    with served([], control_plane, queue) as url:
        for name in BAD_NAMES:
            body = {"service_name": name, "description": "d"}
            reply = httpx.post(f"{url}/services/register", json=body, timeout=10)
            assert reply.status_code == 422, (name, reply.text)
            assert reply.json()["error"]["code"] == "invalid_service_name", name
        good = {"service_name": "ok", "description": "d"}
        assert httpx.post(f"{url}/services/register", json=good, timeout=10).status_code == 200
        assert [s["service_name"] for s in httpx.get(f"{url}/services", timeout=10).json()] == [
            "ok"
        ]
    agent, _ = echo_agent(str.upper)
    with pytest.raises(InvalidServiceNameError, match="reserved"):
        AgentService(agent, queue, service_name="control_plane")
    config = tmp_path / "bad.toml"
    config.write_text('queue = "simple"\n[[services]]\nname = "../x"\nkind = "human"\n')
    with pytest.raises(UserError, match=r"\[\[services\]\] #1: the service name '../x'"):
        load_config(config)


async def test_a_hop_to_a_service_no_process_consumes_is_sent_again_then_fails_its_task(
    redis_url: str, stream_prefix: str
) -> None:
    queue = _queue(redis_url, stream_prefix)
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["ghost"]), hop_timeout=0.5)
    async with running([], control_plane):
        await control_plane.register_service(
            ServiceDefinition(service_name="ghost", description="d")
        )
        started = time.monotonic()
        task = await control_plane.create_task("anyone there?")
        ended = await control_plane.wait_for_task(task.task_id, timeout=20)
        took = time.monotonic() - started
    await queue.close()
    assert ended.status is TaskStatus.FAILED
    assert ended.error is not None
    assert "hop 1 to service 'ghost' timed out" in ended.error
    assert "not running, or every replica of it died" in ended.error
    with redis.Redis.from_url(redis_url, decode_responses=True) as raw:
        sent = raw.xrange(f"{stream_prefix}ghost")
    assert len(sent) == 2  # Sent, timed out, sent again once, timed out: failed.
    ids = {QueueMessage.model_validate_json(fields["message"]).id_ for _, fields in sent}
    assert len(ids) == 1  # The same message id: a service would run it once.
    assert took < 15  # About 2 x hop_timeout plus the watch's interval; generous for load.


async def test_a_hop_a_live_service_works_on_for_longer_than_the_timeout_is_not_timed_out(
    redis_url: str, stream_prefix: str
) -> None:
    seen: list[str] = []

    async def slow(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        seen.append(messages[-1].content)
        await asyncio.sleep(2.5)  # 8 hop timeouts: its consumer renews its lease meanwhile.
        return messages[-1].content.upper()

    queue = _queue(redis_url, stream_prefix, visibility_timeout=2.0)
    service = AgentService(runner(FunctionLLM(slow)), queue, service_name="slow", description="d")
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["slow"]), hop_timeout=0.3)
    async with running([service], control_plane):
        task = await control_plane.create_task("patience")
        ended = await control_plane.wait_for_task(task.task_id, timeout=20)
    await queue.close()
    assert (ended.status, ended.result) == (TaskStatus.COMPLETED, "PATIENCE")
    assert seen == ["patience"]  # Never sent again: it ran once.
    with redis.Redis.from_url(redis_url, decode_responses=True) as raw:
        assert len(raw.xrange(f"{stream_prefix}slow")) == 1


def test_creating_a_task_while_redis_is_down_answers_503_fast_and_leaves_no_task_running(
    redis_url: str, stream_prefix: str, redis_server: RedisServer
) -> None:
    queue = _queue(redis_url, stream_prefix)
    control_plane = ControlPlaneServer(
        queue, PipelineOrchestrator(["x"]), port=free_port(), create_timeout=1.0
    )
    with served([], control_plane, queue) as url:
        redis_server.stop()
        try:
            started = time.monotonic()
            reply = httpx.post(f"{url}/tasks", json={"input": "hello"}, timeout=30)
            took = time.monotonic() - started
            tasks = httpx.get(f"{url}/tasks", timeout=10).json()
        finally:
            redis_server.start()
    assert reply.status_code == 503, reply.text
    error = reply.json()["error"]
    assert error["code"] == "queue_unavailable"
    assert "redis-server" in error["hint"]
    assert took < 8  # create_timeout is 1 s; the old code answered a 500 after 10 s.
    assert [(t["task_id"], t["status"]) for t in tasks] == [(error["task_id"], "failed")]
    assert "could not be reached" in tasks[0]["error"]


def test_a_10_mb_message_does_not_make_the_task_list_10_mb(
    redis_url: str, stream_prefix: str
) -> None:
    queue = _queue(redis_url, stream_prefix)
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["x"]), port=free_port())
    huge = "y" * 10_000_000
    message = QueueMessage(
        type=CONTROL_PLANE, action=ActionTypes.NEW_TASK, data={"task_id": "big", "input": huge}
    )
    with served([], control_plane, queue) as url:
        with redis.Redis.from_url(redis_url) as raw:  # Straight into the queue: no body limit.
            raw.xadd(f"{stream_prefix}{CONTROL_PLANE}", {"message": message.model_dump_json()})
        wait_for(lambda: httpx.get(f"{url}/tasks", timeout=10).json())
        listed = httpx.get(f"{url}/tasks", timeout=10)
        one = httpx.get(f"{url}/tasks/big", timeout=30).json()
    assert len(listed.content) < 20_000
    [task] = listed.json()
    assert task["truncated"] is True
    assert task["input"] == "y" * TASK_LIST_TEXT_LIMIT + "…"
    assert len(one["input"]) == 10_000_000  # The task itself keeps it whole.


async def test_with_a_token_a_message_written_to_redis_without_it_is_never_handled(
    redis_url: str, stream_prefix: str
) -> None:
    token = "a-long-shared-secret-0123456789"
    queue = _queue(redis_url, stream_prefix, signing_token=token)
    agent, seen = echo_agent(str.upper)
    service = AgentService(agent, queue, service_name="echo", description="d")
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["echo"]))
    forged_task = QueueMessage(
        type=CONTROL_PLANE, action=ActionTypes.NEW_TASK, data={"task_id": "forged", "input": "x"}
    )
    forged_hop = QueueMessage(type="echo", action=ActionTypes.NEW_TASK, data={"task_id": "f",
                              "input": "forged hop", "hop_id": "h"})  # fmt: skip
    async with running([service], control_plane):
        with redis.Redis.from_url(redis_url, decode_responses=True) as raw:  # A Redis writer:
            raw.xadd(f"{stream_prefix}{CONTROL_PLANE}", {"message": forged_task.model_dump_json()})
            raw.xadd(f"{stream_prefix}echo", {"message": forged_hop.model_dump_json(),
                                              "sig": "0" * 64})  # fmt: skip
        task = await control_plane.create_task("signed")  # Published after the forgeries.
        ended = await control_plane.wait_for_task(task.task_id, timeout=20)
        dropped = await eventually(
            lambda: len(control_plane.state.list_tasks()) == 1 and seen == ["signed"], within=5
        )
        dead = await queue.dead_letters(CONTROL_PLANE) + await queue.dead_letters("echo")
    await queue.close()
    assert (ended.status, ended.result) == (TaskStatus.COMPLETED, "SIGNED")
    assert dropped  # Neither forgery was handled: no task "forged", no hop run for it.
    assert [letter.reason for letter in dead] == ["missing signature", "wrong signature"]
    assert token not in repr(queue) and token not in repr(queue.settings)
