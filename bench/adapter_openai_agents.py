"""The OpenAI Agents SDK alone against the SDK stepped by Stepwise: milliseconds per step.

One agent, one `add` function tool, and an offline `Model` that answers at once from the input
list: it calls `add` `ROUNDS` times, one call per turn, then answers. A task is
`2 * ROUNDS + 1` steps: a model turn per reply and a tool step per call. The SDK alone runs
each task with `Runner.run()` (tracing off, as the adapter runs it); Stepwise runs it through
`AgentRunner` (default options, `InMemoryStore`) one `run_step` at a time, each step rebuilt
from the task's JSON input list. Both sides run as many tasks as make `steps` steps, after a
warm-up task each.

    .venv/bin/python -m bench.adapter_openai_agents
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, ModelResponse, RunConfig, Runner, Usage, function_tool
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from agent_core import AgentRunner
from agent_core.adapters import adapt
from agent_core.store import InMemoryStore

ROUNDS = 5
"""Tool rounds per task: each task is 2 * ROUNDS + 1 steps."""
STEPS_PER_TASK = 2 * ROUNDS + 1
ANSWER = f"Added {ROUNDS} times."


class AddingModel(Model):
    """Calls `add` until the input holds `ROUNDS` calls, then answers; no I/O, no waiting."""

    async def get_response(self, system_instructions, input, *args: Any, **kwargs: Any):
        calls = sum(1 for item in input if item.get("type") == "function_call")
        usage = Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15)
        if calls < ROUNDS:
            call = ResponseFunctionToolCall(
                type="function_call",
                call_id=f"c{calls}",
                name="add",
                arguments=f'{{"a": {calls}, "b": 1}}',
            )
            return ModelResponse(output=[call], usage=usage, response_id=None)
        text = ResponseOutputText(text=ANSWER, type="output_text", annotations=[])
        message = ResponseOutputMessage(
            id="m", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the bench does not stream")


def build_agent() -> Agent[Any]:
    """The agent both sides run."""

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return Agent(
        name="Adder", instructions="Add, one call at a time.", tools=[add], model=AddingModel()
    )


def _framework_alone(agent: Agent[Any], tasks: int) -> float:
    config = RunConfig(tracing_disabled=True)

    async def all_tasks() -> None:
        for _ in range(tasks):
            result = await Runner.run(agent, "Add five times.", run_config=config)
            assert result.final_output == ANSWER

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
            out = runner.run_step(task.task_id)
            if out.is_last:
                break
        assert steps == STEPS_PER_TASK and out.output == ANSWER
    return time.perf_counter() - started


def run(steps: int = 200) -> dict[str, Any]:
    """Milliseconds per step, the Agents SDK alone and stepped by Stepwise."""
    tasks = max(1, math.ceil(steps / STEPS_PER_TASK))
    agent = build_agent()
    runner = AgentRunner(adapt(agent), store=InMemoryStore())
    _framework_alone(agent, 1)  # Warm-up: imports, schemas, first-call caches.
    _through_stepwise(runner, 1)
    alone = _framework_alone(agent, tasks)
    stepped = _through_stepwise(runner, tasks)
    done = tasks * STEPS_PER_TASK
    return {
        "framework": "openai-agents",
        "framework_ms_per_step": alone * 1000 / done,
        "stepwise_ms_per_step": stepped * 1000 / done,
        "steps": done,
    }


if __name__ == "__main__":
    figures = run()
    ratio = figures["stepwise_ms_per_step"] / figures["framework_ms_per_step"]
    print(
        f"OpenAI Agents SDK alone {figures['framework_ms_per_step']:.2f} ms/step, "
        f"through Stepwise {figures['stepwise_ms_per_step']:.2f} ms/step, "
        f"ratio {ratio:.2f}x ({figures['steps']} steps)"
    )
