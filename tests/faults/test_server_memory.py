"""A long-lived server stays small: bounded task caches, listing from summaries, pushed events.

The attacks: a server's runners kept every task they touched (79 -> 247 MB after 3,956
tasks); listing every page loaded every task (78 -> 313 MB); each SSE subscriber polled the
store 20 times a second (2,000 idle ones took 96% of a core), with no limit on subscribers.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from agent_core import AgentRunner
from agent_core.host.events import POLL_S, EventHub
from agent_core.llms import FunctionLLM
from agent_core.llms.demo import ARITHMETIC_TASK
from agent_core.runtime.task_cache import TASK_CACHE_SIZE, TaskCache
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.types import StepStatus, Task, TaskState, TaskStatus
from agent_core.workers import ReActAgentWorker
from stepwise.http.listening import uvicorn_options
from stepwise.server import ServerSettings, create_app
from stepwise.server.runtime import ServerRuntime
from tests._serve_process import wait_healthy
from tests.stepwise.services._system import free_port

TASKS = 1_000  # Four times the cache; 5,000 take ~30 s here and show the same bound.
IDLE_SUBSCRIBERS = 400  # Real SSE connections: enough to take most of a core before.
FANNED_OUT = 2_000  # Subscribers of the hub, in process, for the one-poll-per-task check.
IDLE_CPU_BOUND_S = 0.4  # Of a 2 s idle window; 400 polling subscribers took 1-2 s.


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ServerSettings:
    monkeypatch.setenv("STEPWISE_WORKSPACES", str(tmp_path / "workspaces"))
    return ServerSettings(db=tmp_path / "stepwise.db", token=None)


# ------------------------------------------------------------------------ task caches


def test_runners_keep_at_most_the_cache_size_of_tasks(settings):
    runtime = ServerRuntime(settings)  # The runtime behind every route (far faster than HTTP).
    runner = runtime.runner_for(runtime.default_spec)
    made = [runner.create_task(f"{ARITHMETIC_TASK} #{n}").task_id for n in range(TASKS)]
    for task_id in made[::3]:
        runtime.runner_for_task(task_id).run_step(task_id)
    reader = runtime.reader()
    for task_id in made:
        reader.get_task_state(task_id)

    runners = {id(r): r for r in (runner, reader, *(runtime.runner_for_task(t) for t in made[:3]))}
    sizes = [len(r.state.task_dict) for r in runners.values()]
    assert max(sizes) <= TASK_CACHE_SIZE, sizes
    # An evicted task is loaded again whole.
    first = runtime.runner_for_task(made[0]).get_task_state(made[0])
    assert next(iter(first.steps.values())).status is StepStatus.COMPLETED
    assert first.version == runtime.store.task_version(made[0])
    runtime.close()


def test_a_task_whose_step_runs_is_never_evicted(tmp_path):
    gate = threading.Event()

    async def slow_reply(messages, tools):
        await asyncio.to_thread(gate.wait, 20)
        return "Thought: done.\nAnswer: 42"

    store = SQLiteStore(tmp_path / "tasks.db")
    runner = AgentRunner(ReActAgentWorker.from_tools([], llm=FunctionLLM(slow_reply)), store=store)
    cache = runner.state.task_dict
    assert isinstance(cache, TaskCache)
    cache.size = 2
    running = runner.create_task("the slow one").task_id
    run = runner.start_step(running)
    others = [runner.create_task(f"other {n}").task_id for n in range(10)]
    for task_id in others:
        runner.get_task(task_id)

    assert running in runner.state.task_dict, "the running task was evicted"
    assert len(runner.state.task_dict) <= 3
    gate.set()
    output = run.result(timeout=20)
    assert output.is_last
    stored = store.load_task(running)
    assert stored is not None and stored.steps[output.task_step.step_id].status is (
        StepStatus.COMPLETED
    )
    assert runner.get_task_state(running).version == stored.version
    store.close()


# ---------------------------------------------------------------------------- listing


def test_listing_every_page_loads_no_task(settings, monkeypatch):
    app_runner = AgentSpec().build_runner(store=SQLiteStore(settings.db))  # As the app makes them.
    made = {app_runner.create_task(f"task {n}").task_id for n in range(250)}
    app = create_app(settings)
    store = app.state.runtime.store
    loads: list[str] = []
    real_load = store.load_task

    def counting_load(task_id: str) -> TaskState | None:
        loads.append(task_id)
        return real_load(task_id)

    monkeypatch.setattr(store, "load_task", counting_load)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        listed: list[dict] = []
        for page in (1, 2, 3):
            answer = client.get(
                "/ap/v1/agent/tasks", params={"current_page": page, "page_size": 100}
            )
            assert answer.status_code == 200
            listed += answer.json()["tasks"]
        assert {t["task_id"] for t in listed} == made
        assert all(t["input"].startswith("task ") for t in listed)
        assert loads == [], f"listing loaded {len(loads)} tasks"
        some = next(iter(made))
        assert client.get(f"/ap/v1/agent/tasks/{some}").status_code == 200
        assert loads == [some]  # The count sees a load: the patch is in place.


# ----------------------------------------------------------------------------- events


def test_one_poll_per_task_feeds_every_subscriber():
    """2,000 subscribers of one task: the store is read about twice a second, not 40,000."""
    versions = {"t": 1}
    polls: list[str] = []

    def version_of(task_id: str) -> int | None:
        polls.append(task_id)
        return versions[task_id]

    def load(task_id: str) -> TaskState:
        return _state(task_id, versions[task_id])

    async def scenario() -> tuple[int, int]:
        hub = EventHub(load, version_of, limit=FANNED_OUT)
        streams = [hub.subscribe("t", _connected) for _ in range(FANNED_OUT)]
        for stream in streams:
            assert (await anext(stream)).startswith(b"event: subscribed")
        nexts = [asyncio.ensure_future(anext(s)) for s in streams]
        polls.clear()
        await asyncio.sleep(1.0)
        idle_polls = len(polls)
        versions["t"] = 2  # Another process changed it.
        done, _ = await asyncio.wait(nexts, timeout=5 * POLL_S + 2)
        told = sum(1 for n in done if n.result().startswith(b"event: task_status"))
        for stream in streams:
            await stream.aclose()
        assert hub.subscribers == 0
        return idle_polls, told

    idle_polls, told = asyncio.run(scenario())
    assert idle_polls <= 2 / POLL_S + 1, f"{idle_polls} store reads in 1 s for {FANNED_OUT}"
    assert told == FANNED_OUT


def test_idle_subscribers_cost_little_cpu(tmp_path):
    port = free_port()
    env = {**os.environ, "STEPWISE_WORKSPACES": str(tmp_path / "ws")}
    env.pop("STEPWISE_API_TOKEN", None)
    command = [sys.executable, "-m", "stepwise.cli", "serve", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--db", str(tmp_path / "runs.db")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    sockets: list[socket.socket] = []
    try:
        wait_healthy(url, process)
        tasks = [
            httpx.post(f"{url}/ap/v1/agent/tasks", json={"input": f"t{n}"}).json()["task_id"]
            for n in range(4)
        ]
        for n in range(IDLE_SUBSCRIBERS):
            sockets.append(_subscribe(port, tasks[n % len(tasks)]))
        for sock in sockets:
            _read_until(sock, b"event: subscribed")
        time.sleep(0.5)  # Let the connections settle.
        before = _cpu_seconds(process.pid)
        time.sleep(2.0)
        used = _cpu_seconds(process.pid) - before
        assert used < IDLE_CPU_BOUND_S, f"{IDLE_SUBSCRIBERS} idle subscribers took {used:.2f} s"
        # Still live: a step run over HTTP reaches a subscriber of its task.
        httpx.post(f"{url}/ap/v1/agent/tasks/{tasks[0]}/steps", timeout=30)
        _read_until(sockets[0], b"event: step_completed")
    finally:
        for sock in sockets:
            sock.close()
        process.terminate()
        process.wait(timeout=30)


def test_subscribers_past_the_cap_get_a_503_and_leaving_frees_a_place(settings):
    app = create_app(settings)
    hub = app.state.runtime.events
    hub.limit = 3
    with running_server_of(app) as url:
        task_id = httpx.post(f"{url}/ap/v1/agent/tasks", json={"input": "x"}).json()["task_id"]
        port = int(url.rsplit(":", 1)[1])
        held = [_subscribe(port, task_id) for _ in range(3)]
        for sock in held:
            _read_until(sock, b"event: subscribed")
        refused = httpx.get(f"{url}/stepwise/v1/tasks/{task_id}/events")
        assert refused.status_code == 503
        error = refused.json()["error"]
        assert error["code"] == "too_many_subscribers" and error["hint"]
        held.pop().close()
        _wait_until(lambda: hub.subscribers < 3)
        again = _subscribe(port, task_id)
        _read_until(again, b"event: subscribed")
        for sock in [*held, again]:
            sock.close()
        _wait_until(lambda: hub.subscribers == 0)


def test_changes_by_another_process_and_by_this_one_reach_subscribers(settings):
    app = create_app(settings)
    with running_server_of(app) as url:
        task_id = httpx.post(f"{url}/ap/v1/agent/tasks", json={"input": "x"}).json()["task_id"]
        sock = _subscribe(int(url.rsplit(":", 1)[1]), task_id)
        _read_until(sock, b"event: subscribed")
        other = AgentSpec().build_runner(store=SQLiteStore(settings.db))  # Its own store.
        other.run_step(task_id)
        _read_until(sock, b"event: step_completed")
        # This process's own change is pushed too.
        assert httpx.post(f"{url}/stepwise/v1/tasks/{task_id}/undo", json={}).status_code == 200
        _read_until(sock, b"event: step_undone")
        sock.close()


# ---------------------------------------------------------------------------- helpers


@contextmanager
def running_server_of(app: FastAPI) -> Iterator[str]:
    """`app` on uvicorn in a thread, listening as `stepwise serve` does; its base URL."""
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", **uvicorn_options()
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    _wait_until(lambda: server.started, timeout=20)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def _state(task_id: str, version: int) -> TaskState:
    status = TaskStatus.ACTIVE if version == 1 else TaskStatus.ABANDONED
    return TaskState(task=Task(task_id=task_id, input="x", status=status), version=version)


async def _connected() -> bool:
    return False


def _subscribe(port: int, task_id: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    request = f"GET /stepwise/v1/tasks/{task_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    sock.sendall(request.encode())
    return sock


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    received = b""
    while marker not in received:
        chunk = sock.recv(65536)
        assert chunk, f"closed before {marker!r}: {received[-500:]!r}"
        received += chunk
    return received


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_until(condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
