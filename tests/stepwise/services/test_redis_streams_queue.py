"""RedisStreamsMessageQueue against a real redis-server: delivery, competition, retries,
dead letters, leases, bounded streams, and use from any event loop or thread."""

from __future__ import annotations

import asyncio
import threading

import pytest
import redis.asyncio as aioredis

from stepwise.services import (
    ActionTypes,
    CallableMessageConsumer,
    QueueMessage,
    RedisStreamsMessageQueue,
)
from stepwise.services.messages import CONTROL_PLANE
from tests.stepwise.services._queue_support import Recorder, consuming, wait_until


def make_queue(url: str, prefix: str, **options: object) -> RedisStreamsMessageQueue:
    options = {"visibility_timeout": 0.5, "block_ms": 100, **options}
    return RedisStreamsMessageQueue(url, stream_prefix=prefix, **options)  # type: ignore[arg-type]


@pytest.fixture
async def queue(redis_url: str, stream_prefix: str):
    queue = make_queue(redis_url, stream_prefix)
    yield queue
    await queue.close()


@pytest.fixture
async def raw(redis_url: str):
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()


async def test_a_published_message_reaches_its_consumer(queue: RedisStreamsMessageQueue) -> None:
    recorder = Recorder()
    async with consuming(queue, recorder.consumer("writer")):
        sent = QueueMessage(type="writer", action=ActionTypes.NEW_TASK, data={"input": "hi"})
        await queue.publish(sent)
        await wait_until(lambda: recorder.handled)
    [got] = recorder.handled
    assert (got.id_, got.action, got.data, got.delivery_count) == (
        sent.id_,
        ActionTypes.NEW_TASK,
        {"input": "hi"},
        1,
    )
    assert got.stats.publish_time is not None


async def test_a_message_published_before_any_consumer_waits_for_one(
    queue: RedisStreamsMessageQueue,
) -> None:
    early = QueueMessage(type="late_service")
    await queue.publish(early)
    recorder = Recorder()
    async with consuming(queue, recorder.consumer("late_service")):
        await wait_until(lambda: recorder.handled)
    assert [m.id_ for m in recorder.handled] == [early.id_]


async def test_replicas_share_the_work_and_handle_each_message_once(
    queue: RedisStreamsMessageQueue,
) -> None:
    first, second = Recorder(delay=0.01), Recorder(delay=0.01)
    sent = [QueueMessage(type="worker", data={"n": n}) for n in range(40)]
    async with (
        consuming(queue, first.consumer("worker")),
        consuming(queue, second.consumer("worker")),
    ):
        for message in sent:
            await queue.publish(message)
        await wait_until(lambda: len(first.handled) + len(second.handled) >= len(sent))
        await asyncio.sleep(0.2)  # Room for a duplicate to show up, were there one.
    handled = [m.id_ for m in first.handled + second.handled]
    assert sorted(handled) == sorted(m.id_ for m in sent)
    assert first.handled and second.handled
    assert all(m.delivery_count == 1 for m in first.deliveries + second.deliveries)


async def test_one_consumer_with_several_loops_shares_like_replicas(
    queue: RedisStreamsMessageQueue,
) -> None:
    recorder = Recorder(delay=0.05)
    sent = [QueueMessage(type="pool") for _ in range(6)]
    async with consuming(queue, recorder.consumer("pool"), replicas=3):
        for message in sent:
            await queue.publish(message)
        await wait_until(lambda: len(recorder.handled) == len(sent))
    assert sorted(m.id_ for m in recorder.handled) == sorted(m.id_ for m in sent)


async def test_a_failing_handler_gets_the_message_again_with_a_growing_count(
    queue: RedisStreamsMessageQueue,
) -> None:
    recorder = Recorder(failures=2)
    message = QueueMessage(type="flaky")
    async with consuming(queue, recorder.consumer("flaky")):
        await queue.publish(message)
        await wait_until(lambda: recorder.handled)
    assert recorder.counts(message.id_) == [1, 2, 3]
    assert await queue.dead_letters("flaky") == []


async def test_a_message_failing_max_deliveries_times_is_dead_lettered_and_reported(
    redis_url: str, stream_prefix: str, raw: aioredis.Redis
) -> None:
    queue = make_queue(redis_url, stream_prefix, max_deliveries=3)
    failing, control_plane = Recorder(failures=99), Recorder()
    message = QueueMessage(type="broken", data={"task_id": "t1"})
    async with (
        consuming(queue, failing.consumer("broken")),
        consuming(queue, control_plane.consumer(CONTROL_PLANE)),
    ):
        await queue.publish(message)
        await wait_until(lambda: control_plane.handled)
        await asyncio.sleep(1.0)  # Past the visibility timeout: no further delivery.
    assert failing.counts(message.id_) == [1, 2, 3]
    [letter] = await queue.dead_letters("broken")
    assert letter.message.id_ == message.id_
    assert letter.reason == "ValueError: boom on delivery 3"
    [notice] = control_plane.handled
    assert notice.action == ActionTypes.DEAD_LETTER
    assert notice.data["reason"] == letter.reason
    assert notice.data["message"]["data"] == {"task_id": "t1"}
    stream = queue.settings.stream("broken")
    assert (await raw.xpending(stream, "broken"))["pending"] == 0
    await queue.close()


async def test_an_entry_that_is_no_queue_message_is_dead_lettered_not_fatal(
    queue: RedisStreamsMessageQueue, raw: aioredis.Redis
) -> None:
    recorder = Recorder()
    async with consuming(queue, recorder.consumer("strict")) as [task]:
        await raw.xadd(queue.settings.stream("strict"), {"junk": "1"})
        good = QueueMessage(type="strict")
        await queue.publish(good)
        await wait_until(lambda: recorder.handled)
        assert not task.done()
    assert [m.id_ for m in recorder.handled] == [good.id_]
    [letter] = await queue.dead_letters("strict")
    assert letter.reason.startswith("not a QueueMessage")
    assert letter.message.data == {"entry": {"junk": "1"}}


async def test_a_handler_slower_than_the_visibility_timeout_keeps_its_message(
    queue: RedisStreamsMessageQueue,
) -> None:
    slow, other = Recorder(delay=1.5), Recorder()
    message = QueueMessage(type="slow")
    async with consuming(queue, slow.consumer("slow")):
        await queue.publish(message)
        await wait_until(lambda: slow.deliveries)
        async with consuming(queue, other.consumer("slow")):
            await wait_until(lambda: slow.handled)
            await asyncio.sleep(0.6)
    assert [m.delivery_count for m in slow.deliveries] == [1]
    assert other.deliveries == []


async def test_a_deregistered_consumer_stops_and_the_others_take_its_messages(
    queue: RedisStreamsMessageQueue,
) -> None:
    leaving, staying = Recorder(), Recorder()
    leaving_consumer = leaving.consumer("jobs")
    async with (
        consuming(queue, leaving_consumer) as [leaving_task],
        consuming(queue, staying.consumer("jobs")),
    ):
        await queue.deregister_consumer(leaving_consumer)
        await asyncio.wait_for(leaving_task, 5)  # Returns on its own, within block_ms.
        sent = [QueueMessage(type="jobs") for _ in range(5)]
        for message in sent:
            await queue.publish(message)
        await wait_until(lambda: len(staying.handled) == len(sent))
    assert leaving.deliveries == []


async def test_streams_stay_bounded_and_keep_the_newest_messages(
    redis_url: str, stream_prefix: str, raw: aioredis.Redis
) -> None:
    queue = make_queue(redis_url, stream_prefix, maxlen=50)
    sent = [QueueMessage(type="firehose", data={"n": n}) for n in range(1000)]
    for message in sent:
        await queue.publish(message)
    # Approximate trimming removes whole nodes (100 entries by default), never the newest.
    assert await raw.xlen(queue.settings.stream("firehose")) <= 50 + 100
    recorder = Recorder()
    async with consuming(queue, recorder.consumer("firehose")):
        await wait_until(lambda: recorder.handled and recorder.handled[-1].id_ == sent[-1].id_)
    await queue.close()


def test_the_queue_works_from_successive_event_loops_and_threads(
    redis_url: str, stream_prefix: str
) -> None:
    queue = make_queue(redis_url, stream_prefix)
    sent = [QueueMessage(type="rerun") for _ in range(3)]

    async def publish(message: QueueMessage) -> None:
        await queue.publish(message)
        await queue.close()  # Closes this loop's client only; the next loop makes its own.

    asyncio.run(publish(sent[0]))
    asyncio.run(publish(sent[1]))  # A new loop, as on each rerun of the app.
    thread = threading.Thread(target=lambda: asyncio.run(publish(sent[2])))
    thread.start()
    thread.join()

    recorder = Recorder()

    async def consume_all() -> None:
        async with consuming(queue, recorder.consumer("rerun")):
            await wait_until(lambda: len(recorder.handled) == len(sent))
        assert await queue.dead_letters("rerun") == []
        await queue.close()

    thread = threading.Thread(target=lambda: asyncio.run(consume_all()))
    thread.start()
    thread.join()
    assert [m.id_ for m in recorder.handled] == [m.id_ for m in sent]


def test_bad_settings_are_refused_with_the_setting_named() -> None:
    with pytest.raises(ValueError, match="visibility_timeout must be positive"):
        RedisStreamsMessageQueue(visibility_timeout=0)
    with pytest.raises(ValueError, match="max_deliveries must be at least 1"):
        RedisStreamsMessageQueue(max_deliveries=0)


async def test_a_loop_cancelled_as_its_handler_returns_stops_and_acknowledges(
    queue: RedisStreamsMessageQueue, raw: aioredis.Redis
) -> None:
    handled: list[QueueMessage] = []

    def handle_then_get_cancelled(message: QueueMessage) -> None:
        handled.append(message)
        task = asyncio.current_task()
        assert task is not None
        task.cancel()  # Lands on the loop's next await, right after the handler returned.

    consumer = CallableMessageConsumer(message_type="last", handler=handle_then_get_cancelled)
    start = await queue.register_consumer(consumer)
    task = asyncio.create_task(start())
    await queue.publish(QueueMessage(type="last"))
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert len(handled) == 1
    stream = queue.settings.stream("last")  # Acknowledged, so never handled again.
    assert (await raw.xpending(stream, "last"))["pending"] == 0


async def test_a_publish_in_a_cancelled_task_still_raises_cancelled(
    queue: RedisStreamsMessageQueue,
) -> None:
    # redis-py's send under asyncio.wait_for drops such a cancellation on Python 3.11.
    await queue.publish(QueueMessage(type="warm"))  # A pooled connection, as in a service.
    task = asyncio.current_task()
    assert task is not None
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queue.publish(QueueMessage(type="warm"))
    task.uncancel()
