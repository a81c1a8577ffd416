"""A user's program attached to a Stepwise database: pauses before `refund` for a person.

Run as `python _refund_program.py DB`: prints the task id, blocks at the breakpoint until a
person acts in another process, then prints the result and the refund tool's output as JSON.
"""

from __future__ import annotations

import json
import sys

from agent_core.host import attach
from agent_core.llms import ScriptedLLM
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker

CALL = 'Thought: refund it.\nAction: refund\nAction Input: {"order": 42, "amount": 100}'


def refund(order: int, amount: int) -> str:
    """Refund `amount` on `order`."""
    return f"refunded {amount} on order {order}"


def make_worker() -> ReActAgentWorker:
    """The agent, as the program and the person's face each build it."""
    llm = ScriptedLLM([CALL, "Thought: done.\nAnswer: refund made"])
    return ReActAgentWorker([FunctionTool.from_defaults(fn=refund)], llm)


def main(db: str) -> None:
    with attach(db) as session:
        runner = session.runner_for(make_worker())
        task_id = runner.create_task("Refund order 42").task_id
        print(task_id, flush=True)
        result = session.resume(runner, task_id, pause_before=["tool:refund"])
        state = runner.get_task_state(task_id)
        tools = [o.output for s, o in state.outputs.items() if state.steps[s].kind.value == "tool"]
        print(json.dumps({**result.model_dump(), "tool_outputs": [str(t) for t in tools]}))


if __name__ == "__main__":
    main(sys.argv[1])
