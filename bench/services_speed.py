"""Multi-agent services (issue 13): a two-service pipeline, side by side with llama-agents.

1. A pipeline of two zero-latency scripted agents (`first` then `second`), run three ways:
   Stepwise in one process (what `LocalLauncher` runs: control plane, services and the
   `SimpleMessageQueue` on one loop); Stepwise on Redis Streams with one process per
   component and the client in this one (over HTTP); llama-agents 0.0.14 with its
   `SimpleMessageQueue` and `LocalLauncher`, on scripted LLMs, in its own environment
   (bench/.venv-llama-agents, pinned in bench/anchors/llama_agents_requirements.txt, created
   here on first use). Each gives tasks per second and p50 latency, one task at a time.
   Stepwise also runs N tasks at once (llama-agents' launcher takes one at a time).
2. Scaling on Redis: 1, 2 and 4 replicas (processes) of a service whose model takes 200 ms
   per step, N tasks at once: throughput, as a ratio to one replica.

Goals printed beside the figures (nothing asserts them): ≥ 10x llama-agents' throughput;
4 replicas ≥ 3.5x one. Everything shares this machine's cores. Results go to
bench/results/services_speed.json; `--quick` runs fewer tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench._services_component import pipeline, scripted_service
from stepwise.services import SimpleMessageQueue

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results" / "services_speed.json"
LLAMA_VENV = BENCH / ".venv-llama-agents"
LLAMA_PYTHON = LLAMA_VENV / "bin" / "python"
LLAMA_REQUIREMENTS = BENCH / "anchors" / "llama_agents_requirements.txt"
NAMES = ["first", "second"]
POLL_S = 0.002


def _rates(latencies: list[float]) -> dict[str, float]:
    return {
        "tasks_per_s": round(len(latencies) / sum(latencies), 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
    }


# ---------------------------------------------------------------- Stepwise, one process


async def _local(sequential: int, concurrent: int) -> dict[str, float]:
    queue = SimpleMessageQueue()
    control_plane = pipeline(queue, NAMES)
    running = [await control_plane.launch_local()]
    for name in NAMES:
        service = scripted_service(queue, name)
        await control_plane.register_service(service.service_definition, kind=service.kind)
        running.append(await service.launch_local())
    try:

        async def one() -> None:
            task = await control_plane.create_task("hello")
            await control_plane.wait_for_task(task.task_id)

        await one()  # Warm-up.
        latencies = []
        for _ in range(sequential):
            started = time.perf_counter()
            await one()
            latencies.append(time.perf_counter() - started)
        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(concurrent)))
        at_once = concurrent / (time.perf_counter() - started)
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
    return {**_rates(latencies), "concurrent_tasks_per_s": round(at_once, 1)}


# ---------------------------------------------------------------- Stepwise on Redis


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def _redis_server() -> Iterator[str]:
    """A redis-server of our own (AOF fsynced every second, a usual production setting)."""
    executable = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = _free_port()
    with tempfile.TemporaryDirectory() as folder:
        process = subprocess.Popen(
            [executable, "--port", str(port), "--bind", "127.0.0.1", "--dir", folder,
             "--appendonly", "yes", "--appendfsync", "everysec", "--save", ""],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            _until(lambda: _answers(port), 10)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.terminate()
            process.wait(timeout=10)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _until(condition: Callable[[], bool], within: float) -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not ready within {within:g} s")
        time.sleep(0.02)


@contextmanager
def _system(redis_url: str, services: list[tuple[str, float]]) -> Iterator[httpx.Client]:
    """Control plane and each service replica in a process of its own; a client of it."""
    port, prefix = _free_port(), f"b{uuid.uuid4().hex[:8]}:"
    base = [sys.executable, "-m", "bench._services_component"]
    names = ",".join(dict.fromkeys(name for name, _ in services))
    roles = [["control_plane", redis_url, prefix, str(port), names]]
    roles += [["service", redis_url, prefix, str(port), n, str(d)] for n, d in services]
    processes = [subprocess.Popen([*base, *role], cwd=ROOT) for role in roles]
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    try:
        _until(lambda: _registered(client) == len(set(names.split(","))), 60)
        time.sleep(1.0)  # Let late replicas join their consumer group before timing.
        yield client
    finally:
        client.close()
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=20)


def _registered(client: httpx.Client) -> int:
    try:
        return len(client.get("/services").json())
    except (httpx.TransportError, ValueError):
        return 0


def _create(client: httpx.Client) -> str:
    return client.post("/tasks", json={"input": "hello"}).json()["task_id"]


def _wait(client: httpx.Client, task_id: str) -> None:
    while client.get(f"/tasks/{task_id}").json()["status"] != "completed":
        time.sleep(POLL_S)


def _all_done(client: httpx.Client, count: int) -> None:
    while sum(t["status"] == "completed" for t in client.get("/tasks?limit=1000").json()) < count:
        time.sleep(0.01)


def _at_once(client: httpx.Client, count: int) -> float:
    """Tasks per second for `count` tasks created together (counting from the first)."""
    before = len(client.get("/tasks?limit=1000").json())
    started = time.perf_counter()
    for _ in range(count):
        _create(client)
    _all_done(client, before + count)
    return count / (time.perf_counter() - started)


def _on_redis(redis_url: str, sequential: int, concurrent: int) -> dict[str, float]:
    with _system(redis_url, [(name, 0.0) for name in NAMES]) as client:
        _wait(client, _create(client))  # Warm-up.
        latencies = []
        for _ in range(sequential):
            started = time.perf_counter()
            _wait(client, _create(client))
            latencies.append(time.perf_counter() - started)
        rate = _at_once(client, concurrent)
    return {**_rates(latencies), "concurrent_tasks_per_s": round(rate, 1)}


def _scaling(redis_url: str, tasks: int) -> dict[int, float]:
    rates = {}
    for replicas in (1, 2, 4):
        with _system(redis_url, [("slow", 0.2)] * replicas) as client:
            rates[replicas] = round(_at_once(client, tasks), 2)
    return rates


# ---------------------------------------------------------------- llama-agents


def _ensure_llama_env() -> None:
    if LLAMA_PYTHON.exists():
        return
    print("creating bench/.venv-llama-agents for llama-agents 0.0.14…", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(LLAMA_VENV)], check=True)
    subprocess.run(
        [str(LLAMA_PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-r", str(LLAMA_REQUIREMENTS)],
        check=True,
    )  # fmt: skip


def _llama_agents(sequential: int) -> dict[str, float]:
    _ensure_llama_env()
    script = BENCH / "anchors" / "llama_agents_pipeline.py"
    done = subprocess.run(
        [str(LLAMA_PYTHON), str(script), "--tasks", str(sequential)],
        check=True, capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    return _rates(json.loads(done.stdout.strip().splitlines()[-1])["latencies_s"])


# ---------------------------------------------------------------- report


def _print(results: dict) -> None:
    local, redis, llama = results["stepwise_local"], results["stepwise_redis"], results["llama"]
    base = llama["tasks_per_s"]
    print("\nTwo-service pipeline, zero-latency scripted agents (one task at a time)")
    print(f"{'system':<44}{'tasks/s':>10}{'p50 ms':>10}{'÷ llama-agents':>16}")
    for label, row in (
        ("Stepwise, one process (SimpleMessageQueue)", local),
        ("Stepwise, Redis, a process per component", redis),
        ("llama-agents 0.0.14 LocalLauncher", llama),
    ):
        ratio = row["tasks_per_s"] / base
        print(f"{label:<44}{row['tasks_per_s']:>10}{row['p50_ms']:>10}{ratio:>15.1f}x")
    print(
        f"N tasks at once: one process {local['concurrent_tasks_per_s']} tasks/s "
        f"({local['concurrent_tasks_per_s'] / base:.1f}x llama-agents), Redis "
        f"{redis['concurrent_tasks_per_s']} tasks/s "
        f"({redis['concurrent_tasks_per_s'] / base:.1f}x); goal ≥ 10x"
    )
    scaling = results["scaling_tasks_per_s"]
    print("\nReplicas of a 200 ms-per-step service on Redis, tasks at once")
    for replicas, rate in scaling.items():
        print(f"  {replicas} replica(s): {rate:>6} tasks/s  {rate / scaling['1']:.2f}x one")
    print("  goal: 4 replicas ≥ 3.5x one")


def main() -> None:
    """Run every measurement, print the table and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer tasks")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = parser.parse_args()
    sequential, concurrent, scaled = (10, 40, 12) if args.quick else (40, 200, 40)
    llama = _llama_agents(sequential)
    local = asyncio.run(_local(sequential, concurrent))
    with _redis_server() as redis_url:
        redis = _on_redis(redis_url, sequential, concurrent)
        scaling = _scaling(redis_url, scaled)
    results = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "quick": args.quick,
        "stepwise_local": local,
        "stepwise_redis": redis,
        "llama": llama,
        "scaling_tasks_per_s": {str(k): v for k, v in scaling.items()},
    }
    _print(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
