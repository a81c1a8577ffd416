"""SimpleMessageQueue, the embedded queue: the same contract as the broker, in one process."""

from __future__ import annotations

import asyncio
import contextlib

from stepwise.services import ActionTypes, QueueMessage, SimpleMessageQueue
from stepwise.services.messages import CONTROL_PLANE
from tests.stepwise.services._queue_support import Recorder, consuming, wait_until


async def test_a_published_message_reaches_its_consumer() -> None:
    queue, recorder = SimpleMessageQueue(), Recorder()
    sent = QueueMessage(type="writer", action=ActionTypes.NEW_TASK, data={"input": "hi"})
    async with consuming(queue, recorder.consumer("writer")):
        await queue.publish(sent)
        await wait_until(lambda: recorder.handled)
    [got] = recorder.handled
    assert (got.id_, got.data, got.delivery_count) == (sent.id_, {"input": "hi"}, 1)
    assert got.stats.publish_time is not None
    assert got.stats.process_end_time is not None


async def test_a_message_published_before_any_consumer_waits_for_one() -> None:
    queue, recorder = SimpleMessageQueue(), Recorder()
    early = QueueMessage(type="late_service")
    await queue.publish(early)
    assert queue.pending("late_service") == 1
    async with consuming(queue, recorder.consumer("late_service")):
        await wait_until(lambda: recorder.handled)
    assert [m.id_ for m in recorder.handled] == [early.id_]
    assert queue.pending("late_service") == 0


async def test_replicas_share_the_work_and_handle_each_message_once() -> None:
    queue = SimpleMessageQueue()
    first, second = Recorder(delay=0.01), Recorder(delay=0.01)
    sent = [QueueMessage(type="worker") for _ in range(20)]
    async with (
        consuming(queue, first.consumer("worker")),
        consuming(queue, second.consumer("worker")),
    ):
        for message in sent:
            await queue.publish(message)
        await wait_until(lambda: len(first.handled) + len(second.handled) >= len(sent))
    handled = [m.id_ for m in first.handled + second.handled]
    assert sorted(handled) == sorted(m.id_ for m in sent)
    assert first.handled and second.handled


async def test_a_failing_handler_gets_the_message_again_with_a_growing_count() -> None:
    queue, recorder = SimpleMessageQueue(), Recorder(failures=2)
    message = QueueMessage(type="flaky")
    async with consuming(queue, recorder.consumer("flaky")):
        await queue.publish(message)
        await wait_until(lambda: recorder.handled)
    assert recorder.counts(message.id_) == [1, 2, 3]
    assert await queue.dead_letters("flaky") == []


async def test_a_message_failing_max_deliveries_times_is_dead_lettered_and_reported() -> None:
    queue = SimpleMessageQueue(max_deliveries=3)
    failing, control_plane = Recorder(failures=99), Recorder()
    message = QueueMessage(type="broken", data={"task_id": "t1"})
    async with (
        consuming(queue, failing.consumer("broken")),
        consuming(queue, control_plane.consumer(CONTROL_PLANE)),
    ):
        await queue.publish(message)
        await wait_until(lambda: control_plane.handled)
    assert failing.counts(message.id_) == [1, 2, 3]
    assert queue.pending("broken") == 0
    [letter] = await queue.dead_letters("broken")
    assert (letter.message.id_, letter.reason) == (message.id_, "ValueError: boom on delivery 3")
    [notice] = control_plane.handled
    assert notice.action == ActionTypes.DEAD_LETTER
    assert notice.data["reason"] == letter.reason
    assert notice.data["message"]["data"] == {"task_id": "t1"}


async def test_a_failing_control_plane_message_is_dead_lettered_without_a_notice_loop() -> None:
    queue = SimpleMessageQueue(max_deliveries=2)
    control_plane = Recorder(failures=99)
    async with consuming(queue, control_plane.consumer(CONTROL_PLANE)):
        await queue.publish(QueueMessage(type=CONTROL_PLANE))
        await wait_until(lambda: len(control_plane.deliveries) == 2)
        await asyncio.sleep(0.05)
    assert len(control_plane.deliveries) == 2
    assert len(await queue.dead_letters(CONTROL_PLANE)) == 1
    assert queue.pending(CONTROL_PLANE) == 0


async def test_a_consumer_cancelled_mid_handling_leaves_its_message_to_another() -> None:
    queue = SimpleMessageQueue()
    stuck, other = Recorder(delay=3600), Recorder()
    start_stuck = await queue.register_consumer(stuck.consumer("handoff"))
    stuck_task = asyncio.create_task(start_stuck())
    message = QueueMessage(type="handoff")
    await queue.publish(message)
    await wait_until(lambda: stuck.deliveries)
    stuck_task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await stuck_task
    async with consuming(queue, other.consumer("handoff")):
        await wait_until(lambda: other.handled)
    assert [m.id_ for m in other.handled] == [message.id_]


async def test_a_deregistered_consumer_takes_no_more_messages() -> None:
    queue = SimpleMessageQueue()
    leaving, staying = Recorder(), Recorder()
    leaving_consumer = leaving.consumer("jobs")
    async with (
        consuming(queue, leaving_consumer),
        consuming(queue, staying.consumer("jobs")),
    ):
        await asyncio.sleep(0)  # Both loops wait for a message.
        await queue.deregister_consumer(leaving_consumer)
        sent = [QueueMessage(type="jobs") for _ in range(5)]
        for message in sent:
            await queue.publish(message)
        await wait_until(lambda: len(staying.handled) == len(sent))
    assert leaving.deliveries == []
