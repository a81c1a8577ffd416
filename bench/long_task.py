"""Long tasks (issue 33): one demo ReAct task per size on SQLite, and what its length costs.

For each size (1,000 / 5,000 / 20,000 steps by default; `--sizes 1000,2000` for a quick run):
the time per step at the start and at the end, the store's size on disk, loading the task in a
fresh store object, and forking it at the middle. Each figure is printed beside the issue's
goal; `--before FILE` (a results file of an older run, e.g. made on `git stash`ed code) adds
the ratios old / new (by default the run before issue 33, kept in the results folder).
Results go to bench/results/long_task.json.

    .venv/bin/python -m bench.long_task --sizes 1000,5000,20000
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_core.llms import ScriptedLLM
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore

RESULTS = Path(__file__).resolve().parent / "results" / "long_task.json"
BEFORE = RESULTS.with_name("long_task_before.json")
"""The same bench on the code before issue 33 (76fd1b1: whole prompts stored per step)."""
SIZES = (1_000, 5_000, 20_000)
WINDOW = 100
"""Steps averaged for 'time per step' at the start and at the end of a run."""
TASK = "Add 1 and 2, again and again."
ACTION = 'Thought: again.\nAction: add\nAction Input: {"a": 1, "b": 2}'
GOALS = {"disk_mb": 300.0, "load_s": 1.0, "fork_s": 2.0, "last_over_first": 1.5}


def _db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def _runner(store: SQLiteStore, folder: Path, steps: int) -> Any:
    spec = AgentSpec(
        name="demo-react",
        worker="react",
        tools=("arithmetic",),
        max_iterations=1000,  # The spec's bound; the task's own is raised below.
        workspace=str(folder / "workspaces"),
    )
    runner = spec.build_runner(store=store)
    runner.agent_worker.llm = ScriptedLLM([ACTION] * (steps + 10))
    return runner


def _step_times(runner: Any, task_id: str, steps: int) -> list[float]:
    times = []
    for _ in range(steps):
        started = time.perf_counter()
        runner.run_step(task_id)
        times.append(time.perf_counter() - started)
    return times


def measure(steps: int, folder: Path) -> dict[str, Any]:
    """Build one task of `steps` steps and time what its length costs."""
    path = folder / f"long-{steps}.db"
    store = SQLiteStore(path)
    runner = _runner(store, folder, steps)
    task_id = runner.create_task(TASK).task_id
    runner.set_limits(task_id, max_iterations=steps + 10)
    times = _step_times(runner, task_id, steps)
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    disk = _db_bytes(path)
    store.close()
    fresh = SQLiteStore(path)
    started = time.perf_counter()
    state = fresh.load_task(task_id)
    load_s = time.perf_counter() - started
    assert state is not None and len(state.completed) == steps
    middle = state.completed[steps // 2]
    runner = _runner(fresh, folder, steps)
    started = time.perf_counter()
    runner.fork_task(task_id, middle)
    fork_s = time.perf_counter() - started
    fresh.close()
    window = min(WINDOW, max(steps // 10, 1))
    first = statistics.mean(times[:window]) * 1e3
    last = statistics.mean(times[-window:]) * 1e3
    return {
        "steps": steps,
        "first_step_ms": round(first, 3),
        "last_step_ms": round(last, 3),
        "last_over_first": round(last / first, 2),
        "disk_mb": round(disk / 1e6, 2),
        "load_s": round(load_s, 4),
        "fork_s": round(fork_s, 4),
    }


def _line(row: dict[str, Any], before: dict[str, Any] | None) -> str:
    parts = [f"{row['steps']:>6} steps:"]
    for key, unit in (
        ("first_step_ms", "ms"),
        ("last_step_ms", "ms"),
        ("last_over_first", "x"),
        ("disk_mb", "MB"),
        ("load_s", "s"),
        ("fork_s", "s"),
    ):
        text = f"{key} {row[key]}{unit}"
        if key in GOALS:
            text += f" (goal <= {GOALS[key]})"
        if before and before.get(key):
            text += f" [before {before[key]}, {before[key] / max(row[key], 1e-9):.1f}x]"
        parts.append(text)
    return "\n    ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument(
        "--before",
        type=Path,
        default=BEFORE if BEFORE.exists() else None,
        help="an older results file to compare with (default: bench/results/long_task_before.json)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    before = {}
    if args.before is not None:
        before = {r["steps"]: r for r in json.loads(args.before.read_text())["rows"]}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for steps in sizes:
            row = measure(steps, Path(folder))
            rows.append(row)
            print(_line(row, before.get(steps)), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {"machine": platform.platform(), "goals": GOALS, "rows": rows}
    if before:
        result["before"] = list(before.values())
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
