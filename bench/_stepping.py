"""What the adapter benches share: running tasks through Stepwise one `run_step` at a time."""

from __future__ import annotations

import time

from agent_core import AgentRunner

__all__ = ["seconds_stepping"]


def seconds_stepping(runner: AgentRunner, prompt: str, *, tasks: int, steps_per_task: int) -> float:
    """Seconds to run `tasks` tasks on `prompt` to their last step, one `run_step` each step."""
    started = time.perf_counter()
    for _ in range(tasks):
        task = runner.create_task(prompt)
        steps = 0
        while True:
            steps += 1
            if runner.run_step(task.task_id).is_last:
                break
        assert steps == steps_per_task, f"{steps} steps, expected {steps_per_task}"
    return time.perf_counter() - started
