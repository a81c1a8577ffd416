"""One `stepwise serve` process against two, on one PostgreSQL database (issue 24).

As a team runs it: `stepwise serve --workers N --db postgresql://...` (default options, a
real uvicorn), the bench agent registered with `--agent` (`bench/_server_agent.py`: ReAct
calling `add` on an instant model), a durable PostgreSQL (fsync on) on loopback.

1. Execute Agent: 50 keep-alive clients for SECONDS against a loopback model that answers in
   50 ms (`bench/_load.py`): calls per second.
2. Agent Protocol: 50 clients, each creating a task and stepping it STEPS times over its own
   keep-alive connection, for SECONDS: steps per second.

Each is run with 1 and 2 server processes, and with 1 process on a SQLite file for reference,
in one run; the ratios 2 / 1 are printed beside the issue's goal (>= 1.7x). The clients, the
model, PostgreSQL and the servers share this machine's cores, so the ratio says how much a
second process gains here, not on a machine with cores to spare. Nothing asserts the goal.

    .venv/bin/python -m bench.server_processes [--seconds 10]

Results go to bench/results/server_processes.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench._load import post_load
from bench.postgres_step import _start_server
from bench.server_speed import AGENT, MODEL_DELAY_MS, _free_port, _process, model_server

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "server_processes.json"
CLIENTS = 50
GOAL = 1.7


@contextmanager
def serve(db: str, workers: int, folder: Path, **env_extra: str) -> Iterator[str]:
    """`stepwise serve --workers N` on `db`, on a free port; yields its base URL."""
    port = _free_port()
    env = {**os.environ, "STEPWISE_WORKSPACES": str(folder / "ws"), **env_extra}
    env.pop("STEPWISE_API_TOKEN", None)
    command = [sys.executable, "-m", "stepwise.cli", "serve", "--port", str(port)]
    command += ["--db", db, "--agent", AGENT, "--workers", str(workers)]
    with _process(command, f"http://127.0.0.1:{port}/health", env) as url:
        time.sleep(1.0 if workers > 1 else 0)  # Every worker up, not only the first.
        yield url.removesuffix("/health")


def execute_rate(url: str, seconds: float) -> float:
    """Execute Agent calls per second from CLIENTS keep-alive clients."""
    body = {
        "messages": [{"role": "user", "content": "What is (121 * 3) + 42?"}],
        "model": {"provider": "openai", "name": "bench-model"},
    }
    latencies, _errors, elapsed = asyncio.run(
        post_load(f"{url}/v1/agent/execute", body, clients=CLIENTS, seconds=seconds)
    )
    return len(latencies) / elapsed


async def _create_task(client: httpx.AsyncClient) -> str:
    created = await client.post(
        "/ap/v1/agent/tasks",
        json={"input": "Add 1 and 2, again.", "additional_input": {"agent": "bench_adder"}},
    )
    created.raise_for_status()
    return created.json()["task_id"]


async def _step_until(
    client: httpx.AsyncClient, task_id: str, stop_at: float, done: list[int], errors: list[int]
) -> None:
    while time.perf_counter() < stop_at:
        answer = await client.post(f"/ap/v1/agent/tasks/{task_id}/steps", json={})
        (done if answer.status_code == 200 else errors).append(1)


async def _steps(url: str, seconds: float) -> tuple[int, int, float]:
    """Every client's task is created first; then all step for `seconds`."""
    clients = [httpx.AsyncClient(base_url=url, timeout=60) for _ in range(CLIENTS)]
    try:
        tasks = await asyncio.gather(*(_create_task(client) for client in clients))
        done: list[int] = []
        errors: list[int] = []
        began = time.perf_counter()
        await asyncio.gather(
            *(
                _step_until(client, task_id, began + seconds, done, errors)
                for client, task_id in zip(clients, tasks, strict=True)
            )
        )
        return len(done), len(errors), time.perf_counter() - began
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))


def step_rate(url: str, seconds: float) -> float:
    """Agent Protocol steps per second from CLIENTS clients, each on a task of its own."""
    done, _errors, elapsed = asyncio.run(_steps(url, seconds))
    return done / elapsed


def measure(db: str, workers: int, folder: Path, seconds: float, env: dict[str, str]) -> dict:
    with serve(db, workers, folder, **env) as url:
        return {
            "execute_calls_per_s": execute_rate(url, seconds),
            "ap_steps_per_s": step_rate(url, seconds),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="each load's length")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = parser.parse_args()
    server = _start_server()
    folder = Path(tempfile.mkdtemp())
    rows: dict[str, Any] = {}
    try:
        with model_server(MODEL_DELAY_MS) as model_url:
            env = {"OPENAI_BASE_URL": model_url, "OPENAI_API_KEY": "bench-not-a-key"}
            rows["sqlite, 1 process"] = measure(
                str(folder / "served.db"), 1, folder, args.seconds, env
            )
            for workers in (1, 2):
                db = f"{server.url}?schema=bench_{workers}"
                rows[f"postgres, {workers} process{'es' if workers > 1 else ''}"] = measure(
                    db, workers, folder, args.seconds, env
                )
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
    results = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "clients": CLIENTS,
        "seconds": args.seconds,
        "model_delay_ms": MODEL_DELAY_MS,
        "rows": rows,
    }
    _print(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


def _print(results: dict) -> None:
    rows = results["rows"]
    print(f"\nstepwise serve, {results['clients']} clients, {results['machine']['cpus']} cores")
    print(f"  {'':22} {'Execute calls/s':>16} {'AP steps/s':>11}")
    for name, row in rows.items():
        print(f"  {name:22} {row['execute_calls_per_s']:16.0f} {row['ap_steps_per_s']:11.0f}")
    one, two = rows["postgres, 1 process"], rows["postgres, 2 processes"]
    for key, label in (("execute_calls_per_s", "Execute"), ("ap_steps_per_s", "AP steps")):
        print(f"  {label}: 2 processes / 1 = {two[key] / one[key]:.2f}x  (goal >= {GOAL}x)")


if __name__ == "__main__":
    main()
