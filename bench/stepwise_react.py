"""Stepwise's side of the runner-overhead benchmark: the scripted ReAct trajectory.

One `add` tool, K tool rounds and an answer, on a zero-latency scripted model; timed from
after `create_task` to the last step, divided by the K + 1 steps (as the anchors do).
`make bench` runs it in a process of its own, as it runs each anchor, so no framework pays
for another's imports (a bigger heap makes every garbage collection slower):

    .venv/bin/python -m bench.stepwise_react sqlite --k 10 --tasks 7

`--inline-tool` measures the opt-out, `FunctionTool.from_defaults(fn=add, blocking=False)`,
which runs the sync tool on the runtime loop instead of a worker thread.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.store import InMemoryStore, SQLiteStore
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker

ACTION = 'Thought: I need to add.\nAction: add\nAction Input: {"a": 1, "b": 2}'
ANSWER = "Thought: I can answer without using any more tools.\nAnswer: 3"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# The default, as users build tools: a sync tool runs in a worker thread (blocking=True).
ADD_TOOL = FunctionTool.from_defaults(fn=add)
# The opt-out, for a quick sync tool that may run on the loop: its own row in the table.
INLINE_ADD_TOOL = FunctionTool.from_defaults(fn=add, blocking=False)


def one_task(k: int, store, *, tool: FunctionTool = ADD_TOOL) -> float:
    """Seconds per step for one task of K tool rounds and an answer."""
    llm = ScriptedLLM([ACTION] * k + [ANSWER])
    agent = AgentRunner(ReActAgentWorker([tool], llm, max_iterations=k + 5), store=store)
    task = agent.create_task("What is 1 + 2, again and again?")
    started = time.perf_counter()
    steps = 0
    while True:
        steps += 1
        if agent.run_step(task.task_id).is_last:
            break
    elapsed = time.perf_counter() - started
    assert steps == k + 1 and llm.exhausted
    return elapsed / steps


def measure(k: int, *, store_kind: str, tasks: int = 7, inline_tool: bool = False) -> dict:
    """Median µs per step over `tasks` tasks, after one warm-up task."""
    tool = INLINE_ADD_TOOL if inline_tool else ADD_TOOL
    with tempfile.TemporaryDirectory() as folder:
        store = (
            SQLiteStore(Path(folder) / "bench.db") if store_kind == "sqlite" else InMemoryStore()
        )
        one_task(k, store, tool=tool)
        samples = [one_task(k, store, tool=tool) * 1e6 for _ in range(tasks)]
    return {
        "framework": f"stepwise-{store_kind}" + ("-inline" if inline_tool else ""),
        "k": k,
        "us_per_step_median": statistics.median(samples),
        "samples_us": samples,
    }


def main(argv: list[str] | None = None) -> None:
    """Print one JSON result line, as the anchors' `run_anchor.py` does."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("store", choices=("sqlite", "memory"))
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=7)
    parser.add_argument("--inline-tool", action="store_true", help="blocking=False (opt-out)")
    args = parser.parse_args(argv)
    result = measure(args.k, store_kind=args.store, tasks=args.tasks, inline_tool=args.inline_tool)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
