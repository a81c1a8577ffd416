"""Parallel plans: the master agent with 8 independent items, each model call taking 200 ms.

The same plan runs once with `ParallelAgentRunner.run_steps_in_queue` (waves of ready steps)
and once one step at a time. The headline ratio is over the 8 plan items; the whole task also
has a planning call and an aggregating call that cannot overlap anything (200 ms each), so its
ratio is bounded by (2 + 8) / (2 + 1) = 3.3.
"""

from __future__ import annotations

import asyncio
import json
import time

from agent_core import AgentRunner, ParallelAgentRunner
from agent_core.llms import FunctionLLM
from agent_core.workers import CustomSimpleAgentWorker, PlannerAgentWorker, SubAgent

ITEMS = 8
CALL_SECONDS = 0.2
PLAN = {
    "plan": [
        {"id": f"item{i}", "agent": "writer", "prompt": f"Write part {i}.", "depends_on": []}
        for i in range(ITEMS)
    ]
}


async def _slow_model(messages, tools) -> str:
    await asyncio.sleep(CALL_SECONDS)
    system = messages[0].content if messages else ""
    return json.dumps(PLAN) if "planner" in system else "All parts, combined."


class SlowWriter(CustomSimpleAgentWorker):
    """A sub-agent whose one step is one 200 ms model call."""

    async def _arun_step(self, state, task, input):
        assert self.llm is not None
        reply = await self.llm.chat([])
        return reply.text, True


def _planner() -> PlannerAgentWorker:
    llm = FunctionLLM(_slow_model)
    writer = SubAgent("Writes one part.", SlowWriter(llm=llm))
    return PlannerAgentWorker(llm, {"writer": writer})


def _timed(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def _run_parallel() -> tuple[float, float]:
    agent = ParallelAgentRunner(_planner(), max_concurrency=ITEMS)
    task_id = agent.create_task("Write eight parts.").task_id
    plan = _timed(lambda: agent.run_steps_in_queue(task_id))
    items = _timed(lambda: agent.run_steps_in_queue(task_id))
    rest = _timed(lambda: agent.run_steps_in_queue(task_id))
    return items, plan + items + rest


def _run_sequential() -> tuple[float, float]:
    agent = AgentRunner(_planner())
    task_id = agent.create_task("Write eight parts.").task_id
    plan = _timed(lambda: agent.run_step(task_id))
    items = _timed(lambda: [agent.run_step(task_id) for _ in range(ITEMS)])
    rest = _timed(lambda: agent.run_step(task_id))
    return items, plan + items + rest


def measure() -> dict:
    """Wall seconds of the 8 items and of the whole task, in parallel and one at a time."""
    (par_items, par_task), (seq_items, seq_task) = _run_parallel(), _run_sequential()
    return {
        "items": ITEMS,
        "call_seconds": CALL_SECONDS,
        "items_parallel_s": par_items,
        "items_sequential_s": seq_items,
        "items_speedup": seq_items / par_items,
        "task_parallel_s": par_task,
        "task_sequential_s": seq_task,
        "task_speedup": seq_task / par_task,
    }


if __name__ == "__main__":
    print(measure())
