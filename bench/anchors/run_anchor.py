"""Measure one anchor framework's per-step overhead and print one JSON line.

Usage (from the repository root, in the separate bench env):

    bench/.venv/bin/python bench/anchors/run_anchor.py llamaindex --k 10 --tasks 5
    bench/.venv/bin/python bench/anchors/run_anchor.py langgraph --k 100 --tasks 5

One warm-up task runs first and is discarded; then `--tasks` tasks are timed. A task has K + 1
steps, so each sample is the task's time divided by K + 1, in microseconds.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
from types import ModuleType

# Framework name -> module beside this file; imported lazily so one run loads one framework.
ANCHORS = {"llamaindex": "llamaindex_react", "langgraph": "langgraph_react"}


def _load(framework: str) -> ModuleType:
    module = ANCHORS[framework]
    if __package__:  # python -m bench.anchors.run_anchor
        return importlib.import_module(f".{module}", __package__)
    return importlib.import_module(module)  # python bench/anchors/run_anchor.py


def measure(framework: str, *, k: int, tasks: int) -> dict[str, object]:
    """Run one warm-up task and `tasks` timed tasks of K tool rounds; return the result record."""
    anchor = _load(framework)
    anchor.run_task(k)
    samples_us = [anchor.run_task(k) / 1000 / (k + 1) for _ in range(tasks)]
    return {
        "framework": framework,
        "k": k,
        "us_per_step_median": round(statistics.median(samples_us), 1),
        "samples_us": [round(s, 1) for s in samples_us],
        "version": anchor.VERSION,
    }


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, measure, and print the JSON record."""
    parser = argparse.ArgumentParser(
        description="Measure one anchor framework's per-step overhead."
    )
    parser.add_argument("framework", choices=sorted(ANCHORS))
    parser.add_argument("--k", type=int, default=10, help="tool rounds per task (default 10)")
    parser.add_argument("--tasks", type=int, default=5, help="timed tasks, at least 5 (default 5)")
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error(f"--k must be at least 1, got {args.k}")
    if args.tasks < 5:
        parser.error(f"--tasks must be at least 5 for a median, got {args.tasks}")
    print(json.dumps(measure(args.framework, k=args.k, tasks=args.tasks)))


if __name__ == "__main__":
    main()
