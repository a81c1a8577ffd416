"""The Redis Streams queue under faults: a consumer killed with SIGKILL, a consumer whose
process keeps dying, a cancelled consumer, and redis-server stopped and restarted."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from stepwise.services import (
    ActionTypes,
    MessageQueueUnavailableError,
    QueueMessage,
    RedisStreamsMessageQueue,
)
from stepwise.services.messages import CONTROL_PLANE
from tests.stepwise.services._queue_support import Recorder, consuming, wait_until
from tests.stepwise.services.conftest import RedisServer

ROOT = Path(__file__).resolve().parents[3]
VISIBILITY = 0.5


def make_queue(url: str, prefix: str, **options: object) -> RedisStreamsMessageQueue:
    options = {"visibility_timeout": VISIBILITY, "block_ms": 100, **options}
    return RedisStreamsMessageQueue(url, stream_prefix=prefix, **options)  # type: ignore[arg-type]


async def _start_worker(url: str, prefix: str, message_type: str) -> asyncio.subprocess.Process:
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.stepwise.services._queue_worker",
        url,
        prefix,
        message_type,
        str(VISIBILITY),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    assert worker.stdout is not None
    assert await asyncio.wait_for(worker.stdout.readline(), 30) == b"ready\n"
    return worker


async def test_a_consumer_killed_mid_handling_has_its_message_finished_by_another(
    redis_url: str, stream_prefix: str
) -> None:
    queue = make_queue(redis_url, stream_prefix)
    worker = await _start_worker(redis_url, stream_prefix, "replicated")
    try:
        message = QueueMessage(type="replicated", data={"task_id": "t1"})
        await queue.publish(message)
        assert worker.stdout is not None
        started = await asyncio.wait_for(worker.stdout.readline(), 10)
        assert started.decode().split() == ["started", message.id_, "1"]
        survivor = Recorder()
        async with consuming(queue, survivor.consumer("replicated")):
            worker.send_signal(signal.SIGKILL)
            await worker.wait()
            await wait_until(lambda: survivor.handled)
            await asyncio.sleep(2 * VISIBILITY)  # Room for a duplicate, were there one.
        assert [(m.id_, m.delivery_count) for m in survivor.deliveries] == [(message.id_, 2)]
    finally:
        if worker.returncode is None:
            worker.kill()
            await worker.wait()
        await queue.close()


async def test_a_message_whose_consumers_keep_dying_is_dead_lettered_without_running(
    redis_url: str, stream_prefix: str
) -> None:
    queue = make_queue(redis_url, stream_prefix, max_deliveries=3)
    handler, control_plane = Recorder(), Recorder()
    await queue.register_consumer(handler.consumer("poison"))  # Creates the group.
    message = QueueMessage(type="poison")
    await queue.publish(message)
    stream = queue.settings.stream("poison")
    # Three deliveries to consumers that died before acknowledging (as SIGKILL leaves them).
    raw = aioredis.Redis.from_url(redis_url, decode_responses=True)
    [[_, [(entry_id, _fields)]]] = await raw.xreadgroup("poison", "dead-1", {stream: ">"}, 1)
    await raw.xclaim(stream, "poison", "dead-3", 0, [entry_id], idle=60_000, retrycount=3)
    await raw.aclose()
    async with (
        consuming(queue, handler.consumer("poison")),
        consuming(queue, control_plane.consumer(CONTROL_PLANE)),
    ):
        await wait_until(lambda: control_plane.handled)
    assert handler.deliveries == []
    [letter] = await queue.dead_letters("poison")
    assert letter.message.id_ == message.id_
    assert "delivered 4 times without being acknowledged" in letter.reason
    assert control_plane.handled[0].action == ActionTypes.DEAD_LETTER
    await queue.close()


async def test_a_cancelled_consumer_hands_its_message_back_at_once(
    redis_url: str, stream_prefix: str
) -> None:
    queue = make_queue(redis_url, stream_prefix, visibility_timeout=60.0, claim_interval=0.1)
    stuck, other = Recorder(delay=3600), Recorder()
    start_stuck = await queue.register_consumer(stuck.consumer("handoff"))
    stuck_task = asyncio.create_task(start_stuck())
    message = QueueMessage(type="handoff")
    await queue.publish(message)
    await wait_until(lambda: stuck.deliveries)
    async with consuming(queue, other.consumer("handoff")):
        stuck_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stuck_task
        # Well before the 60 s visibility timeout: handed back, not left to time out.
        await wait_until(lambda: other.handled, within=10)
    assert [(m.id_, m.delivery_count) for m in other.handled] == [(message.id_, 2)]
    await queue.close()


async def test_consumers_carry_on_across_a_redis_restart_and_lose_nothing(
    redis_server: RedisServer, redis_url: str, stream_prefix: str
) -> None:
    queue = make_queue(redis_url, stream_prefix, max_backoff=0.2)
    recorder = Recorder(delay=0.02)
    sent = [QueueMessage(type="steady", data={"n": n}) for n in range(30)]

    async def publish_all() -> None:
        for message in sent:
            await queue.publish(message)
            await asyncio.sleep(0.02)

    async with consuming(queue, recorder.consumer("steady"), replicas=2) as tasks:
        publishing = asyncio.create_task(publish_all())
        await wait_until(lambda: len(recorder.handled) >= 5)
        await asyncio.to_thread(redis_server.restart, kill=True, down_for=0.5)
        await publishing
        await wait_until(lambda: {m.id_ for m in recorder.handled} >= {m.id_ for m in sent})
        assert not any(task.done() for task in tasks)
        after = QueueMessage(type="steady")
        await queue.publish(after)
        await wait_until(lambda: any(m.id_ == after.id_ for m in recorder.handled))
    await queue.close()


async def test_publishing_while_redis_is_briefly_down_waits_for_it(
    redis_server: RedisServer, redis_url: str, stream_prefix: str
) -> None:
    queue = make_queue(redis_url, stream_prefix, publish_timeout=20.0, max_backoff=0.2)
    redis_server.stop()
    message = QueueMessage(type="patient")
    publishing = asyncio.create_task(queue.publish(message))
    await asyncio.sleep(0.5)
    assert not publishing.done()
    await asyncio.to_thread(redis_server.start)
    await asyncio.wait_for(publishing, 20)
    recorder = Recorder()
    async with consuming(queue, recorder.consumer("patient")):
        await wait_until(lambda: recorder.handled)
    assert recorder.handled[0].id_ == message.id_
    await queue.close()


async def test_publishing_while_redis_stays_down_raises_a_clear_error(
    redis_server: RedisServer, redis_url: str, stream_prefix: str
) -> None:
    queue = make_queue(redis_url, stream_prefix, publish_timeout=0.5)
    redis_server.stop()
    try:
        with pytest.raises(MessageQueueUnavailableError) as caught:
            await queue.publish(QueueMessage(type="unlucky"))
    finally:
        await asyncio.to_thread(redis_server.start)
    assert f"Redis at {redis_url} stayed unreachable for 0.5 s" in str(caught.value)
    assert "start redis-server" in caught.value.hint
    await queue.close()
