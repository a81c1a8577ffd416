"""Re-run on save on the Stepper: "Your code changed — Re-run from step N".

When the app watches the user's code (`code_watch`) and a save was seen after a
step of the open task ran, the Stepper offers to re-run the task from a step: a new task in
the app's store, whose steps before N are answered from the recording (no model call, no
tool run, `agent_core.recordings.rerun.rerun_from`) and whose step N is upcoming, to run live
on the reloaded code. File names come from the user's disk: they are shown with `st.text`.
"""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st

from agent_core import ParallelAgentRunner, user_code
from agent_core.recordings.rerun import rerun_from
from agent_core.spec import AgentSpec
from agent_core.types import TaskState
from stepwise.app.components import runtime, state
from stepwise.app.components.actions import attempt
from stepwise.app.components.code_watch import CodeChange, latest_change, render_change_listener

__all__ = ["default_rerun_step", "ran_before", "render_rerun_offer"]

_HELP = (
    "Makes a new task: the steps before this one are answered from this task's recording "
    "(no model call, no tool runs), on your reloaded code; this step is left upcoming, to run "
    "live on the new code. This task stays as it is."
)


def ran_before(task_state: TaskState, change: CodeChange) -> bool:
    """Whether a completed step of the task ran before the save `change`, on the old code."""
    steps = (task_state.steps[s] for s in task_state.completed)
    return any((step.finished_at or step.created_at) < change.at for step in steps)


def default_rerun_step(task_state: TaskState, user_tools: Iterable[str]) -> int:
    """The first completed step that called one of the user's tools (its number), else 1."""
    names = set(user_tools)
    for number, step_id in enumerate(task_state.completed, start=1):
        output = task_state.outputs.get(step_id)
        if output is not None and any(call.tool_name in names for call in output.tool_calls):
            return number
    return 1


def _user_tools(runner: ParallelAgentRunner, spec: AgentSpec) -> list[str]:
    """The names of the tools in the user's code: their agent's, or their tools modules'."""
    if spec.agent is not None:
        return list(getattr(runner.agent_worker, "tools", None) or ())
    registry = user_code.default_registry()
    entries = (registry.entry("tools", name, load=False) for name in spec.tool_modules)
    return [tool.name for entry in entries if entry is not None for tool in entry.tools]


def _offered(task_state: TaskState, spec: AgentSpec) -> CodeChange | None:
    change = latest_change()
    if change is None or not spec.uses_user_code or task_state.task.imported:
        return None
    return change if task_state.completed and ran_before(task_state, change) else None


def _rerun(task_id: str, step: int) -> None:
    registry = user_code.default_registry()
    store = runtime.shared_store()
    made: list[str] = []

    def run() -> None:
        rerun = rerun_from(
            store, task_id, step, store=store, registry=registry, project=registry.project
        )
        made.append(rerun.task_id)

    earlier = "step 1 came" if step == 2 else f"steps 1 to {step - 1} came"
    words = (
        f"Re-ran from step {step}: {earlier} from the recording; step {step} is upcoming and "
        "runs on your new code."
        if step > 1
        else "Re-ran from step 1: every step runs on your new code."
    )
    if attempt(run, success=words):
        state.set_current_task_id(made[0])
    st.rerun()


def render_rerun_offer(runner: ParallelAgentRunner, task_state: TaskState) -> None:
    """The offer to re-run the open task from step N, when the user's code changed after it."""
    render_change_listener()  # A save shows here without a click.
    spec = runtime.spec_of(task_state.task_id)
    change = _offered(task_state, spec)
    if change is None:
        return
    task_id, steps = task_state.task_id, len(task_state.completed)
    default = min(default_rerun_step(task_state, _user_tools(runner, spec)), steps)
    with st.container(border=True, key=f"rerun-offer-{task_id}"):
        st.markdown("**Your code changed** since this task's steps ran. Saved:")
        st.text(", ".join(path.name for path in change.files))
        ask, go = st.columns([2, 1], vertical_alignment="bottom")
        number = ask.number_input(
            "Re-run from step",
            min_value=1,
            max_value=steps,
            value=default,
            step=1,
            key=f"rerun-step-{task_id}",
            help=_HELP,
        )
        if go.button(f"Re-run from step {int(number)}", key=f"rerun-{task_id}", help=_HELP):
            _rerun(task_id, int(number))
