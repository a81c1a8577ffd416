"""What idle event streams cost the task they watch, and every other client of the server.

A real `stepwise serve` process (default options, SQLite, the instant agent of
`bench/_server_agent.py`) runs Agent Protocol steps of one task over a keep-alive client,
while a second client asks `/health` every few milliseconds. Then 1,000 clients subscribe to
that task's event stream (`GET /stepwise/v1/tasks/{id}/events`, raw sockets that read the
`subscribed` event and then nothing) and the same steps and `/health` calls run again. At the
end each stream is read: how many received the steps' events.

Each round
uses fresh tasks (see `measure`), alone and watched in turn, so drift hits both alike.

The issue's goals (with 1,000 idle streams the task's step time within 1.2x of none, and
`/health` p50 under 50 ms) are printed beside the figures; nothing asserts them. Results go to
bench/results/event_streams.json. `python -m bench.event_streams --quick` runs two rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx

from bench.server_speed import stepwise_server

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "event_streams.json"
STREAMS = 1_000
STEPS = 60
"""Steps of each task: its events stay small enough for an unread stream to hold them all."""
ROUNDS = 8
HEALTH_EVERY_S = 0.005
TOLD_WITHIN_S = 10.0


def _subscribe(port: int, task_id: str) -> socket.socket:
    """An event stream on a raw socket, read up to its `subscribed` event."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    request = f"GET /stepwise/v1/tasks/{task_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    sock.sendall(request.encode())
    received = b""
    while b"event: subscribed" not in received:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("an event stream closed before it subscribed")
        received += chunk
    return sock


def _received_completion(sock: socket.socket, deadline: float) -> bool:
    """Whether the stream brings a `step_completed` event before `deadline` (monotonic)."""
    received = b""
    while b"event: step_completed" not in received:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        sock.settimeout(left)
        try:
            chunk = sock.recv(1 << 20)
        except TimeoutError:
            return False
        if not chunk:
            return False
        received = received[-64:] + chunk  # The marker may straddle two reads.
    return True


class _HealthProbe:
    """Another client: `/health` every `HEALTH_EVERY_S`, its latencies kept, until stopped."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.latencies: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as client:
            while not self._stop.wait(HEALTH_EVERY_S):
                started = time.perf_counter()
                client.get("/health").raise_for_status()
                self.latencies.append((time.perf_counter() - started) * 1000)


def _steps(client: httpx.Client, task_id: str, steps: int) -> list[float]:
    """Milliseconds per Agent Protocol step of `task_id`."""
    times = []
    for _ in range(steps):
        started = time.perf_counter()
        client.post(f"/ap/v1/agent/tasks/{task_id}/steps", json={}).raise_for_status()
        times.append((time.perf_counter() - started) * 1000)
    return times


def _new_task(client: httpx.Client) -> str:
    body = {"input": "Add 1 and 2, again and again.", "additional_input": {"agent": "bench_adder"}}
    return client.post("/ap/v1/agent/tasks", json=body).json()["task_id"]


def _summary(times: list[float], health: list[float]) -> dict[str, float]:
    health = sorted(health)
    return {
        "steps": len(times),
        "step_ms_p50": statistics.median(times),
        "step_ms_mean": statistics.fmean(times),
        "health_calls": len(health),
        "health_ms_p50": statistics.median(health),
        "health_ms_p99": health[min(len(health) - 1, int(0.99 * len(health)))],
    }


def measure(streams: int, rounds: int) -> dict:
    """Rounds of a fresh task stepped alone, then another with `streams` idle streams on it.

    A fresh task each round keeps every round's steps alike: a step's events carry the
    conversation so far, so a long task's events grow, and so does what a stream holds.
    """
    times: dict[str, list[float]] = {"alone": [], "watched": []}
    health: dict[str, list[float]] = {"alone": [], "watched": []}
    told = 0
    with tempfile.TemporaryDirectory() as tmp, stepwise_server(Path(tmp)) as url:
        port = int(url.rsplit(":", 1)[1])
        with httpx.Client(base_url=url, timeout=120) as client:
            _steps(client, _new_task(client), 5)  # Warm-up: the runner is built.
            for _ in range(rounds):
                with _HealthProbe(url) as probe:
                    times["alone"] += _steps(client, _new_task(client), STEPS)
                health["alone"] += probe.latencies
                task_id = _new_task(client)
                sockets = [_subscribe(port, task_id) for _ in range(streams)]
                try:
                    with _HealthProbe(url) as probe:
                        times["watched"] += _steps(client, task_id, STEPS)
                    health["watched"] += probe.latencies
                    # Batched fan-outs may hold the last events back up to MAX_BATCH_S.
                    deadline = time.monotonic() + TOLD_WITHIN_S
                    told += sum(_received_completion(sock, deadline) for sock in sockets)
                finally:
                    for sock in sockets:
                        sock.close()
    return {
        "alone": _summary(times["alone"], health["alone"]),
        "watched": _summary(times["watched"], health["watched"]),
        "streams_told": told,
    }


def main() -> None:
    """Measure, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps")
    parser.add_argument("--streams", type=int, default=STREAMS, help="idle streams to open")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = parser.parse_args()
    rounds = 2 if args.quick else ROUNDS
    figures = measure(args.streams, rounds)
    alone, watched = figures["alone"], figures["watched"]
    results = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "streams": args.streams,
        "rounds": rounds,
        **figures,
        "step_ratio_p50": watched["step_ms_p50"] / alone["step_ms_p50"],
        "health_ratio_p50": watched["health_ms_p50"] / alone["health_ms_p50"],
    }
    _print(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


def _print(r: dict) -> None:
    alone, watched, streams = r["alone"], r["watched"], r["streams"]
    print(f"\nIdle event streams on one task (stepwise serve, SQLite), {r['rounds']} rounds")
    print(f"  each round: a task stepped {STEPS} times alone, then one with {streams:,} streams")
    print(f"  {'':28}{'no streams':>12}{f'{streams:,} streams':>16}{'ratio':>9}")
    for key, label in (
        ("step_ms_p50", "step of the task, p50 ms"),
        ("step_ms_mean", "step of the task, mean ms"),
        ("health_ms_p50", "/health, p50 ms"),
        ("health_ms_p99", "/health, p99 ms"),
    ):
        ratio = watched[key] / alone[key]
        print(f"  {label:28}{alone[key]:12.2f}{watched[key]:16.2f}{ratio:8.2f}x")
    opened = streams * r["rounds"]
    print(f"  streams that received the steps' events: {r['streams_told']:,} of {opened:,}")
    step_ok = r["step_ratio_p50"] <= 1.2
    health_ok = watched["health_ms_p50"] < 50
    print(f"  goal: step within 1.2x of none: {r['step_ratio_p50']:.2f}x ({_word(step_ok)})")
    print(f"  goal: /health p50 < 50 ms: {watched['health_ms_p50']:.2f} ms ({_word(health_ok)})")


def _word(ok: bool) -> str:
    return "met" if ok else "NOT met"


if __name__ == "__main__":
    main()
