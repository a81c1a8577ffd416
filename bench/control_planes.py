"""Two control planes vs one (issue 24): a two-service pipeline's throughput on Redis with the
control plane's state in SQLite (one control plane), in PostgreSQL (one), and in PostgreSQL
shared by two control planes (clients alternate between their URLs).

    .venv/bin/python -m bench.control_planes [--tasks 200]

Each part is its own process (zero-latency scripted services, one replica each, from
`bench._services_component`); a real redis-server and a real PostgreSQL (durable settings)
are started here. Figures: tasks/s for `--tasks` tasks created at once, and the p50 latency
of one task at a time. Everything shares this machine's cores, so a second control plane adds
no cores: the figure to read is what the shared database costs, not a speed-up.
Results go to bench/results/control_planes.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.services_speed import _free_port, _redis_server, _registered, _until

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "control_planes.json"
NAMES = ["first", "second"]


@contextmanager
def _postgres() -> Iterator[str]:
    from tests._postgres_server import PostgresServer, _binaries, _free_port, _own_folder

    server = PostgresServer(_binaries(), _own_folder(), _free_port(), durable=True)
    server.init()
    server.start()
    server.create_database()
    try:
        yield server.url
    finally:
        server.stop()


@contextmanager
def _system(redis_url: str, dbs: list[str]) -> Iterator[list[httpx.Client]]:
    """Control planes (one per db) and a replica of each service, each its own process."""
    prefix, ports = f"b{uuid.uuid4().hex[:8]}:", [_free_port() for _ in dbs]
    mine = [sys.executable, "-m", "bench.control_planes", "--component"]
    service = [sys.executable, "-m", "bench._services_component", "service", redis_url, prefix]
    pairs = zip(ports, dbs, strict=True)
    commands = [[*mine, redis_url, prefix, str(port), db] for port, db in pairs]
    commands += [[*service, str(ports[0]), name, "0"] for name in NAMES]
    processes = [subprocess.Popen(command, cwd=ROOT) for command in commands]
    clients = [httpx.Client(base_url=f"http://127.0.0.1:{p}", timeout=30) for p in ports]
    try:
        for client in clients:
            _until(lambda client=client: _registered(client) == len(NAMES), 60)
        time.sleep(1.0)  # Let every consumer join its group before timing.
        yield clients
    finally:
        for client in clients:
            client.close()
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=20)


def _create(client: httpx.Client) -> str:
    return client.post("/tasks", json={"input": "hello"}).json()["task_id"]


def _done(client: httpx.Client, task_id: str) -> bool:
    return client.get(f"/tasks/{task_id}").json()["status"] == "completed"


def _measure(clients: list[httpx.Client], tasks: int, sequential: int) -> dict[str, float]:
    latencies = []
    for number in range(sequential):
        client = clients[number % len(clients)]
        started = time.perf_counter()
        task_id = _create(client)
        while not _done(client, task_id):
            time.sleep(0.002)
        latencies.append(time.perf_counter() - started)
    started = time.perf_counter()
    ids = [_create(clients[number % len(clients)]) for number in range(tasks)]
    waiting = set(ids)
    while waiting:
        waiting = {t for t in waiting if not _done(clients[0], t)}
        time.sleep(0.01)
    return {
        "tasks_per_s": round(tasks / (time.perf_counter() - started), 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--sequential", type=int, default=20)
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with _redis_server() as redis_url, _postgres() as pg, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        setups = {
            "sqlite_1": [str(folder / "cp.db")],
            "postgres_1": [f"{pg}?schema=one"],
            "postgres_2": [f"{pg}?schema=two"] * 2,
        }
        for name, dbs in setups.items():
            with _system(redis_url, dbs) as clients:
                results[name] = _measure(clients, args.tasks, args.sequential)
            print(f"{name:11} {results[name]}", flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"tasks": args.tasks, **results}, indent=2) + "\n")


async def _component(redis_url: str, prefix: str, port: str, db: str) -> None:
    from stepwise.services import ControlPlaneServer, PipelineOrchestrator, RedisStreamsMessageQueue
    from stepwise.services.launchers import serve_control_plane

    queue = RedisStreamsMessageQueue(redis_url, stream_prefix=prefix, block_ms=500)
    server = ControlPlaneServer(queue, PipelineOrchestrator(NAMES), db=db, port=int(port))
    await serve_control_plane(server)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--component"]:
        asyncio.run(_component(*sys.argv[2:6]))
    else:
        main()
