"""pydantic-ai alone against pydantic-ai stepped by Stepwise: milliseconds per step.

One agent, one `add` tool and pydantic-ai's `FunctionModel` answering at once: it calls `add`
`TOOL_ROUNDS` times, one call per reply, then answers. A task is `2 * TOOL_ROUNDS + 1` steps,
a model request per reply and a tool step per call, the nodes of pydantic-ai's graph that talk
to the world. The framework alone runs each task with `agent.run()`; Stepwise runs it through
`AgentRunner` (default options, `InMemoryStore`) one `run_step` at a time, each step a fresh
`Agent.iter()` on the task's JSON message history. A third way is pydantic-ai alone driven the
adapter's way, a fresh `Agent.iter()` per step on the history and no Stepwise: what reopening
the run costs pydantic-ai itself, the floor under Stepwise's figure. Each way runs `steps`
steps in rounds, the three taking turns, after a warm-up; a figure is its best round.

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
from bench._stepping import seconds_stepping

TOOL_ROUNDS = 5
"""Tool rounds per task: each task is 2 * TOOL_ROUNDS + 1 steps."""
STEPS_PER_TASK = 2 * TOOL_ROUNDS + 1


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    calls = sum(isinstance(p, ToolCallPart) for m in messages for p in m.parts)
    if calls < TOOL_ROUNDS:
        call = ToolCallPart("add", {"a": calls, "b": 1}, tool_call_id=f"c{calls}")
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(f"Added {TOOL_ROUNDS} times.")])


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
            assert result.output == f"Added {TOOL_ROUNDS} times."

    started = time.perf_counter()
    asyncio.run(all_tasks())
    return time.perf_counter() - started


async def _one_node(
    agent: Agent[None, str], history: list[ModelMessage], prompt: str | None
) -> tuple[list[ModelMessage], bool]:
    """Run the one node a step runs, in a fresh run on `history`; the history after it."""
    async with agent.iter(prompt, message_history=history) as run:
        node = await run.next(run.next_node)  # UserPromptNode -> the node that talks.
        node = await run.next(node)
        if Agent.is_call_tools_node(node) and not node.model_response.tool_calls:
            node = await run.next(node)  # A reply without calls ends the run in its step.
        messages = run.all_messages()
        if Agent.is_model_request_node(node):
            messages = [*messages, node.request]
        return messages, Agent.is_end_node(node)


def _fresh_run_per_step(agent: Agent[None, str], tasks: int) -> float:
    """pydantic-ai alone, but each step a fresh `Agent.iter()` on the history, as the adapter."""

    async def all_tasks() -> None:
        for _ in range(tasks):
            history: list[ModelMessage] = []
            prompt: str | None = "Add five times."
            for _ in range(STEPS_PER_TASK):
                history, ended = await _one_node(agent, history, prompt)
                prompt = None
            assert ended

    started = time.perf_counter()
    asyncio.run(all_tasks())
    return time.perf_counter() - started


def _through_stepwise(runner: AgentRunner, tasks: int) -> float:
    return seconds_stepping(runner, "Add five times.", tasks=tasks, steps_per_task=STEPS_PER_TASK)


def run(steps: int = 200, *, rounds: int = 5) -> dict[str, Any]:
    """Milliseconds per step, pydantic-ai alone and stepped by Stepwise.

    The `steps` are split into `rounds`, the three ways taking turns in each, and each figure
    is the best round's: on a shared machine the other processes only ever add time.
    """
    tasks = max(1, math.ceil(steps / (STEPS_PER_TASK * rounds)))
    agent = build_agent()
    runner = AgentRunner(adapt(agent), store=InMemoryStore())
    ways = {
        "framework": lambda: _framework_alone(agent, tasks),
        "fresh": lambda: _fresh_run_per_step(agent, tasks),
        "stepwise": lambda: _through_stepwise(runner, tasks),
    }
    for way in ways.values():  # Warm-up: imports, schemas, first-call caches.
        way()
    best = dict.fromkeys(ways, float("inf"))
    for _ in range(rounds):
        for name, way in ways.items():
            best[name] = min(best[name], way())
    per_round = tasks * STEPS_PER_TASK
    return {
        "framework": "pydantic-ai",
        "framework_ms_per_step": best["framework"] * 1000 / per_round,
        "stepwise_ms_per_step": best["stepwise"] * 1000 / per_round,
        # What pydantic-ai itself costs when every step reopens the run from its history
        # (the adapter's design, no Stepwise): the floor under stepwise_ms_per_step.
        "framework_fresh_run_ms_per_step": best["fresh"] * 1000 / per_round,
        "steps": per_round * rounds,
    }


if __name__ == "__main__":
    figures = run()
    ratio = figures["stepwise_ms_per_step"] / figures["framework_ms_per_step"]
    print(
        f"pydantic-ai alone {figures['framework_ms_per_step']:.2f} ms/step, "
        f"a fresh run per step {figures['framework_fresh_run_ms_per_step']:.2f} ms/step, "
        f"through Stepwise {figures['stepwise_ms_per_step']:.2f} ms/step, "
        f"ratio {ratio:.2f}x ({figures['steps']} steps)"
    )
