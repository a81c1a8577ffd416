"""pydantic-ai alone against pydantic-ai stepped by Stepwise: milliseconds per step.

One agent, one `add` tool and pydantic-ai's `FunctionModel` answering at once: it calls `add`
`ROUNDS` times, one call per reply, then answers. A task is `2 * ROUNDS + 1` steps, a model
request per reply and a tool step per call, the nodes of pydantic-ai's graph that talk to the
world. The framework alone runs each task with `agent.run()`; Stepwise runs it through
`AgentRunner` (default options, `InMemoryStore`) one `run_step` at a time, each step a fresh
`Agent.iter()` on the task's JSON message history. Both sides run as many tasks as make
`steps` steps, after a warm-up task each.

    .venv/bin/python -m bench.adapter_pydantic_ai
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_core import AgentRunner
from agent_core.adapters import adapt
from agent_core.store import InMemoryStore

ROUNDS = 5
"""Tool rounds per task: each task is 2 * ROUNDS + 1 steps."""
STEPS_PER_TASK = 2 * ROUNDS + 1


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    calls = sum(isinstance(p, ToolCallPart) for m in messages for p in m.parts)
    if calls < ROUNDS:
        call = ToolCallPart("add", {"a": calls, "b": 1}, tool_call_id=f"c{calls}")
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(f"Added {ROUNDS} times.")])


def build_agent() -> Agent[None, str]:
    """The agent both sides run."""
    agent = Agent(FunctionModel(_reply), system_prompt="Add, one call at a time.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return agent


def _framework_alone(agent: Agent[None, str], tasks: int) -> float:
    async def all_tasks() -> None:
        for _ in range(tasks):
            result = await agent.run("Add five times.")
            assert result.output == f"Added {ROUNDS} times."

    started = time.perf_counter()
    asyncio.run(all_tasks())
    return time.perf_counter() - started


def _through_stepwise(runner: AgentRunner, tasks: int) -> float:
    started = time.perf_counter()
    for _ in range(tasks):
        task = runner.create_task("Add five times.")
        steps = 0
        while True:
            steps += 1
            if runner.run_step(task.task_id).is_last:
                break
        assert steps == STEPS_PER_TASK
    return time.perf_counter() - started


def run(steps: int = 200) -> dict[str, Any]:
    """Milliseconds per step, pydantic-ai alone and stepped by Stepwise."""
    tasks = max(1, math.ceil(steps / STEPS_PER_TASK))
    agent = build_agent()
    runner = AgentRunner(adapt(agent), store=InMemoryStore())
    _framework_alone(agent, 1)  # Warm-up: imports, schemas, first-call caches.
    _through_stepwise(runner, 1)
    alone = _framework_alone(agent, tasks)
    stepped = _through_stepwise(runner, tasks)
    done = tasks * STEPS_PER_TASK
    return {
        "framework": "pydantic-ai",
        "framework_ms_per_step": alone * 1000 / done,
        "stepwise_ms_per_step": stepped * 1000 / done,
        "steps": done,
    }


if __name__ == "__main__":
    figures = run()
    ratio = figures["stepwise_ms_per_step"] / figures["framework_ms_per_step"]
    print(
        f"pydantic-ai alone {figures['framework_ms_per_step']:.2f} ms/step, "
        f"through Stepwise {figures['stepwise_ms_per_step']:.2f} ms/step, "
        f"ratio {ratio:.2f}x ({figures['steps']} steps)"
    )
