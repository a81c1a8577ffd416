"""Services on Redis under faults, each component in its own process (issue 13).

A replica killed with SIGKILL mid-hop, redis-server crashed and restarted mid-run, a message
that always fails, and 200 tasks through a three-service pipeline whose replicas are killed
and restarted while it runs. Effects are counted in a log each hop's tool appends to, so a
hop that ran twice shows, and so does which process ran it.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from stepwise.services import QueueMessage, ServicesClient, TaskFailedError
from stepwise.services.messages import CONTROL_PLANE, ActionTypes
from stepwise.services.records import HopStatus, TaskStatus
from tests._redis_server import RedisServer
from tests.faults._services_support import ServicesSystem, until

MakeSystem = Callable[..., ServicesSystem]


@pytest.fixture
def make_system(redis_url: str, stream_prefix: str, tmp_path: Path) -> Iterator[MakeSystem]:
    """Builds the test's system; every process it started is stopped afterwards."""
    systems: list[ServicesSystem] = []

    def make(**options: float) -> ServicesSystem:
        system = ServicesSystem(redis_url, stream_prefix, tmp_path, **options)  # type: ignore[arg-type]
        systems.append(system)
        return system

    yield make
    for system in systems:
        system.stop()


def _stream(system: ServicesSystem, message_type: str) -> list[QueueMessage]:
    """Every message still in a type's stream, handled or not (XACK does not delete)."""
    with redis.Redis.from_url(system.redis_url, decode_responses=True) as client:
        entries = client.xrange(f"{system.prefix}{message_type}")
    return [QueueMessage.model_validate_json(fields["message"]) for _, fields in entries]


def _ended(client: ServicesClient, count: int) -> int:
    """How many tasks have ended, once `count` have (else 0, to keep polling)."""
    ended = sum(task.status.ended for task in client.list_tasks(limit=1000))
    return ended if ended >= count else 0


def test_a_replica_killed_mid_hop_is_finished_by_the_other_and_one_result_reaches_the_client(
    make_system: MakeSystem, tmp_path: Path
) -> None:
    system = make_system(visibility=1.0)
    gate = tmp_path / "gate"
    gate.mkdir()
    system.start_control_plane(["slow"])
    replicas = {system.start_replica("slow", gate=str(gate)) for _ in range(2)}
    system.wait_registered(1)
    with system.client() as client:
        task_id = client.create_task("t1")
        started = until(lambda: list(gate.glob("started-*")), within=30, what="a hop starting")
        victim = int(started[0].name.removeprefix("started-"))
        system.kill(victim)
        (gate / "go").touch()
        result = client.wait_for_result(task_id, timeout=30)
        hops = client.get_hops(task_id)
    [survivor] = replicas - {victim}
    assert result.result == "t1|slow"
    effects = [(e.phase, e.pid) for e in system.effects()]
    assert effects == [("begin", victim), ("begin", survivor), ("done", survivor)]
    assert [(h.service_name, h.status, h.result) for h in hops] == [
        ("slow", HopStatus.COMPLETED, "t1|slow")
    ]
    results = [
        m
        for m in _stream(system, CONTROL_PLANE)
        if m.action is ActionTypes.COMPLETED_TASK and m.data["task_id"] == task_id
    ]
    assert len(results) == 1  # The victim published nothing; the survivor once.


def test_redis_crashed_and_restarted_mid_run_loses_no_message(
    make_system: MakeSystem, redis_server: RedisServer
) -> None:
    system = make_system(visibility=2.0)
    system.start_control_plane(["a", "b"])
    system.start_replica("a")
    system.start_replica("b")
    system.wait_registered(2)
    inputs = [f"r{n:02d}" for n in range(30)]
    with system.client() as client:
        task_ids = {client.create_task(text): text for text in inputs}
        ended_before = until(lambda: _ended(client, 3), within=60, what="the first tasks")
        redis_server.restart(kill=True, down_for=1.0)  # AOF with fsync always: a crash.
        until(lambda: _ended(client, len(inputs)), within=90, what="every task ending")
        results = {task_ids[t]: client.get_task_result(t) for t in task_ids}
    assert ended_before < len(inputs)  # Redis went down with work in flight.
    assert {text: r.result for text, r in results.items() if r} == {
        text: f"{text}|a|b" for text in inputs
    }
    # No process died, so no hop ran twice: redeliveries found their hop in the ledger.
    assert system.done_counts() == Counter(
        [(text, "a") for text in inputs] + [(f"{text}|a", "b") for text in inputs]
    )


def test_a_message_that_always_fails_is_dead_lettered_and_its_task_fails_with_the_reason(
    make_system: MakeSystem,
) -> None:
    system = make_system(visibility=1.0, max_deliveries=3)
    system.start_control_plane(["flaky"])
    system.start_replica("flaky", fail=True)
    system.wait_registered(1)
    with system.client() as client:
        task_id = client.create_task("doomed")
        task = until(
            lambda: (t := client.get_task(task_id)).status.ended and t, within=60, what="failing"
        )
        with pytest.raises(TaskFailedError, match="the model is down"):
            client.get_task_result(task_id)
    assert task.status is TaskStatus.FAILED
    assert task.error is not None
    assert "flaky could not handle a new_task message after 3 deliveries" in task.error
    [letter] = _dead_letters(system, "flaky")
    assert letter["message"]["data"]["task_id"] == task_id
    assert "the model is down" in letter["reason"]
    assert [e.phase for e in system.effects()] == ["model"] * 3  # Tried 3 times, no more.
    with redis.Redis.from_url(system.redis_url, decode_responses=True) as raw:
        assert raw.xpending(f"{system.prefix}flaky", "flaky")["pending"] == 0


def _dead_letters(system: ServicesSystem, message_type: str) -> list[dict[str, Any]]:
    """The dead letters of a type, as stored (message and reason)."""
    with redis.Redis.from_url(system.redis_url, decode_responses=True) as client:
        entries = client.xrange(f"{system.prefix}dead:{message_type}")
    return [json.loads(fields["dead_letter"]) for _, fields in entries]


def _victim(system: ServicesSystem, rng: random.Random) -> int:
    """A replica in the middle of a hop (its last effect is a `begin`), else any replica."""
    last = {e.pid: e.phase for e in system.effects()}
    busy = sorted(pid for pid in system.replicas if last.get(pid) == "begin")
    return rng.choice(busy or sorted(system.replicas))


def test_200_tasks_through_3_services_with_replicas_killed_lose_and_duplicate_nothing(
    make_system: MakeSystem,
) -> None:
    rng = random.Random(13)
    names = ["a", "b", "c"]
    system = make_system(visibility=2.0)
    system.start_control_plane(names)
    for name in names * 2:
        system.start_replica(name)
    system.wait_registered(3)
    inputs = [f"p{n:03d}" for n in range(200)]
    with system.client() as client:
        task_ids = {client.create_task(text): text for text in inputs}
        for progress in (15, 45, 75, 105, 135, 165):  # Kills spread over the run.
            until(lambda p=progress: _ended(client, p), within=90, what=f"{progress} tasks")
            system.start_replica(system.kill(_victim(system, rng)))
        until(lambda: _ended(client, len(inputs)), within=120, what="every task ending")
        tasks = {t.task_id: t for t in client.list_tasks(limit=1000)}
        hops = {t: [h.service_name for h in client.get_hops(t)] for t in task_ids}
    assert {task_ids[t]: tasks[t].result for t in task_ids} == {
        text: f"{text}|a|b|c" for text in inputs
    }
    assert set(map(tuple, hops.values())) == {tuple(names)}  # One hop per service, in order.
    _assert_each_hop_done_once_but_where_a_replica_died(system, inputs)


def _assert_each_hop_done_once_but_where_a_replica_died(
    system: ServicesSystem, inputs: list[str]
) -> None:
    effects = system.effects()
    hops = {(t, "a") for t in inputs} | {(f"{t}|a", "b") for t in inputs}
    hops |= {(f"{t}|a|b", "c") for t in inputs}
    done = [(e.text, e.service, e.pid) for e in effects if e.phase == "done"]
    assert {(text, service) for text, service, _ in done} == hops  # Every hop's work, no other.
    by_survivors = Counter((t, s) for t, s, pid in done if pid not in system.killed)
    assert max(by_survivors.values()) == 1  # A live replica never redid a hop.
    assert len(done) - len(hops) <= len(system.killed)  # At most one redo per kill.
    last = {e.pid: e.phase for e in effects}
    assert any(last.get(pid) == "begin" for pid in system.killed)  # Some kills hit mid-hop.
