"""Redis loses a key under a running system: no task is left stuck, no hop runs twice.

Issue 28, item 1. `FLUSHALL`, `DEL <prefix>control_plane` or `DEL <prefix><service>` (what an
operator, an eviction policy or a restart without persistence does) while hops are in flight
and more tasks arrive. Each consumer recreates its group, the lost hops are sent again, every
task completes within a bound with each input run once, a WARNING names the stream, and
`/health` says the queue is degraded until the re-sent hops are answered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import httpx
import pytest
import redis

from agent_core.llms import ChatMessage, FunctionLLM, ToolSpec
from stepwise.services import (
    AgentService,
    ControlPlaneServer,
    PipelineOrchestrator,
    RedisStreamsMessageQueue,
    SimpleMessageQueue,
)
from stepwise.services.records import TaskStatus

from ._system import eventually, runner, running

IN_FLIGHT, ARRIVING = 5, 3
HOP_SECONDS = 0.3
WITHIN = 30.0  # Seconds for every task to end: the bound a stuck task breaks.


def _flushall(raw: redis.Redis, prefix: str) -> None:
    # One transaction: the reply proves the keys were there and then were gone, before any
    # consumer of the running system could put them back.
    pipe = raw.pipeline(transaction=True)
    pipe.dbsize().flushall().dbsize()
    before, _, after = pipe.execute()
    assert before > 0 and after == 0


def _delete(stream: str) -> Callable[[redis.Redis, str], None]:
    def delete(raw: redis.Redis, prefix: str) -> None:
        key = f"{prefix}{stream}"
        pipe = raw.pipeline(transaction=True)
        pipe.exists(key).delete(key).exists(key)
        existed, deleted, exists = pipe.execute()
        assert (existed, deleted, exists) == (1, 1, 0)

    return delete


def _slow_agent(seen: list[str]) -> FunctionLLM:
    async def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        seen.append(messages[-1].content)
        await asyncio.sleep(HOP_SECONDS)  # Hops queue up behind it: some wait in the stream.
        return messages[-1].content.upper()

    return FunctionLLM(reply)


def _blocked_reader(raw: redis.Redis) -> bool:
    """Whether a client waits in a blocking XREADGROUP (the idle control plane's consumer)."""
    return any(
        "b" in client["flags"] and client["cmd"] == "xreadgroup" for client in raw.client_list()
    )


async def _health(client: httpx.AsyncClient) -> tuple[int, dict[str, str]]:
    reply = await client.get("/health")
    return reply.status_code, reply.json()


@pytest.mark.parametrize(
    ("fault", "lost"),
    [(_flushall, "FLUSHALL"), (_delete("control_plane"), "control_plane"), (_delete("up"), "up")],
    ids=["flushall", "del-control-plane-stream", "del-service-stream"],
)
async def test_a_lost_key_leaves_no_task_stuck_and_no_hop_run_twice(
    redis_url: str,
    stream_prefix: str,
    caplog: pytest.LogCaptureFixture,
    fault: Callable[[redis.Redis, str], None],
    lost: str,
) -> None:
    caplog.set_level(logging.WARNING, logger="stepwise.services")
    # A long block, so the control plane's consumer is blocked in XREADGROUP when the key
    # goes (Redis answers it "UNBLOCKED"), and a long visibility timeout, so no re-claim
    # rescues a lost message: only noticing the loss does.
    queue = RedisStreamsMessageQueue(
        redis_url, stream_prefix=stream_prefix, block_ms=1_000, max_backoff=0.2
    )
    seen: list[str] = []
    service = AgentService(runner(_slow_agent(seen)), queue, service_name="up", description="d")
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["up"]), hop_timeout=2.0)
    transport = httpx.ASGITransport(app=control_plane.app)
    raw = redis.Redis.from_url(redis_url, decode_responses=True)
    async with (
        running([service], control_plane),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as api,
    ):
        assert await _health(api) == (200, {"status": "ok"})
        seen_health: list[tuple[int, dict[str, str]]] = []
        watching = asyncio.create_task(_watch_health(api, seen_health))
        first = [await control_plane.create_task(f"first {i}") for i in range(IN_FLIGHT)]
        # Every hop sent, the first running, the rest queued in the service's stream.
        await eventually(lambda: raw.xlen(f"{stream_prefix}up") == IN_FLIGHT and seen, within=10)
        await eventually(lambda: _blocked_reader(raw), within=10)  # The control plane waits.
        fault(raw, stream_prefix)
        later = [await control_plane.create_task(f"later {i}") for i in range(ARRIVING)]
        try:
            waits = [control_plane.wait_for_task(task.task_id) for task in first + later]
            ended = await asyncio.wait_for(asyncio.gather(*waits), WITHIN)
            await eventually(lambda: seen_health[-1][1]["status"] == "ok", within=10)
        finally:
            watching.cancel()
    raw.close()
    await queue.close()
    inputs = [task.input for task in first + later]
    assert [(task.status, task.result) for task in ended] == [
        (TaskStatus.COMPLETED, text.upper()) for text in inputs
    ]
    assert sorted(seen) == sorted(inputs)  # Each hop's work done once.
    degraded = [(code, body) for code, body in seen_health if body["status"] != "ok"]
    assert degraded, "/health never said the queue was degraded"
    assert {code for code, _ in degraded} == {200}  # Still serving: load balancers keep it.
    assert all(body["status"] == "degraded" for _, body in degraded), degraded
    assert any("re-sent" in body.get("queue", "") for _, body in degraded), degraded
    assert seen_health[-1] == (200, {"status": "ok"})
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    named = stream_prefix if lost == "FLUSHALL" else f"{stream_prefix}{lost}"
    assert any("recreated" in text and named in text for text in warnings), warnings


async def _watch_health(api: httpx.AsyncClient, seen: list[tuple[int, dict[str, str]]]) -> None:
    while True:
        seen.append(await _health(api))
        await asyncio.sleep(0.02)


async def test_health_answers_503_once_the_control_planes_consumer_stopped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = SimpleMessageQueue()

    async def dies() -> None:
        await asyncio.sleep(0.05)
        raise RuntimeError("a bug in the consuming loop")

    async def register(consumer: object) -> Callable[[], object]:
        return dies

    queue.register_consumer = register  # type: ignore[method-assign]
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["x"]), hop_timeout=0.4)
    transport = httpx.ASGITransport(app=control_plane.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as api:
        running_task = await control_plane.launch_local()
        await eventually(lambda: control_plane.health()["status"] == "down")
        code, body = await _health(api)
        watch_alive = not running_task.done()  # The hop watch's clock still runs.
        running_task.cancel()
        await asyncio.gather(running_task, return_exceptions=True)
    assert (code, body["status"]) == (503, "down")
    assert "a bug in the consuming loop" in body["queue"]
    assert watch_alive
    assert "consumer stopped" in caplog.text
