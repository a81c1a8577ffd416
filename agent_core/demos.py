"""The built-in demo scenarios: a task the demo model knows by heart, and the agent that runs it.

The model that plays them is `agent_core.llms.demo` (scripted replies worked out from the
conversation, so steering changes them; named as such wherever a model name is shown);
everything else in a demo runs for real.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_core.llms.demo import (
    ARITHMETIC_TASK,
    DEMO_MODEL_NAME,
    HAIKU_TASK,
    OFF_SCRIPT,
    PARALLEL_TASK,
    demo_llm,
)
from agent_core.spec import AgentSpec

__all__ = [
    "ARITHMETIC_TASK",
    "DEMO_MODEL_NAME",
    "HAIKU_TASK",
    "OFF_SCRIPT",
    "PARALLEL_TASK",
    "SCENARIOS",
    "DemoScenario",
    "demo_llm",
]


@dataclass(frozen=True)
class DemoScenario:
    """A task the demo model knows by heart, with the agent that runs it."""

    name: str
    title: str
    description: str
    task: str
    spec: AgentSpec


SCENARIOS: dict[str, DemoScenario] = {
    scenario.name: scenario
    for scenario in (
        DemoScenario(
            name="arithmetic",
            title="ReAct arithmetic",
            description=(
                "A ReAct agent calls multiply, then add, then answers. Edit or reject a call and "
                "the answer follows what ran."
            ),
            task=ARITHMETIC_TASK,
            spec=AgentSpec(name="demo-react", worker="react", tools=("arithmetic",)),
        ),
        DemoScenario(
            name="parallel",
            title="Parallel tool calls",
            description=(
                "A function-calling agent asks for two tools at once; they run together, and "
                "the answer follows what they returned."
            ),
            task=PARALLEL_TASK,
            spec=AgentSpec(
                name="demo-function-calling", worker="function_calling", tools=("arithmetic",)
            ),
        ),
        DemoScenario(
            name="haiku",
            title="Master agent: llama haiku page",
            description=(
                "A planner delegates: the file agent writes a haiku while the image agent draws "
                "a llama (in parallel), then the code agent builds an HTML page of both."
            ),
            task=HAIKU_TASK,
            spec=AgentSpec(name="demo-planner", worker="planner", tools=()),
        ),
    )
}
