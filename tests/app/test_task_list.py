"""The task list's numbers: one `cost_text` for the whole app, and a task's usage through it."""

from __future__ import annotations

from agent_core.llms.base import Usage
from stepwise.app.components import messages, task_list
from stepwise.app.components.task_list import usage_cost_text


def test_a_tasks_cost_is_written_by_the_apps_one_cost_text() -> None:
    assert not hasattr(task_list, "cost_text") or task_list.cost_text is messages.cost_text
    assert usage_cost_text(Usage()) == ""  # No model ran: nothing to say.
    assert usage_cost_text(Usage(prompt_tokens=10, completion_tokens=5)) == "cost unknown"
    priced = Usage(prompt_tokens=10, completion_tokens=5, cost_usd=0.00123)
    assert usage_cost_text(priced) == messages.cost_text(0.00123) == "$0.0012"


def test_a_task_with_a_failed_step_to_retry_reads_active_as_in_its_header() -> None:
    from datetime import UTC, datetime

    from agent_core.store.base import TaskSummary
    from agent_core.types import TaskStatus
    from stepwise.app.components.task_list import summary_line

    moment = datetime(2026, 11, 27, tzinfo=UTC)
    failed = TaskSummary(
        task_id="a" * 32,
        input="q",
        status=TaskStatus.FAILED,
        created_at=moment,
        updated_at=moment,
        steps_completed=2,
        steps_upcoming=1,
        usage=Usage(),
    )
    assert summary_line(failed).startswith("active · a failed step to fix and run again · 2 steps")
    damaged = failed.model_copy(update={"damaged": "ValueError: bad row"})
    assert summary_line(damaged).startswith("failed · ")  # It cannot be opened: really failed.
