"""A user's program in a process of its own: a Host on the shared file runs a step that waits.

Run as `python _slow_program.py DB`: prints the task id, then runs one step whose tool sleeps
a minute (until another process stops it), then prints the step's status and error and exits.
"""

from __future__ import annotations

import asyncio
import sys

from agent_core import AgentRunner
from agent_core.errors import StepError
from agent_core.host import Host
from agent_core.llms import ScriptedLLM
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker


async def slow() -> str:
    """Wait a minute."""
    await asyncio.sleep(60)
    return "done"


def main(db: str) -> None:
    with Host(db) as host:
        llm = ScriptedLLM(["Thought: wait.\nAction: slow\nAction Input: {}", "Answer: ok"])
        worker = ReActAgentWorker([FunctionTool.from_defaults(fn=slow)], llm)
        runner = AgentRunner(worker, store=host.store)
        task_id = runner.create_task("wait").task_id
        print(task_id, flush=True)
        try:
            runner.run_step(task_id)  # The model's call, then the tool step (approval is off).
        except StepError:
            pass
        [step] = list(runner.get_task_state(task_id).steps.values())
        print(step.status.value, step.error, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
