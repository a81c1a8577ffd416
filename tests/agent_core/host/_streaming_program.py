"""A user's program in a process of its own: a Host on the shared file runs one streaming step.

Run as `python _streaming_program.py DB MODEL_URL`: prints the task id, runs the first step
(a model call to the loopback server, which streams its reply slowly), then prints the step's
status and exits.
"""

from __future__ import annotations

import sys

from agent_core.errors import StepError
from agent_core.host import Host
from agent_core.spec import AgentSpec


def main(db: str, url: str) -> None:
    with Host(db) as host:
        spec = AgentSpec(provider="openai", model="loopback-model", base_url=url)
        runner = host.runner_for(spec, api_key="sk-loopback")
        task_id = runner.create_task("Tell me a story").task_id
        print(task_id, flush=True)
        try:  # Started as the server and the app start steps: its events are recorded.
            runner.start_step(task_id).result(timeout=120)
        except StepError:
            pass
        [step] = list(runner.get_task_state(task_id).steps.values())[:1]
        print(step.status.value, step.error, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
