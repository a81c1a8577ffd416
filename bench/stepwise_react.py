"""Stepwise's side of the runner-overhead benchmark: the scripted ReAct trajectory.

One `add` tool, K tool rounds and an answer, on a zero-latency scripted model; timed from
after `create_task` to the last step, divided by the K + 1 steps (as the anchors do).
"""

from __future__ import annotations

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


# Pure arithmetic runs inline, as LlamaIndex's sync run_step calls its tools.
ADD_TOOL = FunctionTool.from_defaults(fn=add, blocking=False)


def one_task(k: int, store) -> float:
    """Seconds per step for one task of K tool rounds and an answer."""
    llm = ScriptedLLM([ACTION] * k + [ANSWER])
    agent = AgentRunner(ReActAgentWorker([ADD_TOOL], llm, max_iterations=k + 5), store=store)
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


def measure(k: int, *, store_kind: str, tasks: int = 7) -> dict:
    """Median µs per step over `tasks` tasks, after one warm-up task."""
    with tempfile.TemporaryDirectory() as folder:
        store = (
            SQLiteStore(Path(folder) / "bench.db") if store_kind == "sqlite" else InMemoryStore()
        )
        one_task(k, store)
        samples = [one_task(k, store) * 1e6 for _ in range(tasks)]
    return {
        "framework": f"stepwise-{store_kind}",
        "k": k,
        "us_per_step_median": statistics.median(samples),
        "samples_us": samples,
    }


if __name__ == "__main__":
    for k in (10, 100):
        for kind in ("sqlite", "memory"):
            result = measure(k, store_kind=kind)
            print(f"{result['framework']:18} K={k:<4} {result['us_per_step_median']:8.0f} µs/step")
