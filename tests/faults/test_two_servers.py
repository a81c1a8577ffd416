"""Two `stepwise serve` processes on one real PostgreSQL: shared tasks, a kill, live events.

Each server is a real process (`python -m stepwise.cli serve --db postgresql://...`) on the
scripted demo model, whose arithmetic task is three steps, always the same: multiply, add,
answer. Fifty clients step their tasks through both servers at once while one server is
SIGKILLed and started again; every task must end with its three steps, each completed once,
and load from a store opened afresh. A watcher connected to one server sees a step the other
ran, its tool call included (which only the other process knew: told by NOTIFY).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from agent_core.demos import ARITHMETIC_TASK
from agent_core.host.notify import channel_of
from agent_core.runtime.step_runs import STOPPED_BY_YOU
from agent_core.store.open import open_store
from agent_core.types import StepStatus
from stepwise.server import ServerSettings
from stepwise.server.runtime import ServerRuntime
from tests._serve_process import wait_healthy
from tests.llm_servers import OpenAIServer, Reply
from tests.stepwise.services._system import free_port

CLIENTS = 50
SCRIPT = ("multiply", "add", "405")
"""What the demo's three steps output, in order (each step's output contains its word)."""
LEASE_S = "2"
DEADLINE_S = 90.0
MULTIPLY = {
    "name": "multiply",
    "description": "Multiply two numbers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
}


class _Server:
    """`stepwise serve` on a fixed port, started again after a kill on the same port."""

    def __init__(self, folder: Path, db: str, **env: str) -> None:
        self.folder, self.db, self.env = folder, db, env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = folder / f"serve-{self.port}.log"

    def start(self, *extra: str) -> None:
        self.launch(*extra)
        self.wait()

    def launch(self, *extra: str, host: str | None = None) -> None:
        env = {
            **os.environ,
            "STEPWISE_WORKSPACES": str(self.folder / "ws"),
            "STEPWISE_CLAIM_LEASE_S": LEASE_S,
            **self.env,
        }
        env.pop("STEPWISE_API_TOKEN", None)
        command = [sys.executable, "-m", "stepwise.cli", "serve", "--port", str(self.port)]
        command = [*command, "--db", self.db, *extra]
        if host is not None:  # Another machine, as its step claims say: its own host name.
            command = ["unshare", "--uts", "sh", "-c", f'hostname {host} && exec "$@"', "-"]
            command += [sys.executable, "-m", "stepwise.cli", "serve", "--port", str(self.port)]
            command += ["--db", self.db, *extra]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command,
                cwd=self.folder,
                env=env,
                stdout=log,
                stderr=log,
                start_new_session=True,  # Its workers, if any, are stopped with it.
            )

    def wait(self) -> None:
        assert self.process is not None
        wait_healthy(self.url, self.process, output=lambda: self.log.read_text()[-3000:])

    def kill(self) -> int:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        return self.process.wait(timeout=30)

    def stop(self, *, graceful: bool = True) -> None:
        if self.process is not None and self.process.poll() is None and not graceful:
            self.kill()
        elif self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)


@pytest.fixture
def database(postgres_url: str, postgres_schema: str) -> str:
    return f"{postgres_url}?schema={postgres_schema}"


@pytest.fixture
def servers(tmp_path: Path, database: str) -> Iterator[tuple[_Server, _Server]]:
    pair = (_Server(tmp_path, database), _Server(tmp_path, database))
    try:
        for server in pair:
            server.launch()  # Both start at once: each takes seconds to import.
        for server in pair:
            server.wait()
        yield pair
    finally:
        for server in pair:
            # Killed: a graceful stop waits for an event stream to notice its client left.
            server.stop(graceful=False)


class _Tally:
    """What the clients saw, counted across their threads."""

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.task_ids: list[str] = []
        self.errors: list[str] = []

    def add(self, what: str) -> None:
        with self.guard:
            self.counts[what] += 1


def _finished(http: httpx.Client, url: str, task_id: str) -> bool:
    """Whether the task's last step has completed (a response lost to the kill said so)."""
    steps = http.get(f"{url}/ap/v1/agent/tasks/{task_id}/steps", params={"page_size": 100})
    return steps.status_code == 200 and any(s["is_last"] for s in steps.json()["steps"])


def _create(http: httpx.Client, urls: list[str], tally: _Tally) -> str:
    deadline = time.monotonic() + DEADLINE_S
    for turn in range(10_000):
        url = urls[turn % 2]
        try:
            response = http.post(f"{url}/ap/v1/agent/tasks", json={"input": ARITHMETIC_TASK})
        except httpx.TransportError:
            tally.add("transport_error")
            time.sleep(0.05)
            continue
        if response.status_code == 200:
            return response.json()["task_id"]
        if time.monotonic() > deadline:
            break
        tally.add(f"create_{response.status_code}")
        time.sleep(0.05)
    raise AssertionError("a task could not be created on either server")


def _client(number: int, urls: list[str], tally: _Tally) -> None:
    """Create a task on one server, then step it to its end alternating the two."""
    order = [urls[number % 2], urls[(number + 1) % 2]]
    deadline = time.monotonic() + DEADLINE_S
    with httpx.Client(timeout=30) as http:
        task_id = _create(http, order, tally)
        with tally.guard:
            tally.task_ids.append(task_id)
        turn = 1  # The next step goes to the other server.
        while time.monotonic() < deadline:
            url = order[turn % 2]
            turn += 1
            try:
                response = http.post(f"{url}/ap/v1/agent/tasks/{task_id}/steps", json={})
            except httpx.ConnectError:  # The server is down: the other one steps it.
                tally.add("refused")
                continue
            except httpx.TransportError:  # Killed while it answered.
                tally.add("dropped")
                continue
            if response.status_code == 200:
                tally.add(f"step_on_{url}")
                if response.json()["is_last"]:
                    return
                continue
            code = response.json().get("error", {}).get("code", "?")
            tally.add(f"{response.status_code}_{code}")
            if response.status_code == 409 and _finished(http, url, task_id):
                return
            if response.status_code not in (409, 503):
                tally.errors.append(f"{task_id}: {response.status_code} {response.text[:300]}")
                return
            time.sleep(0.1)
        tally.errors.append(f"{task_id}: not finished within {DEADLINE_S} s")


def test_fifty_clients_through_two_servers_lose_and_repeat_nothing_when_one_is_killed(
    servers: tuple[_Server, _Server], database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    killed, other = servers
    tally = _Tally()
    urls = [killed.url, other.url]
    started = time.monotonic()
    clients = [
        threading.Thread(target=_client, args=(n, urls, tally), daemon=True) for n in range(CLIENTS)
    ]
    for client in clients:
        client.start()

    # SIGKILL one server once the run is under way (its steps in flight), then start it again.
    while tally.counts[f"step_on_{killed.url}"] < 15 and time.monotonic() - started < 60:
        time.sleep(0.01)
    served_before_kill = tally.counts[f"step_on_{killed.url}"]
    assert killed.kill() == -signal.SIGKILL
    time.sleep(1.0)
    killed.start()

    for client in clients:
        client.join(timeout=DEADLINE_S + 30)
    elapsed = time.monotonic() - started

    assert not tally.errors, tally.errors[:5]
    assert served_before_kill >= 15  # The kill landed mid-run, not before it.
    assert tally.counts["dropped"] + tally.counts["refused"] >= 1, tally.counts  # It was felt.
    # Each step finds the task its server cached moved on by the other: reloaded, not refused.
    assert tally.counts["409_conflict"] == 0, tally.counts

    # A store opened afresh, as a third process would: every task there, each step once.
    store = open_store(database)
    try:
        lost, duplicated, steps = 0, 0, 0
        assert len(set(tally.task_ids)) == CLIENTS
        for task_id in tally.task_ids:
            state = store.load_task(task_id)
            if state is None:
                lost += 1
                continue
            done = [state.steps[step_id] for step_id in state.completed]
            outputs = [str(state.outputs[step.step_id].output) for step in done]
            steps += len(done)
            if len(state.steps) != len(SCRIPT) or len(done) != len(SCRIPT):
                duplicated += 1
                continue
            assert [step.number for step in done] == [1, 2, 3]
            assert all(step.status is StepStatus.COMPLETED for step in done)
            for word, output in zip(SCRIPT, outputs, strict=True):
                assert word in output, outputs
    finally:
        store.close()
    with capsys.disabled():
        print(
            f"\n{CLIENTS} clients, two servers, one SIGKILLed: {len(tally.task_ids)} tasks, "
            f"{steps} steps in {elapsed:.1f} s; lost {lost}, duplicated {duplicated}; "
            f"{dict(tally.counts)}"
        )
    assert (lost, duplicated) == (0, 0)
    assert steps == CLIENTS * len(SCRIPT)


def _events(
    http: httpx.Client, url: str, task_id: str, seen: list[dict], subscribed: threading.Event
) -> None:
    """Read the task's event stream from `url` into `seen`, until `http` is closed."""
    with (
        contextlib.suppress(httpx.TransportError, RuntimeError),
        http.stream("GET", f"{url}/stepwise/v1/tasks/{task_id}/events") as response,
    ):
        kind = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: ") and kind is not None:
                seen.append({"event": kind, **json.loads(line.removeprefix("data: "))})
                if kind == "subscribed":
                    subscribed.set()


def _watch_a_step(runs_it: _Server, watches: _Server) -> tuple[dict, list[dict]]:
    """Step a new task on `runs_it` while a watcher on `watches` reads its events."""
    wanted = {"tool_call_started", "tool_call_finished", "step_completed"}
    with httpx.Client(timeout=30) as http, httpx.Client(timeout=30) as watcher:
        task_id = http.post(
            f"{runs_it.url}/ap/v1/agent/tasks", json={"input": ARITHMETIC_TASK}
        ).json()["task_id"]
        seen: list[dict] = []
        subscribed = threading.Event()
        threading.Thread(
            target=_events, args=(watcher, watches.url, task_id, seen, subscribed), daemon=True
        ).start()
        assert subscribed.wait(30)
        step = http.post(f"{runs_it.url}/ap/v1/agent/tasks/{task_id}/steps", json={}).json()
        deadline = time.monotonic() + 20
        while not wanted <= {event["event"] for event in seen} and time.monotonic() < deadline:
            time.sleep(0.05)
    return step, list(seen)


def _listeners(database: str) -> set[int]:
    """The backends LISTENing for the servers' events (their last statement is the LISTEN)."""
    url, _, schema = database.partition("?schema=")
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE query = %s",
            (f'LISTEN "{channel_of(schema)}"',),
        ).fetchall()
    return {pid for (pid,) in rows}


def test_a_watcher_on_one_server_sees_the_step_the_other_runs_even_after_a_lost_listener(
    servers: tuple[_Server, _Server], database: str
) -> None:
    runs_it, watches = servers
    step, seen = _watch_a_step(runs_it, watches)
    kinds = [event["event"] for event in seen]
    assert {"tool_call_started", "tool_call_finished", "step_completed"} <= set(kinds), kinds
    # The tool call only the running process knew of: relayed, not read from the store.
    [call] = [event for event in seen if event["event"] == "tool_call_started"]
    assert call["tool_name"] == "multiply" and call["step_id"] == step["step_id"]
    [completed] = [event for event in seen if event["event"] == "step_completed"]
    assert completed["step_id"] == step["step_id"]

    # The listening connections dropped (terminated by the database): each listens again.
    before = _listeners(database)
    assert len(before) == 2  # One per process, however many subscribers.
    with psycopg.connect(database.partition("?")[0], autocommit=True) as conn:
        for pid in before:
            assert conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
    deadline = time.monotonic() + 20
    after = _listeners(database)
    while (len(after) < 2 or after & before) and time.monotonic() < deadline:
        time.sleep(0.1)
        after = _listeners(database)
    assert len(after) == 2 and not after & before, (before, after)
    step, seen = _watch_a_step(runs_it, watches)
    assert "tool_call_started" in {event["event"] for event in seen}, seen


def test_serve_with_two_workers_serves_both_apis_and_replaces_a_killed_worker(
    tmp_path: Path, database: str
):
    # A password the test server does not check (trust), which the start-up line must not show.
    server = _Server(tmp_path, database.replace("postgres@", "postgres:pw-of-the-test@"))
    server.start("--workers", "2")
    try:
        assert server.process is not None
        workers = _workers_of(server.process.pid)
        assert len(workers) == 2, workers  # uvicorn's worker processes, under its supervisor.
        with httpx.Client(base_url=server.url, timeout=30) as http:
            _step_to_the_end(http)
            # A worker killed is replaced by uvicorn's supervisor; the port keeps serving.
            os.kill(workers[0], signal.SIGKILL)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                now = _workers_of(server.process.pid)
                if len(now) == 2 and workers[0] not in now:
                    break
                time.sleep(0.2)
            assert len(now) == 2 and workers[0] not in now, (workers, now)
            _step_to_the_end(http)
            body = {"messages": [{"role": "user", "content": ARITHMETIC_TASK}], "tools": [MULTIPLY]}
            answer = http.post("/v1/agent/execute", json=body)
            assert answer.status_code == 200, answer.text
            [call] = answer.json()["message"]["tool_requests"]
            assert call["name"] == "multiply"
    finally:
        server.stop()
    said = server.log.read_text()
    assert "2 processes" in said and "postgres:***@" in said
    assert "pw-of-the-test" not in said


def _workers_of(pid: int) -> list[int]:
    """uvicorn's worker processes: the children of its supervisor that multiprocessing spawned."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    workers = []
    for child in children:
        with contextlib.suppress(OSError):
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                workers.append(int(child))
    return workers


def _step_to_the_end(http: httpx.Client) -> None:
    """Create the demo's task and run its three steps (each may land on either worker)."""
    task_id = http.post("/ap/v1/agent/tasks", json={"input": ARITHMETIC_TASK}).json()["task_id"]
    outputs = []
    for _ in SCRIPT:
        step = http.post(f"/ap/v1/agent/tasks/{task_id}/steps", json={})
        assert step.status_code == 200, step.text
        outputs.append(step.json()["output"])
    assert step.json()["is_last"]
    for word, output in zip(SCRIPT, outputs, strict=True):
        assert word in output


def test_a_cancel_that_reaches_another_process_stops_the_step_where_it_runs(
    tmp_path: Path, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stop pressed on server B (its HTTP route) stops the step server A runs."""
    with OpenAIServer() as model:
        model.script(policy=lambda body: Reply(text="Thought: slow.\nAnswer: late", delay_s=30))
        env = {"STEPWISE_MODEL": "openai", "OPENAI_BASE_URL": f"{model.url}/v1"}
        env["OPENAI_API_KEY"] = "sk-test-of-two-servers"
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        server, other = _Server(tmp_path, database, **env), _Server(tmp_path, database, **env)
        server.start()
        other.start()
        reader = ServerRuntime(ServerSettings(db=database, token=None))
        try:
            with httpx.Client(base_url=server.url, timeout=60) as http:
                task_id = http.post("/ap/v1/agent/tasks", json={"input": "Be slow."}).json()[
                    "task_id"
                ]
                answers: list[httpx.Response] = []
                stepping = threading.Thread(
                    target=lambda: answers.append(
                        http.post(f"/ap/v1/agent/tasks/{task_id}/steps", json={})
                    )
                )
                stepping.start()
                step = _wait_running(reader, task_id)
                started = time.monotonic()
                cancel = f"{other.url}/stepwise/v1/tasks/{task_id}/steps/{step.step_id}/cancel"
                stop = httpx.post(cancel, timeout=60)
                stepping.join(timeout=30)
                stopped = reader.runner_for_task(task_id).get_step(task_id, step.step_id)
        finally:
            reader.close()
            other.stop(graceful=False)
            server.stop(graceful=False)
    assert stop.status_code == 200, stop.text  # B told A; it did not run the step itself.
    assert stopped.status is StepStatus.FAILED and stopped.error == STOPPED_BY_YOU
    assert time.monotonic() - started < 25  # Not the model's 30 s: stopped mid-call.
    assert answers and answers[0].status_code != 200


def _wait_running(runtime: ServerRuntime, task_id: str) -> Any:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        [step] = runtime.reader().get_task_state(task_id).steps.values()
        if step.status is StepStatus.RUNNING:
            return step
        time.sleep(0.05)
    raise AssertionError("the step never ran")


def test_a_killed_machines_running_step_is_taken_over_once_its_lease_lapses(
    tmp_path: Path, database: str
) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("another machine is played by a UTS namespace: needs root and unshare")
    with OpenAIServer() as model:
        # A slow model (0.3 s before each streamed chunk): the step's claim reaches the store.
        model.script(policy=lambda body: Reply(text="405", delay_s=0.3))
        env = {"STEPWISE_MODEL": "openai", "OPENAI_BASE_URL": f"{model.url}/v1"}
        env["OPENAI_API_KEY"] = "sk-test-of-two-servers"
        far, near = _Server(tmp_path, database, **env), _Server(tmp_path, database, **env)
        far.launch(host="far-machine")
        near.launch()
        far.wait()
        near.wait()
        store = open_store(database)
        try:
            with httpx.Client(timeout=60) as http:
                task_id = http.post(
                    f"{far.url}/ap/v1/agent/tasks", json={"input": "What is (121 * 3) + 42?"}
                ).json()["task_id"]
                threading.Thread(
                    target=_quietly, args=(http, f"{far.url}/ap/v1/agent/tasks/{task_id}/steps")
                ).start()
                step = _wait_claimed(store, task_id)
                assert step.claimed_by.startswith("far-machine:")  # Another machine's claim.
                assert far.kill() == -signal.SIGKILL
                killed = time.monotonic()
                first = http.post(f"{near.url}/ap/v1/agent/tasks/{task_id}/steps", json={})
                answered = time.monotonic()
                attempts = 1
                while first.status_code != 200 and time.monotonic() - killed < 30:
                    time.sleep(0.2)
                    first = http.post(f"{near.url}/ap/v1/agent/tasks/{task_id}/steps", json={})
                    attempts += 1
                taken_over = time.monotonic() - killed
            state = store.load_task(task_id)
        finally:
            store.close()
            near.stop(graceful=False)
    assert first.status_code == 200, first.text
    if answered - killed < 1.0:  # Asked well within the 2 s lease: the claim still held.
        assert attempts > 1
    assert state is not None and len(state.completed) == 1 and len(state.steps) == 1
    assert state.steps[state.completed[0]].step_id == step.step_id  # The same step, once.
    print(f"taken over {taken_over:.1f} s after the kill ({attempts} attempts)")


def _quietly(http: httpx.Client, url: str) -> None:
    """POST to a server about to be killed (the answer never comes)."""
    with contextlib.suppress(httpx.TransportError, RuntimeError):
        http.post(url, json={})


def _wait_claimed(store: Any, task_id: str) -> Any:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = store.load_task(task_id)
        steps = list(state.steps.values()) if state is not None else []
        if steps and steps[0].status is StepStatus.RUNNING and steps[0].claimed_by:
            return steps[0]
        time.sleep(0.05)
    raise AssertionError("the step was never claimed in the store")
