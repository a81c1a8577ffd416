"""Two control planes on one PostgreSQL database and one Redis handle one system; killing one
mid-run loses and duplicates nothing.

Real parts: redis-server, PostgreSQL, two control-plane processes and the services' replicas
(`_services_process.py`: each hop's tool logs its `done` line, so each hop's runs are counted).
"One address" is the clients alternating between the two control planes' URLs: task i is
created through control plane i % 2, as a round-robin in front of them would do. The kill
lands while the first control plane holds a message unacknowledged (Redis's pending list
names its consumer), so the second must take it over (XAUTOCLAIM) for its task to finish.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from stepwise.services import ServicesClient
from tests.faults._services_support import ROOT, ServicesSystem, until
from tests.stepwise.services._system import free_port

PIPELINE = ["alpha", "beta"]
TASKS = 20
VISIBILITY = 1.0  # A killed control plane's messages are taken over by the other this soon.


class ControlPlanes:
    """Control-plane processes sharing one database and one queue."""

    def __init__(self, system: ServicesSystem, db: str) -> None:
        self.system = system
        self.db = db
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, port: int) -> tuple[str, int]:
        config = {
            "redis_url": self.system.redis_url,
            "prefix": self.system.prefix,
            "visibility": self.system.visibility,
            "port": port,
            "db": self.db,
            "services": PIPELINE,
        }
        command = [sys.executable, "-m", "tests.faults._control_plane_process", json.dumps(config)]
        url = f"http://127.0.0.1:{port}"
        process = self.processes[url] = subprocess.Popen(command, cwd=ROOT)
        return url, process.pid

    def kill(self, url: str) -> int:
        process = self.processes.pop(url)
        process.send_signal(signal.SIGKILL)
        return process.wait(timeout=10)

    def stop(self) -> None:
        for process in self.processes.values():
            process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


@pytest.fixture
def system(
    redis_url: str, stream_prefix: str, postgres_url: str, postgres_schema: str, tmp_path: Path
) -> Iterator[tuple[ServicesSystem, ControlPlanes]]:
    services = ServicesSystem(redis_url, stream_prefix, tmp_path, visibility=VISIBILITY)
    planes = ControlPlanes(services, f"{postgres_url}?schema={postgres_schema}")
    try:
        yield services, planes
    finally:
        planes.stop()
        services.stop()


def _ended(client: ServicesClient, task_ids: list[str]) -> bool:
    return all(client.get_task(task_id).status.ended for task_id in task_ids)


def _settled(client: redis.Redis, prefix: str) -> bool:
    """Whether no message of the system waits unacknowledged (a resend was handled too)."""
    groups = ["control_plane", *PIPELINE]
    return all(client.xpending(f"{prefix}{group}", group)["pending"] == 0 for group in groups)


def _holding(client: redis.Redis, stream: str, pid: int) -> int:
    """How many control-plane messages the consumer of process `pid` holds unacknowledged."""
    summary = client.xpending(stream, "control_plane")
    # A consumer's name is <consumer id>-<pid>-<random>.
    return sum(c["pending"] for c in summary["consumers"] if f"-{pid}-" in c["name"])


def test_two_control_planes_one_killed_mid_run_lose_and_duplicate_nothing(system) -> None:
    services, planes = system
    # The services register with the first; the database tells the second about them.
    (first, victim), (second, _) = planes.start(services.port), planes.start(free_port())
    for name in PIPELINE:
        services.start_replica(name)
    for url in (first, second):
        until(lambda url=url: _healthy(url), within=60, what=f"control plane {url} starting")
    services.wait_registered(len(PIPELINE))
    clients = [ServicesClient(first), ServicesClient(second)]
    assert {s.service_name for s in clients[1].list_services()} == set(PIPELINE)

    texts = [f"t{number:02d}" for number in range(TASKS)]
    task_ids = {clients[n % 2].create_task(text): text for n, text in enumerate(texts)}
    queue = redis.Redis.from_url(services.redis_url, decode_responses=True)
    stream = f"{services.prefix}control_plane"
    until(lambda: _holding(queue, stream, victim), within=30, what="the first holding a message")
    assert planes.kill(first) == -signal.SIGKILL
    hops_at_kill = sum(services.done_counts().values())
    assert hops_at_kill < TASKS * len(PIPELINE), "the kill came after the run, not in it"

    survivor = clients[1]
    until(lambda: _ended(survivor, list(task_ids)), within=60, what="every task ending")
    # What it held is taken over and handled (a task may have ended without it: then its
    # redelivery must change nothing, which the checks below see).
    until(lambda: not _holding(queue, stream, victim), within=30, what="its message taken over")
    until(lambda: _settled(queue, services.prefix), within=30, what="every message handled")
    for task_id, text in task_ids.items():
        task = survivor.get_task(task_id)
        assert task.status.value == "completed", (text, task.error)
        assert task.result == f"{text}|alpha|beta"
        hops = survivor.get_hops(task_id)
        assert [(hop.seq, hop.service_name, hop.status.value) for hop in hops] == [
            (1, "alpha", "completed"),
            (2, "beta", "completed"),
        ]
    assert len(survivor.list_tasks(limit=1000)) == TASKS  # No task created twice.
    expected = {(text, "alpha") for text in texts} | {(f"{t}|alpha", "beta") for t in texts}
    done = services.done_counts()
    assert set(done) == expected  # Nothing lost ...
    assert set(done.values()) == {1}  # ... and every hop's work ran once.
