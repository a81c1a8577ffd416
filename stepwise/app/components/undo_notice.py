"""What Undo says: that the step is undone, and what of it could not be (a tool's effects).

Undo reverts the task exactly, but not the world: a call of an MCP tool not marked
read-only, or a tool that reported an effect it cannot take back, stays done. The runtime
keeps those as the undone step's `undo_warnings`; the person reads them here, at the click.
"""

from __future__ import annotations

from agent_core import ParallelAgentRunner
from stepwise.app.components import state
from stepwise.app.components.messages import plain

__all__ = ["undo_last_step"]


def undo_last_step(runner: ParallelAgentRunner, task_id: str, *, where: str) -> None:
    """Undo the task's last step and leave a notice saying what was not undone, if anything."""
    before = runner.get_task_state(task_id)
    last = before.steps[before.completed[-1]] if before.completed else None
    runner.undo_step(task_id)
    undone = runner.get_task_state(task_id).steps.get(last.step_id) if last else None
    warnings = undone.undo_warnings if undone is not None else []
    if not warnings:
        state.push_notice("success", "Undid the last step.", where=where)
        return
    named = f"step {last.number}" if last is not None and last.number else "the last step"
    said = plain("; ".join(warnings))  # Tool names and paths: shown as they are.
    state.push_notice(
        "warning",
        f"Undid {named} in the task, but not in the world: {said}. Those effects stay; undo "
        "them yourself if they matter.",
        where=where,
    )
