"""A Host hears other processes on one SQLite file: their commits within a tick, their stops.

Two processes each: `stepwise serve` (or a user's program) in a subprocess, a Host in the test.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_core.host import Host
from agent_core.runtime.parallel import ParallelAgentRunner
from agent_core.runtime.step_runs import STOPPED_BY_YOU
from agent_core.spec import AgentSpec
from agent_core.types import StepKind, StepStatus, TaskState, TaskStep
from tests._serve_process import serve_process

HERE = Path(__file__).parent
STEPS = 5


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "shared.db")


@pytest.fixture
def served(tmp_path: Path, db: str) -> Iterator[str]:
    """`stepwise serve` on the shared file; its URL."""
    env = {**os.environ, "STEPWISE_WORKSPACES": str(tmp_path / "ws")}
    with serve_process(db, cwd=tmp_path, env=env) as url:
        yield url


def _read_events(url: str, task_id: str, seen: list[tuple[float, dict]], ready: threading.Event):
    with (
        httpx.Client(timeout=60) as http,
        contextlib.suppress(httpx.TransportError),
        http.stream("GET", f"{url}/stepwise/v1/tasks/{task_id}/events") as response,
    ):
        kind = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: ") and kind is not None:
                seen.append((time.monotonic(), {"event": kind, **json.loads(line[6:])}))
                if kind == "subscribed":
                    ready.set()


def test_a_servers_event_stream_shows_another_processs_commit_within_a_tick(served, db):
    committed: dict[str, float] = {}  # Step id -> when this process committed it completed.

    def heard(state: TaskState) -> None:
        for step_id in state.completed:
            committed.setdefault(step_id, time.monotonic())

    with Host(db) as host:
        host.store.add_commit_listener(heard)
        runner = host.runner_for(AgentSpec())  # The scripted demo: no key.
        task_id = runner.create_task("What is (121 * 3) + 42?").task_id
        seen: list[tuple[float, dict]] = []
        ready = threading.Event()
        threading.Thread(
            target=_read_events, args=(served, task_id, seen, ready), daemon=True
        ).start()
        assert ready.wait(30)
        for _ in range(STEPS):
            out = runner.run_step(task_id)
            time.sleep(0.4)  # Apart, so each commit is a change of its own to watch for.
            if out.is_last:
                break
        time.sleep(1.0)
    arrived = {e["step_id"]: t for t, e in seen if e["event"] == "step_completed"}
    latencies = [arrived[s] - t for s, t in committed.items() if s in arrived]
    print(f"\ncommit -> server event stream, s: {[round(x, 3) for x in latencies]}")
    assert len(latencies) == len(committed) >= 3, (committed, seen)
    assert max(latencies) < 1.0
    assert statistics.median(latencies) < 0.3  # DESIGN §13; a 0.5 s poll gives ~0.25 to 0.5.


def test_a_stop_in_one_process_stops_a_step_another_process_runs(db):
    program = subprocess.Popen(
        [sys.executable, str(HERE / "_slow_program.py"), db],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[3],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])},
    )
    try:
        assert program.stdout is not None
        task_id = program.stdout.readline().strip()
        with Host(db) as host:
            deadline = time.monotonic() + 30
            running = []
            while not running and time.monotonic() < deadline:
                state = host.reader().get_task_state(task_id)
                running = [s for s in state.steps.values() if s.status is StepStatus.RUNNING]
                time.sleep(0.05)
            [step] = running
            started = time.monotonic()
            host.cancel_step(task_id, step.step_id, wait=10)
            took = time.monotonic() - started
            after = host.reader().get_step(task_id, step.step_id)
        print(f"\nstop across processes took {took:.3f} s")
        assert after.status is StepStatus.FAILED and after.error == STOPPED_BY_YOU
        assert took < 5
        assert program.stdout.readline().split()[0] == "failed"
        assert program.wait(timeout=30) == 0
    finally:
        program.kill()


def test_a_program_paused_before_a_tool_resumes_with_the_arguments_a_person_edited(db):
    from tests.agent_core.host._refund_program import make_worker

    program = subprocess.Popen(
        [sys.executable, str(HERE / "_refund_program.py"), db],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])},
    )
    try:
        assert program.stdout is not None
        task_id = program.stdout.readline().strip()
        with Host(db) as host:
            held = _held_tool_step(host, task_id)
            assert held.input == {"tool": "refund", "args": {"order": 42, "amount": 100}}
            time.sleep(0.5)
            assert program.poll() is None, "the program did not wait for a person"
            # The app's Approve with edited arguments: its runner runs the held step.
            person = ParallelAgentRunner(make_worker(), store=host.store)
            edited = {"tool": "refund", "args": {"order": 42, "amount": 30}}
            person.run_step(task_id, step_id=held.step_id, input=edited)
        out = json.loads(program.stdout.readline())
        assert program.wait(timeout=30) == 0
    finally:
        program.kill()
    assert out["reason"] == "answered" and out["response"] == "refund made"
    assert out["tool_outputs"] == ["refunded 30 on order 42"]


def _held_tool_step(host: Host, task_id: str, timeout: float = 30) -> TaskStep:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = host.reader().get_task_state(task_id)
        held = [s for s in state.step_queue if s.kind is StepKind.TOOL]
        if held:
            return held[0]
        time.sleep(0.05)
    raise AssertionError("the program never paused before its tool call")


STORY = " ".join(f"word{n}" for n in range(30))


def test_a_host_shows_live_tokens_of_a_step_another_process_runs_on_sqlite(db):
    """The relay table: the watching host's run of the other process's step grows word by word."""
    from tests.llm_servers import OpenAIServer, Reply

    with OpenAIServer(policy=lambda body: Reply(text=f"Answer: {STORY}", delay_s=0.1)) as server:
        program = _program("_streaming_program.py", db, f"{server.url}/v1")
        try:
            assert program.stdout is not None
            task_id = program.stdout.readline().strip()
            with Host(db) as host:
                run = _remote_run(host, task_id)
                seen = [run.text]
                while not run.done:
                    run.events_since(0, timeout=0.5)
                    seen.append(run.text)
                    host.runs_of(task_id)  # A face drawing the task asks again (its lease).
                relay = host._relay
                assert relay is not None and relay.stats.rows_read > 3
            assert program.stdout.readline().split()[0] == "completed"
            assert program.wait(timeout=30) == 0
        finally:
            program.kill()
    growing = [text for text in dict.fromkeys(seen) if text]
    print(f"\nthe watcher saw the reply grow in {len(growing)} steps")
    assert len(growing) >= 5, growing  # Tokens arrived as they streamed, not all at the end.
    assert growing[-1].endswith("word29")


def test_nothing_is_written_for_a_step_nobody_watches(db):
    from tests.llm_servers import OpenAIServer, Reply

    with OpenAIServer(policy=lambda body: Reply(text="Answer: a b c d e", delay_s=0.05)) as server:
        program = _program("_streaming_program.py", db, f"{server.url}/v1")
        try:
            assert program.stdout is not None
            program.stdout.readline()
            assert program.stdout.readline().split()[0] == "completed"
            assert program.wait(timeout=30) == 0
        finally:
            program.kill()
    with sqlite3.connect(db) as file:
        (rows,) = file.execute("SELECT count(*) FROM stepwise_live_events").fetchone()
    assert rows == 0


def _program(name: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(HERE / name), *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[3],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])},
    )


def _remote_run(host: Host, task_id: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = host.runs_of(task_id)
        if runs:
            return runs[0]
        host.wait_for_change(0.1)
    raise AssertionError("no run of the other process was heard")


def test_a_servers_event_stream_shows_live_tokens_of_another_processs_step(served, db):
    """`stepwise serve` relays the token deltas of a step a user's program runs on the file."""
    from tests.llm_servers import OpenAIServer, Reply

    with OpenAIServer(policy=lambda body: Reply(text=f"Answer: {STORY}", delay_s=0.1)) as server:
        program = _program("_streaming_program.py", db, f"{server.url}/v1")
        try:
            assert program.stdout is not None
            task_id = program.stdout.readline().strip()
            seen: list[tuple[float, dict]] = []
            ready = threading.Event()
            threading.Thread(
                target=_read_events, args=(served, task_id, seen, ready), daemon=True
            ).start()
            assert ready.wait(30)
            assert program.stdout.readline().split()[0] == "completed"
            assert program.wait(timeout=30) == 0
            time.sleep(1.0)
        finally:
            program.kill()
    deltas = [e["delta"] for _, e in seen if e["event"] == "token_delta"]
    assert len(deltas) >= 5, seen
    assert "".join(deltas).endswith("word29")
    kinds = [e["event"] for _, e in seen]
    assert "step_completed" in kinds
