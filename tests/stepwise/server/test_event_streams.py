"""Event streams fan out without waiting on anyone: idle, slow and overflowing subscribers.

The hub is driven in process where only its queues matter; where the server's loop matters
(a step runs while hundreds of streams sit unread), a real uvicorn on loopback serves.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable

import httpx

from agent_core.host import events as _events
from agent_core.host.events import EventHub
from agent_core.types import Task, TaskState, TaskStatus, TaskStep

IDLE_STREAMS = 200


def _state(version: int, steps: int) -> TaskState:
    task = Task(task_id="t", input="x", status=TaskStatus.ACTIVE)
    state = TaskState(task=task, version=version)
    for n in range(steps):
        step = TaskStep(task_id="t", step_id=f"s{n}", input=f"step {n}")
        state.steps[step.step_id] = step
    return state


async def test_a_subscriber_that_falls_too_far_behind_is_told_and_closed(monkeypatch):
    monkeypatch.setattr(_events, "MAX_BEHIND_BYTES", 1_000)
    hub = EventHub(lambda task_id: _state(1, 0), lambda task_id: 1)
    unread = hub.subscribe("t")
    reader = hub.subscribe("t")
    assert (await anext(unread)).startswith(b"event: subscribed")
    assert (await anext(reader)).startswith(b"event: subscribed")
    told: list[bytes] = []
    for version in range(2, 32):  # 30 new steps, ~100 bytes of news each: past the bound.
        hub.changed("t", _state(version, version - 1))
        await asyncio.sleep(0)  # The feed fans out on the loop; nothing awaits the reader.
        told.append(await anext(reader))  # This one reads as it goes: never closed.
    assert sum(len(chunk) for chunk in told) > 1_000  # The unread one was sent past its bound.
    assert all(b"stream_overflow" not in chunk for chunk in told)
    rest = [chunk async for chunk in unread]  # It ends after telling why.
    assert len(rest) == 1 and rest[0].startswith(b"event: stream_overflow")
    data = json.loads(rest[0].split(b"data: ", 1)[1])
    assert (
        data["behind_bytes"] == 1_000 and "subscribe to /stepwise/v1/tasks/t/events" in data["hint"]
    )
    assert hub.subscribers == 1
    await reader.aclose()
    assert hub.subscribers == 0


async def test_one_slow_subscriber_does_not_hold_up_the_others():
    hub = EventHub(lambda task_id: _state(1, 0), lambda task_id: 1)
    slow, quick = hub.subscribe("t"), hub.subscribe("t")
    await anext(slow)
    await anext(quick)
    hub.changed("t", _state(2, 1))
    # The slow one never reads again; the quick one gets the news regardless.
    chunk = await asyncio.wait_for(anext(quick), 10)
    assert chunk.startswith(b"event: step_created")
    hub.changed("t", _state(3, 2))
    assert (await asyncio.wait_for(anext(quick), 10)).startswith(b"event: step_created")
    await slow.aclose()
    await quick.aclose()


def _subscribe(port: int, task_id: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    request = f"GET /stepwise/v1/tasks/{task_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    sock.sendall(request.encode())
    _read_until(sock, b"event: subscribed")
    return sock


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    received = b""
    while marker not in received:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"the stream closed before {marker!r}: {received[-300:]!r}")
        received += chunk
    return received


def test_a_step_completes_under_two_hundred_idle_streams_which_all_receive_it(
    serve: Callable[..., str],
):
    url = serve()
    port = int(url.rsplit(":", 1)[1])
    with httpx.Client(base_url=url, timeout=60) as client:
        task_id = client.post("/ap/v1/agent/tasks", json={"input": "What is 2 + 2?"}).json()
        task_id = task_id["task_id"]
        streams = [_subscribe(port, task_id) for _ in range(IDLE_STREAMS)]
        try:
            # Nobody reads the streams while the step runs: it completes all the same.
            step = client.post(f"/ap/v1/agent/tasks/{task_id}/steps", json={})
            assert step.status_code == 200, step.text
            for sock in streams:
                received = _read_until(sock, b"event: step_completed")
                assert b"event: step_started" in received
        finally:
            for sock in streams:
                sock.close()
