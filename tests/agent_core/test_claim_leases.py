"""Step claims as leases: another machine's claim holds until its deadline, then lapses.

"Another host" is a claim stamped with another hostname: here, either written by hand (what a
killed machine left in the store) or made by a real runner in a child process whose hostname
is patched, so that this process can tell it neither by its pid nor by its registry of steps in
flight. Each runs on SQLite and on a real PostgreSQL server (tests/_postgres_server.py).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.errors import ConflictError, NothingToRunError, StepError
from agent_core.llms import ChatMessage, FunctionLLM, ToolSpec
from agent_core.runtime import claims
from agent_core.runtime.claims import claim_owner, claim_stamp, claimed_until
from agent_core.runtime.loop import run_sync
from agent_core.runtime.runner import AgentRunner
from agent_core.runtime.step_runs import LIVE_RUNS
from agent_core.store.base import Store, TaskChange, store_now
from agent_core.store.sqlite import SQLiteStore
from agent_core.tools import FunctionTool
from agent_core.types import StepStatus, TaskState, utcnow
from agent_core.workers import ReActAgentWorker

QUESTION = "What is 1 + 2?"
CALL_ADD = 'Thought: add.\nAction: add\nAction Input: {"a": 1, "b": 2}'
_WAIT = 30.0
"""Seconds a test waits for something before it fails (never a timing assertion)."""

# A runner of "another machine": hostname `elsewhere`, its own lease, one step whose model
# call takes `hold` seconds, or (given a `stall` file) blocks its loop until that file exists,
# as a process whose loop stalls mid-step. It prints `called`, then how the step ended.
_OTHER_HOST = """
import asyncio, json, logging, os, sys, time
from agent_core.runtime import claims
claims._HOST = "elsewhere"
where, lease, hold = json.loads(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
stall, task_id = sys.argv[4], sys.argv[5]
claims.CLAIM_LEASE_S = lease
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
from agent_core.errors import StepConflictError
from agent_core.llms import FunctionLLM
from agent_core.runtime.runner import AgentRunner
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker
if where["kind"] == "sqlite":
    from agent_core.store.sqlite import SQLiteStore
    store = SQLiteStore(where["path"])
else:
    from agent_core.store.postgres import PostgresStore
    store = PostgresStore(where["url"], schema=where["schema"])
def add(a: int, b: int) -> int:
    "Add two integers."
    return a + b
async def reply(messages, tools):
    print("called", flush=True)
    await asyncio.sleep(hold)
    while stall and not os.path.exists(stall):
        time.sleep(0.01)  # Blocks the loop: no renewal runs.
    return 'Thought: add.\\nAction: add\\nAction Input: {"a": 1, "b": 2}'
worker = ReActAgentWorker.from_tools([FunctionTool.from_defaults(fn=add)], llm=FunctionLLM(reply))
runner = AgentRunner(worker, store=store)
try:
    runner.run_step(task_id)
    print("committed", flush=True)
except StepConflictError as exc:
    print("conflict", exc.code, flush=True)
"""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Stores:
    """Stores on one database (SQLite file or PostgreSQL schema), and how a child opens it."""

    def __init__(self, open_store: Callable[[], Store], where: dict[str, str]) -> None:
        self._open, self.where = open_store, where
        self._opened: list[Store] = []

    def open(self) -> Store:
        store = self._open()
        self._opened.append(store)
        return store

    def close(self) -> None:
        for store in self._opened:
            store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    if request.param == "sqlite":
        path = str(tmp_path / "tasks.db")
        made = Stores(lambda: SQLiteStore(path), {"kind": "sqlite", "path": path})
    else:
        from agent_core.store.postgres import PostgresStore

        url = request.getfixturevalue("postgres_url")
        schema = request.getfixturevalue("postgres_schema")
        where = {"kind": "postgres", "url": url, "schema": schema}
        made = Stores(lambda: PostgresStore(url, schema=schema), where)
    yield made
    made.close()


@pytest.fixture
def sqlite_stores(tmp_path: Path) -> Iterator[Stores]:
    path = str(tmp_path / "tasks.db")
    made = Stores(lambda: SQLiteStore(path), {"kind": "sqlite", "path": path})
    yield made
    made.close()


def _runner(store: Store, reply: Callable[..., Any] | None = None) -> AgentRunner:
    async def no_call(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        raise AssertionError("this runner must not call its model")

    llm = FunctionLLM(reply or no_call)
    worker = ReActAgentWorker.from_tools([FunctionTool.from_defaults(fn=add)], llm=llm)
    return AgentRunner(worker, store=store)


def _counting(calls: list[str], name: str, delay: float = 0.0) -> Callable[..., Any]:
    async def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        calls.append(name)
        await asyncio.sleep(delay)
        return CALL_ADD

    return reply


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + _WAIT
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {_WAIT:g} s")
        time.sleep(0.01)


def _stored_step(store: Store, task_id: str, step_id: str) -> Any:
    state = store.load_task(task_id)
    assert state is not None
    return state.steps[step_id]


def _first_step(store: Store) -> tuple[str, str]:
    task_id = _runner(store).create_task(QUESTION).task_id
    state = store.load_task(task_id)
    assert state is not None
    return task_id, state.queue[0]


def _stamp(store: Store, task_id: str, step_id: str, claimed_by: str) -> None:
    """What a machine running the step left in the store: it runs, under `claimed_by`."""
    state: TaskState | None = store.load_task(task_id)
    assert state is not None
    step = state.steps[step_id]
    step.status, step.attempts, step.started_at = StepStatus.RUNNING, 1, utcnow()
    step.claimed_by = claimed_by
    base, state.version = state.version, state.version + 1
    store.commit(TaskChange(state=state, base_version=base, steps=[step], task_row=False))


def _other_host(
    stores: Stores, task_id: str, *, lease: float, hold: float, stall: str = ""
) -> subprocess.Popen:
    args = [json.dumps(stores.where), str(lease), str(hold), stall, task_id]
    return subprocess.Popen(
        [sys.executable, "-c", _OTHER_HOST, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )


def _claimed_elsewhere(store: Store, task_id: str, step_id: str) -> bool:
    step = _stored_step(store, task_id, step_id)
    owner = claim_owner(step.claimed_by) or ""
    return step.status is StepStatus.RUNNING and owner.startswith("elsewhere:")


def _lease_tasks(step_id: str) -> list[asyncio.Task[Any]]:
    """The lease renewal tasks of the step still alive on the runtime loop."""

    async def alive() -> list[asyncio.Task[Any]]:
        name = f"claim lease {step_id}"
        return [t for t in asyncio.all_tasks() if t.get_name() == name and not t.done()]

    return run_sync(alive(), name="lease tasks")


# ------------------------------------------------------------------------------ tests


def test_another_hosts_claim_holds_until_its_deadline_then_the_step_runs_once(
    stores: Stores,
) -> None:
    store = stores.open()
    task_id, step_id = _first_step(store)
    until = store_now(store) + 1.5
    _stamp(store, task_id, step_id, claim_stamp("elsewhere:4242:cafebabe", until))

    calls: list[str] = []
    agent = _runner(stores.open(), _counting(calls, "taker"))
    assert not agent.is_interrupted(task_id, step_id)
    with pytest.raises(ConflictError) as refused:
        agent.run_step(task_id)
    assert refused.value.code == "step_running" and calls == []

    _until(lambda: store_now(store) > until, "the claim's deadline did not pass")
    assert agent.is_interrupted(task_id, step_id)
    output = agent.run_step(task_id)
    assert output.task_step.step_id == step_id and output.task_step.attempts == 2
    assert calls == ["taker"]  # Taken over, and run exactly once.
    state = _runner(stores.open()).get_task_state(task_id)
    assert state.completed == [step_id] and state.steps[step_id].claimed_by is None


def test_the_lease_is_judged_by_the_stores_clock_not_this_machines(tmp_path: Path) -> None:
    class AheadStore(SQLiteStore):
        """A store whose clock is an hour ahead of this machine's (a skewed database)."""

        def now(self) -> float:
            return time.time() + 3600

    ahead = AheadStore(tmp_path / "tasks.db")
    task_id, step_id = _first_step(ahead)
    until = time.time() + 600  # Ten minutes ahead here: long past on the store's clock.
    _stamp(ahead, task_id, step_id, claim_stamp("elsewhere:4242:cafebabe", until))
    calls: list[str] = []
    assert _runner(ahead, _counting(calls, "taker")).run_step(task_id).task_step.attempts == 2
    assert calls == ["taker"]
    ahead.close()


def test_each_store_tells_its_time_and_one_without_a_clock_falls_back_to_this_machines(
    stores: Stores,
) -> None:
    store = stores.open()
    told = store.now()  # type: ignore[attr-defined]  # Optional: not in the Store protocol.
    assert isinstance(told, float) and abs(told - time.time()) < 60  # Its server is local.
    assert abs(store_now(object()) - time.time()) < 1


def test_a_step_longer_than_two_leases_is_renewed_and_never_taken_over(
    sqlite_stores: Stores,
) -> None:
    lease, hold = 1.0, 2.6
    store = sqlite_stores.open()
    task_id, step_id = _first_step(store)
    holder = _other_host(sqlite_stores, task_id, lease=lease, hold=hold)
    try:
        _until(lambda: _claimed_elsewhere(store, task_id, step_id), "no claim was stored")
        poller = _runner(sqlite_stores.open())  # Its model must never be called.
        deadlines: set[float] = set()
        refusals = 0
        while holder.poll() is None:
            step = _stored_step(store, task_id, step_id)
            if step.status is StepStatus.RUNNING:
                deadlines.add(claimed_until(step.claimed_by) or 0.0)
            try:
                poller.run_step(task_id, step_id=step_id)
                pytest.fail("the running step was taken over")
            except ConflictError as exc:
                assert exc.code == "step_running"
                refusals += 1
            except NothingToRunError:
                break  # The holder completed it.
            time.sleep(0.05)
        out, err = holder.communicate(timeout=_WAIT)
    finally:
        holder.kill()
    assert out.split() == ["called", "committed"], err
    assert refusals > 10
    assert len(deadlines) >= 3, deadlines  # Stamped once, then renewed at least twice.
    state = _runner(store).get_task_state(task_id)
    assert state.completed == [step_id] and state.steps[step_id].attempts == 1


@pytest.mark.parametrize("ending", ["completes", "fails", "is stopped"])
def test_the_lease_renewal_stops_when_the_step_ends(
    sqlite_stores: Stores, monkeypatch: pytest.MonkeyPatch, ending: str
) -> None:
    monkeypatch.setattr(claims, "CLAIM_LEASE_S", 0.15)  # A renewal every 50 ms.
    commits: list[tuple[float, bool]] = []  # (when, version only)
    store = sqlite_stores.open()
    real_commit = store.commit

    def counted(change: TaskChange) -> None:
        real_commit(change)
        commits.append((time.monotonic(), not change.task_row))

    monkeypatch.setattr(store, "commit", counted)
    task_id, step_id = _first_step(store)
    release = threading.Event()

    async def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        await asyncio.to_thread(release.wait, _WAIT)
        if ending == "fails":
            raise RuntimeError("the model broke")
        return CALL_ADD

    agent = _runner(store, reply)
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            agent.run_step(task_id)
            outcome.append(None)
        except StepError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    _until(lambda: sum(only for _, only in commits) >= 3, "the lease was not renewed")
    assert len(_lease_tasks(step_id)) == 1
    if ending == "is stopped":
        run_of_step = LIVE_RUNS.get(step_id)
        assert run_of_step is not None
        run_of_step.cancel()
    release.set()
    thread.join(timeout=_WAIT)
    assert not thread.is_alive()
    ended = time.monotonic()
    assert (outcome[0] is None) is (ending == "completes"), outcome
    _until(lambda: not _lease_tasks(step_id), "the lease task outlived its step")
    time.sleep(0.3)  # Two leases: six renewals, had it gone on.
    assert not [when for when, only in commits if only and when > ended]
    status = _stored_step(store, task_id, step_id).status
    assert status is (StepStatus.COMPLETED if ending == "completes" else StepStatus.FAILED)


def test_a_taken_over_steps_first_runner_cannot_commit_and_nothing_runs_twice(
    stores: Stores, tmp_path: Path
) -> None:
    lease, go = 0.5, tmp_path / "go"
    store = stores.open()
    task_id, step_id = _first_step(store)
    holder = _other_host(stores, task_id, lease=lease, hold=0.1, stall=str(go))
    try:
        _until(lambda: _claimed_elsewhere(store, task_id, step_id), "no claim was stored")
        # The holder's loop now stalls mid-step (until `go`): its lease lapses unrenewed.
        until = claimed_until(_stored_step(store, task_id, step_id).claimed_by)
        assert until is not None
        _until(lambda: store_now(store) > until, "the holder's lease did not lapse")
        calls: list[str] = []
        taker = _runner(stores.open(), _counting(calls, "taker"))
        try:
            output = taker.run_step(task_id)
        finally:
            go.touch()
        out, err = holder.communicate(timeout=_WAIT)
    finally:
        holder.kill()
    assert output.task_step.step_id == step_id and calls == ["taker"]
    assert out.split()[:2] == ["called", "conflict"], err  # Called once; its commit refused.
    assert "this run's result is dropped" in err, err
    state = _runner(stores.open()).get_task_state(task_id)
    assert state.completed == [step_id]  # Completed once: by the taker.
    step = state.steps[step_id]
    assert (step.status, step.attempts, step.number) == (StepStatus.COMPLETED, 2, 1)
    assert len(state.queue) == 1 and state.steps[state.queue[0]].status is StepStatus.UPCOMING
