"""A pydantic-ai agent, debugged in Stepwise one node of its graph at a time.

    stepwise ui --agent calc=examples/pydantic_ai_agent.py:agent

Stepwise recognises the `Agent` and steps it: a "model request" step per request to the
model, a "call tools: ..." step per batch of tool calls. `convert` requires approval, so its
calls wait for you: approve them, edit their arguments, or reject them with a reason the model
reads. Undo, restart the app, or edit the next request: the run goes on from its message
history, which Stepwise keeps with the task.

The model is pydantic-ai's own: set `PYDANTIC_AI_MODEL` (say `openai:gpt-4o-mini`, with
`OPENAI_API_KEY`) to use a real one. Without it the agent runs offline on pydantic-ai's
`TestModel`, which calls each tool once with made-up arguments and then answers with what
they returned.
"""

from __future__ import annotations

import os

from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

RATES = {("EUR", "USD"): 1.08, ("USD", "EUR"): 0.93, ("EUR", "GBP"): 0.85}

agent = Agent(
    os.environ.get("PYDANTIC_AI_MODEL") or TestModel(),
    name="calc",
    instructions=(
        "You are a careful calculator. Use add for sums and convert for currencies; "
        "answer with the result and how you got it."
    ),
)


@agent.tool_plain
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@agent.tool_plain(requires_approval=True)
def convert(amount: float, source: str = "EUR", target: str = "USD") -> str:
    """Convert an amount of money between currencies (EUR, USD, GBP)."""
    rate = RATES.get((source.upper(), target.upper()))
    if rate is None:
        return f"no rate from {source} to {target}; known: {', '.join(map('/'.join, RATES))}"
    return f"{amount * rate:.2f} {target.upper()}"
