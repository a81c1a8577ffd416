"""The control plane's state on a real PostgreSQL: the same records as on SQLite, a per-task
lock two control planes share, and a hop watch that sends a timed-out hop again once however
many control planes run it."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis

from stepwise.services import (
    ControlPlaneServer,
    PipelineOrchestrator,
    RedisStreamsMessageQueue,
    ServiceDefinition,
    TaskDefinition,
)
from stepwise.services.control_plane import ControlPlaneState
from stepwise.services.records import HumanRequest, TaskStatus


@pytest.fixture
def db(postgres_url: str, postgres_schema: str) -> str:
    return f"{postgres_url}?schema={postgres_schema}"


def test_the_state_on_postgres_keeps_and_repeats_nothing_twice(db: str) -> None:
    state = ControlPlaneState(db)
    service = ServiceDefinition(service_name="alpha", description="first")
    state.register_service(service)
    state.register_service(service.model_copy(update={"description": "again"}))
    task = TaskDefinition(input="x" * 3000)
    assert state.add_task(task) is True
    assert state.add_task(task) is False  # A redelivered NEW_TASK.
    hop = state.add_hop(task.task_id, service_name="alpha", input="in", pending=False,
                        orchestrator_state={"n": 1})  # fmt: skip
    done = {"result": "out", "service_task_id": None, "orchestrator_state": {"n": 2}}
    assert state.complete_hop(hop.hop_id, **done) is True
    assert state.complete_hop(hop.hop_id, **done) is False  # A redelivered result.
    request = HumanRequest(
        request_id="r1", task_id=task.task_id, service_name="alpha", prompt="?",
        reply_to="control_plane", created_at=time.time(),
    )  # fmt: skip
    assert state.add_human_request(request) is True
    assert state.add_human_request(request) is False

    other = ControlPlaneState(db)  # Another control plane on the same database.
    assert [(s.service_name, s.description) for s in other.list_services()] == [("alpha", "again")]
    assert other.get_task(task.task_id).hop_count == 1
    assert other.orchestrator_state(task.task_id) == {"n": 2}
    (listed,) = other.list_tasks()
    assert listed.truncated and len(listed.input) == 2001  # Cut as on SQLite.
    assert other.get_hop(hop.hop_id).created_at == pytest.approx(hop.created_at)  # Not float4.
    assert [r.request_id for r in other.human_requests()] == ["r1"]


async def test_a_task_locked_by_one_control_plane_waits_in_another(db: str) -> None:
    first, second = ControlPlaneState(db), ControlPlaneState(db)
    async with first.task_lock("t1"):
        waiting = asyncio.create_task(_hold(second, "t1"))
        async with second.task_lock("t2"):  # Another task is not held up.
            pass
        await asyncio.sleep(0.3)
        assert not waiting.done()
    await asyncio.wait_for(waiting, 5)


async def _hold(state: ControlPlaneState, task_id: str) -> None:
    async with state.task_lock(task_id):
        pass


async def test_two_hop_watches_send_a_timed_out_hop_again_once(
    db: str, redis_url: str, stream_prefix: str
) -> None:
    planes = [
        ControlPlaneServer(
            RedisStreamsMessageQueue(redis_url, stream_prefix=stream_prefix),
            PipelineOrchestrator(["nobody"]),
            db=db,
            hop_timeout=0.2,
        )
        for _ in range(2)
    ]
    first, second = planes
    assert await first.message_queue.lost_messages()  # Redis's epoch, set before the hop.
    await first.register_service(ServiceDefinition(service_name="nobody", description="none"))
    task = TaskDefinition(input="hello")
    first.state.add_task(task)
    async with first._lock(task.task_id):
        await first._advance(task.task_id, resend=False)
    sent = redis.Redis.from_url(redis_url)
    stream = f"{stream_prefix}nobody"
    assert sent.xlen(stream) == 1

    await asyncio.sleep(0.3)  # No consumer of "nobody" took it within the timeout.
    await asyncio.gather(*(plane.hop_watch.check() for plane in planes))
    assert sent.xlen(stream) == 2  # Sent again once, not once per control plane.
    assert first.state.get_task(task.task_id).status is TaskStatus.RUNNING

    await asyncio.sleep(0.3)
    await asyncio.gather(*(plane.hop_watch.check() for plane in planes))
    assert sent.xlen(stream) == 2
    failed = second.state.get_task(task.task_id)
    assert failed.status is TaskStatus.FAILED and "timed out" in (failed.error or "")
    for plane in planes:
        await plane.message_queue.close()


def test_a_services_file_puts_the_control_plane_on_the_database_its_url_names(
    db: str, tmp_path
) -> None:
    from stepwise.cli.services_config import load_config
    from stepwise.services import SimpleMessageQueue

    config = tmp_path / "services.toml"
    config.write_text(f'queue = "simple"\n[control_plane]\ndb = "{db}"\n')
    plane = load_config(config).build_control_plane(SimpleMessageQueue())
    plane.state.register_service(ServiceDefinition(service_name="alpha", description="a"))
    assert [s.service_name for s in ControlPlaneState(db).list_services()] == ["alpha"]
    assert not list(tmp_path.glob("postgresql*"))  # Not taken for a file's name.


def test_a_schema_from_before_gets_the_hop_watch_columns(
    db: str, postgres_url: str, postgres_schema: str
) -> None:
    import psycopg

    from tests.stepwise.services.test_control_plane_layout import _OLD_HOPS

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{postgres_schema}"')
        conn.execute(f'SET search_path TO "{postgres_schema}"')
        for statement in filter(str.strip, _OLD_HOPS.replace("REAL", "FLOAT8").split(";")):
            conn.execute(statement)
    state = ControlPlaneState(db)
    task = TaskDefinition(input="x")
    state.add_task(task)
    hop = state.add_hop(task.task_id, service_name="a", input="x", pending=False,
                        orchestrator_state={})  # fmt: skip
    later = time.time() + 60
    assert [h.hop_id for h in state.due_hops(now=later, timeout=10)] == [hop.hop_id]


def test_a_services_store_may_be_a_postgres_url_or_a_path_beside_the_file(
    postgres_url: str, postgres_schema: str, tmp_path
) -> None:
    from agent_core.store import PostgresStore, SQLiteStore
    from stepwise.cli.services_config import load_config

    config = tmp_path / "services.toml"
    config.write_text('queue = "simple"\n')
    loaded = load_config(config)

    on_postgres = loaded._store(f"{postgres_url}?schema={postgres_schema}")
    beside = loaded._store("alpha.db")

    assert isinstance(on_postgres, PostgresStore) and on_postgres.schema == postgres_schema
    assert isinstance(beside, SQLiteStore) and (tmp_path / "alpha.db").exists()
    assert not list(tmp_path.glob("postgresql*"))  # A URL is not taken for a file's name.
