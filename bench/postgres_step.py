"""One `run_step` on `PostgresStore` beside `SQLiteStore`: µs per step, and per commit.

The demo's arithmetic agent (ReAct, the demo model, the real arithmetic tools) runs TASKS
tasks of three steps each, one `run_step` at a time, on each store; the commit inside each
step is timed apart. PostgreSQL is a real server on loopback, started here with its own
durability settings (fsync on), in two modes: `synchronous_commit=on` (each commit waits for
its WAL flush) and `off` (a crash of the server may lose the last moments of commits, never
corrupts: the guarantee of SQLite's WAL with `synchronous=NORMAL`, the store's setting).

    .venv/bin/python -m bench.postgres_step [--tasks 200] [--url postgresql://...]

Prints one JSON object. Timing only: nothing here is a pass/fail bound.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from psycopg import sql

from agent_core.demos import SCENARIOS
from agent_core.store import SQLiteStore, Store
from agent_core.store.base import TaskChange

STEPS_PER_TASK = 3


def _timed_commits(store: Store) -> list[float]:
    """Wrap the store's commit to record each one's seconds."""
    seconds: list[float] = []
    original = store.commit

    def commit(change: TaskChange) -> None:
        started = time.perf_counter()
        original(change)
        seconds.append(time.perf_counter() - started)

    store.commit = commit  # type: ignore[method-assign]
    return seconds


class _Bench:
    """One store, the demo's arithmetic agent on it, and the seconds measured so far."""

    def __init__(self, store: Store) -> None:
        self.scenario = SCENARIOS["arithmetic"]
        self.workspace = tempfile.mkdtemp(prefix="stepwise-bench-ws-")
        spec = self.scenario.spec.model_copy(update={"workspace": self.workspace})
        self.runner = spec.build_runner(store=store)
        for _ in range(5):  # Warm up: imports, prepared statements, the pool.
            _run_task(self.runner, self.scenario.task)
        self.commits = _timed_commits(store)
        self.steps: list[float] = []

    def run(self, tasks: int) -> None:
        for _ in range(tasks):
            self.steps.extend(_run_task(self.runner, self.scenario.task))

    def result(self) -> dict[str, Any]:
        shutil.rmtree(self.workspace, ignore_errors=True)
        return {
            "steps": len(self.steps),
            "step_us_median": round(statistics.median(self.steps) * 1e6),
            "step_us_mean": round(statistics.mean(self.steps) * 1e6),
            "commit_us_median": round(statistics.median(self.commits) * 1e6),
            "commits_per_step": round(len(self.commits) / len(self.steps), 2),
        }


def _run_task(runner: Any, prompt: str) -> list[float]:
    task_id = runner.create_task(prompt).task_id
    seconds, last = [], False
    for _ in range(STEPS_PER_TASK):
        started = time.perf_counter()
        last = runner.run_step(task_id).is_last
        seconds.append(time.perf_counter() - started)
    assert last, "the demo's arithmetic task takes three steps"
    return seconds


def _execute(url: str, statement: Any) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement)


def _synchronous_commit(value: str) -> Callable[[str], None]:
    def prepare(url: str) -> None:
        database = url.rsplit("/", 1)[1]
        statement = sql.SQL("ALTER DATABASE {} SET synchronous_commit = {}")
        _execute(url, statement.format(sql.Identifier(database), sql.Literal(value)))

    return prepare


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5, help="the stores take turns")
    parser.add_argument("--url", help="a PostgreSQL database (default: start one here)")
    args = parser.parse_args()

    from agent_core.store.postgres import PostgresStore

    folder = Path(tempfile.mkdtemp(prefix="stepwise-bench-"))
    server = None
    stores: dict[str, Store] = {}
    try:
        url = args.url
        if url is None:
            server = _start_server()
            url = server.url
        stores["sqlite"] = SQLiteStore(folder / "bench.db")
        # A session setting read at connect: each store's connections keep the value set
        # before the store was made.
        for value in ("on", "off"):
            _synchronous_commit(value)(url)
            stores[f"postgres_synchronous_commit_{value}"] = PostgresStore(
                url, schema=f"bench_{value}_{uuid.uuid4().hex[:6]}"
            )
        benches = {name: _Bench(store) for name, store in stores.items()}
        for _ in range(args.rounds):  # Taking turns spreads the machine's other load evenly.
            for bench in benches.values():
                bench.run(max(args.tasks // args.rounds, 1))
        results = {"tasks": args.tasks, **{n: b.result() for n, b in benches.items()}}
    finally:
        for store in stores.values():
            if isinstance(store, PostgresStore):
                drop = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE")
                _execute(store.url, drop.format(sql.Identifier(store.schema)))
            store.close()
        if server is not None:
            server.stop()
            shutil.rmtree(server.dir, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(results, indent=2))


def _start_server() -> Any:
    """Debian's PostgreSQL on a free loopback port, fsync on (the tests' server, durable)."""
    from tests._postgres_server import PostgresServer, _binaries, _free_port, _own_folder

    server = PostgresServer(_binaries(), _own_folder(), _free_port(), durable=True)
    server.init()
    server.start()
    server.create_database()
    return server


if __name__ == "__main__":
    main()
