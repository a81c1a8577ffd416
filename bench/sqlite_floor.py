"""The floor under Stepwise+SQLite: the SQL of a bench task's step commits, replayed alone.

One ReAct task of the runner-overhead benchmark runs through `SQLiteStore` while SQLite's trace
hook records every statement with its values. Then the transactions that committed steps are
replayed, statement for statement and byte for byte (ids renamed per copy), on a fresh file
with the same pragmas: no runner, no pydantic, no worker. What that costs per step is what a
durable step costs on this machine before any framework code runs.
"""

from __future__ import annotations

import re
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.store import SQLiteStore
from agent_core.types import new_id
from agent_core.workers import ReActAgentWorker
from bench.stepwise_react import ACTION, ADD_TOOL, ANSWER

K = 10
COPIES = 60
_ID = re.compile(r"'([0-9a-f]{32})'")


def _record_task(path: Path) -> tuple[list[str], list[list[str]]]:
    """The statements that created the task, and each step's commit transaction."""
    store = SQLiteStore(path)
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    agent = AgentRunner(
        ReActAgentWorker([ADD_TOOL], ScriptedLLM([ACTION] * K + [ANSWER]), max_iterations=K + 5),
        store=store,
    )
    task_id = agent.create_task("What is 1 + 2, again and again?").task_id
    created = len(statements)
    while not agent.run_step(task_id).is_last:
        pass
    store._db.set_trace_callback(None)
    store.close()
    return statements[:created], _transactions(statements[created:])


def _transactions(statements: list[str]) -> list[list[str]]:
    groups: list[list[str]] = []
    current: list[str] | None = None
    for statement in statements:
        if statement == "BEGIN IMMEDIATE":
            current = [statement]
        elif current is not None:
            current.append(statement)
            if statement == "COMMIT":
                groups.append(current)
                current = None
    return groups


def _renamed(statements: list[str]) -> list[str]:
    """The same statements with every id replaced by a fresh one (consistently)."""
    fresh: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        return "'" + fresh.setdefault(match.group(1), new_id()) + "'"

    return [_ID.sub(rename, s) for s in statements]


def measure() -> dict:
    """µs per replayed step commit, against the runner's own µs per step on the same file."""
    with tempfile.TemporaryDirectory() as folder:
        created, commits = _record_task(Path(folder) / "recorded.db")
        path = Path(folder) / "replay.db"
        SQLiteStore(path).close()  # The same schema and pragmas as the app's store.
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA synchronous=NORMAL")
        per_task: list[float] = []
        recorded = [*created, *(s for t in commits for s in t)]
        for _ in range(COPIES):
            copy = _renamed(recorded)
            for statement in copy[: len(created)]:
                db.execute(statement)
            started = time.perf_counter()
            for statement in copy[len(created) :]:
                db.execute(statement)
            per_task.append((time.perf_counter() - started) / len(commits))
        db.close()
    return {
        "steps_per_task": len(commits),
        "statements_per_step": sum(map(len, commits)) / len(commits),
        "replayed_commit_us_median": statistics.median(per_task) * 1e6,
    }


if __name__ == "__main__":
    print(measure())
