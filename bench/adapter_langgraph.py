"""LangGraph alone against LangGraph stepped by Stepwise: milliseconds per step (super-step).

One graph: `StateGraph(MessagesState)` with an "agent" node on a scripted LangChain chat
model, a prebuilt `ToolNode` with one `add` tool, and `tools_condition`. The model calls `add`
`ROUNDS` times, one call per reply, then answers; a task is `2 * ROUNDS + 1` super-steps.

- Framework alone: `graph.ainvoke()` on the compiled graph, no checkpointer, each task whole.
- Framework, checkpointed step by step: the way LangGraph itself pauses between super-steps,
  `InMemorySaver` and `astream(..., interrupt_after="*")` once per super-step (reported beside
  the contract's figures, for reference).
- Through Stepwise: `AgentRunner` (default options, `InMemoryStore`), one `run_step` per
  super-step, each loading the task's checkpoint from its JSON state and storing it back.

Each side runs as many tasks as make `steps` steps, after a warm-up task each; the sides take
turns `REPEATS` times and each keeps its fastest round (the machine is shared: the fastest
round is the one least disturbed).

    .venv/bin/python -m bench.adapter_langgraph
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agent_core import AgentRunner
from agent_core.adapters import adapt
from agent_core.store import InMemoryStore
from bench._stepping import seconds_stepping

ROUNDS = 5
"""Tool rounds per task: each task is 2 * ROUNDS + 1 super-steps."""
STEPS_PER_TASK = 2 * ROUNDS + 1
REPEATS = 3
PROMPT = "Add five times."
ANSWER = f"Added {ROUNDS} times."


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class ScriptedModel(BaseChatModel):
    """Calls `add` once per reply until it has `ROUNDS` results, then answers."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(**kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        calls = sum(isinstance(m, ToolMessage) for m in messages)
        if calls < ROUNDS:
            call = {"name": "add", "args": {"a": calls, "b": 1}, "id": f"c{calls}"}
            reply = AIMessage("", tool_calls=[call])
        else:
            reply = AIMessage(ANSWER)
        return ChatResult(generations=[ChatGeneration(message=reply)])


def build_graph() -> Any:
    """The compiled graph every side runs."""
    model = ScriptedModel().bind_tools([add])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([add]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


def _framework_alone(graph: Any, tasks: int) -> float:
    async def all_tasks() -> None:
        for _ in range(tasks):
            result = await graph.ainvoke({"messages": [("user", PROMPT)]})
            assert result["messages"][-1].content == ANSWER

    started = time.perf_counter()
    asyncio.run(all_tasks())
    return time.perf_counter() - started


def _framework_checkpointed(graph: Any, tasks: int) -> float:
    saved = graph.copy(update={"checkpointer": InMemorySaver()})

    async def all_tasks() -> None:
        for _ in range(tasks):
            config = {"configurable": {"thread_id": uuid.uuid4().hex}}
            graph_input: Any = {"messages": [("user", PROMPT)]}
            for _ in range(STEPS_PER_TASK):
                async for _ in saved.astream(graph_input, config, interrupt_after="*"):
                    pass
                graph_input = None
            state = await saved.aget_state(config)
            assert not state.next and state.values["messages"][-1].content == ANSWER

    started = time.perf_counter()
    asyncio.run(all_tasks())
    return time.perf_counter() - started


def _through_stepwise(runner: AgentRunner, tasks: int) -> float:
    return seconds_stepping(runner, PROMPT, tasks=tasks, steps_per_task=STEPS_PER_TASK)


def run(steps: int = 200) -> dict[str, Any]:
    """Milliseconds per super-step, LangGraph alone and stepped by Stepwise."""
    tasks = max(1, math.ceil(steps / STEPS_PER_TASK))
    graph = build_graph()
    runner = AgentRunner(adapt(graph), store=InMemoryStore())
    _framework_alone(graph, 1)  # Warm-up: imports, schemas, first-call caches.
    _framework_checkpointed(graph, 1)
    _through_stepwise(runner, 1)
    rounds = [
        (
            _framework_alone(graph, tasks),
            _framework_checkpointed(graph, tasks),
            _through_stepwise(runner, tasks),
        )
        for _ in range(REPEATS)
    ]
    alone, checkpointed, stepped = (min(times) for times in zip(*rounds, strict=True))
    done = tasks * STEPS_PER_TASK
    return {
        "framework": "langgraph",
        "framework_ms_per_step": alone * 1000 / done,
        "stepwise_ms_per_step": stepped * 1000 / done,
        "framework_checkpointed_ms_per_step": checkpointed * 1000 / done,
        "steps": done,
    }


if __name__ == "__main__":
    figures = run()
    ratio = figures["stepwise_ms_per_step"] / figures["framework_ms_per_step"]
    paused = figures["stepwise_ms_per_step"] / figures["framework_checkpointed_ms_per_step"]
    print(
        f"LangGraph alone {figures['framework_ms_per_step']:.2f} ms/step, "
        f"through Stepwise {figures['stepwise_ms_per_step']:.2f} ms/step, "
        f"ratio {ratio:.2f}x ({figures['steps']} steps); LangGraph paused after each "
        f"super-step on InMemorySaver {figures['framework_checkpointed_ms_per_step']:.2f} "
        f"ms/step, ratio {paused:.2f}x"
    )
