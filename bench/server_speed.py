"""What HTTP costs, as users run `stepwise serve` (default options, a real uvicorn process).

1. An Agent Protocol step (`POST /ap/v1/agent/tasks/{id}/steps`, keep-alive client) against
   `run_step` in process, on the same kind of store (SQLite) and the same instant agent
   (`bench/_server_agent.py`, registered with `--agent` as a user would): the milliseconds
   HTTP adds per step, at the median.
2. `POST /v1/agent/execute` with 50 concurrent keep-alive clients (`bench/_load.py`) against
   a loopback OpenAI-compatible model that answers in 50 ms: calls per second (the ideal is
   50 / 0.05 s = 1,000) and p50 / p99 latency. The same clients against the model alone, in
   the same run, show what the harness itself reaches on this machine.

The issue's goals (HTTP adds at most 2 ms per step at p50; at least 90% of the ideal
throughput on a 2-core machine) are printed beside the figures; nothing asserts them. The
server, the model and the clients share this machine's cores. Results go to
bench/results/server_speed.json. `python -m bench.server_speed --quick` runs a shorter load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from agent_core import AgentRunner
from agent_core.store import SQLiteStore
from bench._load import post_load
from bench._server_agent import build_agent

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "server_speed.json"
AGENT = "bench_adder=bench/_server_agent.py:build_agent"
STEPS = 300
CLIENTS = 50
MODEL_DELAY_MS = 50.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_up(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url} exited with {process.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not come up within 60 s")


_PIDS: dict[str, int] = {}
"""The process id behind each server URL this run started."""


@contextmanager
def _process(command: list[str], url: str, env: dict[str, str]) -> Iterator[str]:
    process = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    try:
        _wait_up(url, process)
        _PIDS[url.removesuffix("/health")] = process.pid
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds `pid` has used (Linux /proc; None elsewhere).

    CPU per call does not depend on what else the machine runs, as throughput does.
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def stepwise_server(folder: Path, **env_extra: str) -> Iterator[str]:
    """`stepwise serve` on a free port, its database in `folder`."""
    port = _free_port()
    env = {**os.environ, "STEPWISE_WORKSPACES": str(folder / "ws"), **env_extra}
    env.pop("STEPWISE_API_TOKEN", None)
    command = [sys.executable, "-m", "stepwise.cli", "serve", "--port", str(port)]
    command += ["--db", str(folder / "served.db"), "--agent", AGENT]
    with _process(command, f"http://127.0.0.1:{port}/health", env) as url:
        yield url.removesuffix("/health")


@contextmanager
def model_server(delay_ms: float) -> Iterator[str]:
    """The loopback model (`bench._model_server`); yields its OpenAI base URL."""
    port = _free_port()
    command = [sys.executable, "-m", "bench._model_server", str(port), str(delay_ms)]
    with _process(command, f"http://127.0.0.1:{port}/", dict(os.environ)) as url:
        yield f"{url}v1"


def in_process_steps(folder: Path, steps: int) -> list[float]:
    """Milliseconds per `run_step`, in this process, on a SQLite store."""
    runner = AgentRunner(build_agent(), store=SQLiteStore(folder / "in_process.db"))
    task_id = runner.create_task("Add 1 and 2, again and again.").task_id
    times = []
    for _ in range(steps):
        started = time.perf_counter()
        runner.run_step(task_id)
        times.append((time.perf_counter() - started) * 1000)
    return times


def http_steps(url: str, steps: int) -> list[float]:
    """Milliseconds per Agent Protocol step over one keep-alive connection."""
    with httpx.Client(base_url=url, timeout=60) as client:
        created = client.post(
            "/ap/v1/agent/tasks",
            json={
                "input": "Add 1 and 2, again and again.",
                "additional_input": {"agent": "bench_adder"},
            },
        )
        created.raise_for_status()
        task_id = created.json()["task_id"]
        times = []
        for _ in range(steps):
            started = time.perf_counter()
            client.post(f"/ap/v1/agent/tasks/{task_id}/steps", json={}).raise_for_status()
            times.append((time.perf_counter() - started) * 1000)
        return times


def _execute_load(
    url: str, clients: int, seconds: float
) -> tuple[list[float], int, float, float | None]:
    """The load's latencies, errors and elapsed seconds, and the server's CPU ms per call."""
    body = {
        "messages": [{"role": "user", "content": "What is (121 * 3) + 42?"}],
        "model": {"provider": "openai", "name": "bench-model"},
    }
    before = cpu_seconds(_PIDS[url])
    load = asyncio.run(post_load(f"{url}/v1/agent/execute", body, clients=clients, seconds=seconds))
    after = cpu_seconds(_PIDS[url])
    calls = len(load[0]) + load[1]
    cpu_ms = (after - before) * 1000 / calls if before is not None and after and calls else None
    return *load, cpu_ms


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    """Measure, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps, a 3 s load")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = parser.parse_args()
    steps, seconds = (60, 3.0) if args.quick else (STEPS, 10.0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        local = in_process_steps(folder, steps)
        with model_server(MODEL_DELAY_MS) as model_url:
            env = {"OPENAI_BASE_URL": model_url, "OPENAI_API_KEY": "bench-not-a-key"}
            model_only = asyncio.run(
                post_load(f"{model_url}/chat/completions", {}, clients=CLIENTS, seconds=seconds)
            )
            with stepwise_server(folder, **env) as url:
                remote = http_steps(url, steps)
                latencies, errors, elapsed, cpu_ms = _execute_load(url, CLIENTS, seconds)
    ideal = CLIENTS / (MODEL_DELAY_MS / 1000)
    throughput = len(latencies) / elapsed
    results = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "step_ms_in_process_p50": statistics.median(local),
        "step_ms_http_p50": statistics.median(remote),
        "http_adds_ms_p50": statistics.median(remote) - statistics.median(local),
        "execute_calls_per_s": throughput,
        "execute_ideal_calls_per_s": ideal,
        "execute_share_of_ideal": throughput / ideal,
        "execute_p50_ms": _percentile(latencies, 0.5) if latencies else None,
        "execute_p99_ms": _percentile(latencies, 0.99) if latencies else None,
        "execute_errors": errors,
        "execute_server_cpu_ms_per_call": cpu_ms,
        "harness_calls_per_s": len(model_only[0]) / model_only[2],
        "clients": CLIENTS,
        "model_delay_ms": MODEL_DELAY_MS,
    }
    _print(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


def _print(r: dict) -> None:
    print("\nHTTP cost (stepwise serve, uvicorn, SQLite), medians")
    print(f"  run_step in process        {r['step_ms_in_process_p50']:8.2f} ms/step")
    print(f"  Agent Protocol step (HTTP) {r['step_ms_http_p50']:8.2f} ms/step")
    print(f"  HTTP adds                  {r['http_adds_ms_p50']:8.2f} ms/step  (goal <= 2 ms)")
    ratio = r["step_ms_http_p50"] / r["step_ms_in_process_p50"]
    print(f"  ratio HTTP / in process    {ratio:8.2f}x")
    print(f"\nExecute Agent, {r['clients']} clients, model answers in {r['model_delay_ms']:g} ms")
    rate, ideal = r["execute_calls_per_s"], r["execute_ideal_calls_per_s"]
    share = r["execute_share_of_ideal"]
    print(f"  {rate:7.0f} calls/s of an ideal {ideal:.0f} = {share:.0%}  (goal >= 90%)")
    p50, p99, errors = r["execute_p50_ms"], r["execute_p99_ms"], r["execute_errors"]
    print(f"  p50 {p50:.1f} ms, p99 {p99:.1f} ms, errors {errors}")
    cpu_ms = r["execute_server_cpu_ms_per_call"]
    if cpu_ms:
        most = 1000 / cpu_ms
        print(f"  server CPU {cpu_ms:.2f} ms per call: one core serves at most {most:.0f}/s")
    harness = r["harness_calls_per_s"]
    print(f"  the same clients on the model alone: {harness:.0f} calls/s ({harness / ideal:.0%})")


if __name__ == "__main__":
    main()
