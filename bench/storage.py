"""Storage: committed steps per second to SQLite, bytes per 1,000 steps, and `list_tasks`
latency with 10,000 tasks in the store."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from agent_core import AgentRunner
from agent_core.store import SQLiteStore
from agent_core.store.base import MemoryWrite, TaskChange
from agent_core.types import Task, TaskState, TaskStep
from agent_core.workers import CustomSimpleAgentWorker

STEPS = 1_000
TASKS = 10_000


class Counter(CustomSimpleAgentWorker):
    """Never finishes: each step counts one more (a run as long as we like)."""

    def _run_step(self, state, task, input):
        state["n"] = state.get("n", 0) + 1
        return f"step {state['n']}", False

    async def _arun_step(self, state, task, input):
        return self._run_step(state, task, input)


def _db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def steps_to_sqlite(folder: Path) -> dict:
    """Commit STEPS steps through the runner; time per commit and bytes per 1,000 steps."""
    path = folder / "steps.db"
    store = SQLiteStore(path)
    commits: list[float] = []
    original = store.commit

    def timed(change: TaskChange) -> None:
        started = time.perf_counter()
        original(change)
        commits.append(time.perf_counter() - started)

    store.commit = timed  # type: ignore[method-assign]
    agent = AgentRunner(Counter(), store=store)
    task = agent.create_task("count")
    before = _db_bytes(path)
    started = time.perf_counter()
    for _ in range(STEPS):
        agent.run_step(task.task_id)
    elapsed = time.perf_counter() - started
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return {
        "steps": STEPS,
        "commit_ms_median": statistics.median(commits) * 1e3,
        "commit_ms_mean": statistics.mean(commits) * 1e3,
        "steps_per_second": STEPS / elapsed,
        "bytes_per_1000_steps": (_db_bytes(path) - before) * 1_000 / STEPS,
    }


def list_tasks_latency(folder: Path) -> dict:
    """Fill a store with TASKS tasks (directly, one transaction each) and time list_tasks."""
    store = SQLiteStore(folder / "tasks.db")
    for i in range(TASKS):
        task = Task(input=f"task {i}")
        step = TaskStep(task_id=task.task_id, input=task.input)
        state = TaskState(task=task, steps={step.step_id: step}, queue=[step.step_id])
        state.set_extra_state_json("{}")
        state.version = 1
        store.commit(
            TaskChange(state=state, base_version=None, steps=[step], memory=MemoryWrite(keep=0))
        )
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        listed = store.list_tasks()
        samples.append(time.perf_counter() - started)
    assert len(listed) == TASKS
    return {"tasks": TASKS, "list_tasks_ms_median": statistics.median(samples) * 1e3}


def measure() -> dict:
    """Both storage measurements, in a temporary folder."""
    with tempfile.TemporaryDirectory() as folder:
        return {**steps_to_sqlite(Path(folder)), **list_tasks_latency(Path(folder))}


if __name__ == "__main__":
    print(measure())
