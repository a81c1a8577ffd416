"""The hop ledger: a hop's task and its entry are one write; a crash leaves no orphan; trimmed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_core.errors import UserError
from agent_core.llms import ScriptedLLM
from agent_core.store import SQLiteStore
from agent_core.store import sqlite as sqlite_store
from stepwise.services import ActionTypes, AgentService, QueueMessage, SimpleMessageQueue
from stepwise.services.services import agent as agent_service
from stepwise.services.services.agent import ledger_key
from stepwise.services.services.base import HopRequest

from ._system import ROOT, runner

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def new_task(message_id: str, text: str = "hi") -> QueueMessage:
    request = HopRequest(task_id="t1", input=text, hop_id=f"hop-{message_id}")
    return QueueMessage(
        id_=message_id,
        type="svc",
        action=ActionTypes.NEW_TASK,
        data=request.model_dump(mode="json"),
    )


def service_on(store: SQLiteStore, llm: ScriptedLLM) -> tuple[AgentService, list[str]]:
    """The service `svc` on `store`; the list records the results it publishes."""
    service = AgentService(runner(llm, store=store), SimpleMessageQueue(), service_name="svc")
    published: list[str] = []

    async def publish_result(request: HopRequest, result: str, **_: Any) -> None:
        published.append(result)

    service.publish_result = publish_result  # type: ignore[method-assign]
    return service, published


# A replica that dies (os._exit: no cleanup, no rollback, as a kill) after the hop's task rows
# are written and before its ledger entry is.
_DIES_MID_HOP = """
import asyncio, os, sys
from pathlib import Path
from agent_core.llms import ScriptedLLM
from agent_core.store import SQLiteStore
from tests.stepwise.services.test_hop_ledger import new_task, service_on

db_path, marker = Path(sys.argv[1]), Path(sys.argv[2])

def die(db, key, task_id):
    (written,) = db.execute("SELECT count(*) FROM tasks WHERE task_id = ?", (task_id,))
    marker.write_text(f"{key} {written[0]}")
    os._exit(17)

SQLiteStore._write_ledger_entry = staticmethod(die)
service, _ = service_on(SQLiteStore(db_path), ScriptedLLM(["never reached"]))
asyncio.run(service.process_message(new_task("m1")))
"""


def test_a_replica_killed_between_the_hops_task_and_its_entry_leaves_no_orphan(
    tmp_path: Path,
) -> None:
    db, marker = tmp_path / "stepwise.db", tmp_path / "died"
    died = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_DIES_MID_HOP), str(db), str(marker)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert died.returncode == 17, died.stderr
    assert marker.read_text() == "svc:m1 1"  # It died with the task's row written, uncommitted.

    store = SQLiteStore(db)
    assert store.list_tasks() == [] and store.ledger_entry("svc:m1") is None
    llm = ScriptedLLM(["once"])
    service, published = service_on(store, llm)

    asyncio.run(service.process_message(new_task("m1")))
    assert published == ["once"] and llm.exhausted
    (task,) = store.list_tasks()
    entry = store.ledger_entry("svc:m1")
    assert entry is not None and (entry.task_id, entry.result) == (task.task_id, "once")


async def test_a_crash_before_the_result_is_recorded_reruns_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "stepwise.db")
    llm = ScriptedLLM(["only once"])  # A second run would find the script empty and fail.
    service, published = service_on(store, llm)
    finish = store.finish_ledger_entry
    crashes: list[str] = []

    def crash_once(key: str, result: str) -> None:
        if not crashes:
            crashes.append(key)
            raise KeyboardInterrupt  # Killed after the run, before its result was recorded.
        finish(key, result)

    service.ledger.finish_ledger_entry = crash_once  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        await service.process_message(new_task("m1"))
    assert crashes == ["svc:m1"] and published == []

    await service.process_message(new_task("m1"))

    assert published == ["only once"] and len(llm.requests) == 1
    (task,) = store.list_tasks()
    entry = store.ledger_entry("svc:m1")
    assert entry is not None and (entry.task_id, entry.result) == (task.task_id, "only once")


class Clock:
    def __init__(self) -> None:
        self.now = T0
        self.readings = 0

    def __call__(self) -> datetime:
        self.readings += 1
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    """One clock for the service (what is old) and the store (when an entry was written)."""
    fake = Clock()
    monkeypatch.setattr(sqlite_store, "utcnow", fake)
    monkeypatch.setattr(agent_service, "utcnow", fake)
    yield fake
    assert fake.readings > 0, "the service and store no longer read the patched clock"


async def test_each_hop_trims_the_ledger_to_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    monkeypatch.setattr(agent_service, "LEDGER_MAX_ENTRIES", 2)
    store = SQLiteStore(tmp_path / "stepwise.db")
    service, published = service_on(store, ScriptedLLM(["1", "2", "3", "4"]))

    def kept() -> list[str]:
        keys = [ledger_key("svc", f"m{i}") for i in range(1, 5)]
        return [key for key in keys if store.ledger_entry(key) is not None]

    for minute in (1, 2, 3):
        clock.now = T0 + timedelta(minutes=minute)
        await service.process_message(new_task(f"m{minute}"))
    assert kept() == ["svc:m2", "svc:m3"]  # The oldest past LEDGER_MAX_ENTRIES went.

    clock.now = T0 + agent_service.LEDGER_KEEP_FINISHED + timedelta(minutes=10)
    await service.process_message(new_task("m4"))

    assert kept() == ["svc:m4"]  # Finished more than LEDGER_KEEP_FINISHED ago: gone.
    assert published == ["1", "2", "3", "4"] and len(store.list_tasks()) == 4


class _TasksOnly(SQLiteStore):
    """A store that keeps tasks and no ledger."""

    ledger_entry = None  # type: ignore[assignment]


def test_a_store_without_a_ledger_is_refused_when_the_service_is_made(tmp_path: Path) -> None:
    agent = runner(ScriptedLLM([]), store=_TasksOnly(tmp_path / "x.db"))
    with pytest.raises(UserError, match="keeps its hop ledger in the agent's store"):
        AgentService(agent, SimpleMessageQueue(), service_name="svc")
