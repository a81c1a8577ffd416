"""`make bench`: every benchmark in one run, side by side, printed as a table with ratios and
written to bench/results/latest.json.

The LlamaIndex and LangGraph anchors run in their own environment (bench/.venv, pinned in
bench/anchors/requirements.txt), created here on first use, so they never enter the app's
lock. Numbers on a shared 2-core machine are noisy: compare ratios within one run.
"""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import parallel_plans, sqlite_floor, storage, ui

BENCH = Path(__file__).resolve().parent
ANCHOR_PYTHON = BENCH / ".venv" / "bin" / "python"
RESULTS = BENCH / "results" / "latest.json"
KS = (10, 100)
TASKS = 7
ROUNDS = 5
# Stepwise's first rows use the tool as users build it (a sync tool in a worker thread); the
# `-inline` row is the opt-out, `blocking=False`.
FRAMEWORKS = (
    "stepwise-sqlite",
    "stepwise-memory",
    "stepwise-sqlite-inline",
    "llamaindex",
    "langgraph",
)


def _ensure_anchor_env() -> None:
    if ANCHOR_PYTHON.exists():
        return
    print("creating bench/.venv for the LlamaIndex and LangGraph anchors…", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(BENCH / ".venv")], check=True)
    requirements = BENCH / "anchors" / "requirements.txt"
    subprocess.run(
        [str(ANCHOR_PYTHON), "-m", "pip", "install", "--quiet", "-r", str(requirements)],
        check=True,
    )


def _measure_once(framework: str, k: int) -> dict:
    """One framework's tasks, in a fresh process of its own (as every framework gets)."""
    if framework.startswith("stepwise-"):
        store, _, inline = framework.removeprefix("stepwise-").partition("-")
        command = [sys.executable, "-m", "bench.stepwise_react", store]
        command += ["--inline-tool"] if inline else []
    else:
        command = [str(ANCHOR_PYTHON), str(BENCH / "anchors" / "run_anchor.py"), framework]
    command += ["--k", str(k), "--tasks", str(TASKS)]
    done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=BENCH.parent)
    return json.loads(done.stdout.strip().splitlines()[-1])


def runner_overhead() -> list[dict]:
    """µs per step for every framework and K, measured in this one run.

    The frameworks take turns, ROUNDS times over, and each reports the median of all its
    tasks: a slow spell of this shared machine then lands on every framework, not on one.
    """
    _ensure_anchor_env()
    rows: dict[tuple[str, int], dict] = {}
    for _ in range(ROUNDS):
        for k in KS:
            for framework in FRAMEWORKS:
                result = _measure_once(framework, k)
                row = rows.setdefault((framework, k), {**result, "samples_us": []})
                row["samples_us"] += result["samples_us"]
    for row in rows.values():
        row["us_per_step_median"] = statistics.median(row["samples_us"])
    return list(rows.values())


def _overhead_table(rows: list[dict]) -> list[str]:
    by = {(r["framework"], r["k"]): r["us_per_step_median"] for r in rows}
    ours = {k: by[("stepwise-sqlite", k)] for k in KS}
    lines = [
        f"Runner overhead (µs per step, median of {ROUNDS} x {TASKS} tasks; "
        "ratio = theirs / Stepwise+SQLite)"
    ]
    lines.append(f"  {'framework':24} {'K=10':>9} {'K=100':>9} {'K100/K10':>9} {'ratio@10':>9}")
    for name in dict.fromkeys(r["framework"] for r in rows):
        ten, hundred = by[(name, 10)], by[(name, 100)]
        lines.append(
            f"  {name:24} {ten:9.0f} {hundred:9.0f} {hundred / ten:9.2f} {ten / ours[10]:8.1f}x"
        )
    return lines


def _goals(by: dict[tuple[str, int], float], floor_us: float) -> str:
    """Issue 14's goals beside what this run measured (ratios at K = 10)."""
    sqlite, memory = by[("stepwise-sqlite", 10)], by[("stepwise-memory", 10)]
    llama, lang = by[("llamaindex", 10)], by[("langgraph", 10)]
    growth = by[("stepwise-sqlite", 100)] / sqlite
    return (
        f"Goals: LlamaIndex / Stepwise+SQLite {llama / sqlite:.1f}x (>= 2x); "
        f"LlamaIndex / Stepwise in memory {llama / memory:.1f}x (>= 4x); "
        f"LangGraph / Stepwise+SQLite {lang / sqlite:.1f}x (>= 10x); "
        f"K=100 / K=10 {growth:.2f} (<= 1.2); durable step / SQLite floor "
        f"{sqlite / floor_us:.1f}x (<= 2x)"
    )


def main() -> None:
    """Run everything, print the table, write the JSON."""
    started = time.time()
    results = {
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
        "runner_overhead": runner_overhead(),
        "parallel_plans": parallel_plans.measure(),
        "storage": storage.measure(),
        "sqlite_floor": sqlite_floor.measure(),
        "ui": ui.measure(),
    }
    results["seconds"] = time.time() - started
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    p, s, f = results["parallel_plans"], results["storage"], results["sqlite_floor"]
    by = {(r["framework"], r["k"]): r["us_per_step_median"] for r in results["runner_overhead"]}
    lines = [
        *_overhead_table(results["runner_overhead"]),
        f"SQLite floor: the step commits of a K=10 task replayed as raw SQL (no framework): "
        f"{f['replayed_commit_us_median']:.0f} µs per step = LlamaIndex's whole step / "
        f"{by[('llamaindex', 10)] / f['replayed_commit_us_median']:.1f}",
        _goals(by, f["replayed_commit_us_median"]),
        "",
        f"Parallel plans: 8 items x 200 ms: {p['items_parallel_s']:.2f} s in parallel vs "
        f"{p['items_sequential_s']:.2f} s one at a time = {p['items_speedup']:.1f}x "
        f"(whole task incl. plan and aggregate calls: {p['task_speedup']:.1f}x)",
        f"Storage: {s['commit_ms_median']:.3f} ms per committed step (median, mean "
        f"{s['commit_ms_mean']:.3f}); {s['steps_per_second']:.0f} steps/s through the runner; "
        f"{s['bytes_per_1000_steps'] / 1e6:.2f} MB per 1,000 steps; list_tasks with "
        f"{s['tasks']:,} tasks: {s['list_tasks_ms_median']:.0f} ms",
        "UI (stepper rerun, AppTest): "
        + "; ".join(
            f"{u['steps']} steps {u['rerun_ms_median']:.0f} ms, DAG {u['dag_bytes'] / 1e3:.0f} kB"
            for u in results["ui"]
        ),
        f"\nwritten to {RESULTS.relative_to(BENCH.parent)}",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
