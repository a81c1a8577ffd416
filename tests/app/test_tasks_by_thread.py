"""The Tasks page groups tasks by thread (issue 22, item 1): a conversation continued over
several tasks is listed as one box under its first question, its tasks newest first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.llms.base import Usage
from agent_core.store import SQLiteStore
from agent_core.store.base import TaskSummary
from agent_core.types import TaskStatus
from agent_core.workers import ReActAgentWorker
from stepwise.app.components.task_list import group_threads

_ANSWER = "Thought: done.\nAnswer: 42"


def _finished(runner: AgentRunner, text: str, *, after: str | None = None) -> str:
    """A finalized task (continuing `after`'s conversation when given)."""
    extra = {} if after is None else {"continue_from": after}
    task_id = runner.create_task(text, **extra).task_id
    runner.run_step(task_id)
    runner.finalize_response(task_id)
    return task_id


def _open_order(app) -> list[str]:
    return [b.key.removeprefix("open-") for b in app.button if (b.key or "").startswith("open-")]


def test_a_continued_conversation_is_listed_together_under_its_first_question(app, db_path):
    worker = ReActAgentWorker.from_tools([], llm=ScriptedLLM([_ANSWER] * 5))
    runner = AgentRunner(worker, store=SQLiteStore(db_path))
    first = _finished(runner, "What is 6 times 7?")
    other = _finished(runner, "An unrelated question.")
    second = _finished(runner, "And halved?", after=first)
    third = _finished(runner, "And doubled again?", after=second)

    app.run()
    app.switch_page("app_pages/tasks.py").run()

    assert not app.exception, app.exception
    # The conversation (updated last) first, its tasks together and newest first.
    assert _open_order(app) == [third, second, first, other]
    texts = [t.value for t in app.text]
    assert texts[:4] == [
        "What is 6 times 7?",
        "And doubled again?",
        "And halved?",
        "What is 6 times 7?",
    ]
    assert any(c.value.startswith("Conversation of 3 tasks") for c in app.caption)
    assert sum(c.value.startswith("Conversation of") for c in app.caption) == 1  # Not `other`.


def _summary(task_id: str, thread: str, minute: int, text: str) -> TaskSummary:
    at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minute)
    return TaskSummary(
        task_id=task_id,
        input=text,
        status=TaskStatus.COMPLETED,
        created_at=at,
        updated_at=at,
        steps_completed=1,
        steps_upcoming=0,
        usage=Usage(),
        thread_id=thread,
    )


def test_a_thread_keeps_its_first_question_as_title_when_the_filter_hides_it() -> None:
    every = [
        _summary("a", "a", 0, "first question"),
        _summary("b", "a", 5, "follow-up"),
        _summary("c", "c", 3, "alone"),
        _summary("d", "", 4, "damaged row"),  # No thread read: a thread of its own.
    ]
    threads = group_threads([every[1], every[2], every[3]], every)

    assert [t.thread_id for t in threads] == ["a", "d", "c"]  # Updated last first.
    assert threads[0].title == "first question"
    assert [t.task_id for t in threads[0].tasks] == ["b"]
    assert [t.title for t in group_threads(every)] == ["first question", "damaged row", "alone"]
    assert [t.task_id for t in group_threads(every)[0].tasks] == ["b", "a"]  # Newest first.


def test_grouping_a_thousand_tasks_is_quick() -> None:
    import time

    tasks = [_summary(f"t{i}", f"t{i - i % 3}", i, f"question {i}") for i in range(1000)]
    started = time.perf_counter()
    threads = group_threads(tasks)
    took = time.perf_counter() - started

    assert len(threads) == 334 and [t.task_id for t in threads[0].tasks] == ["t999"]
    assert took < 0.5, f"grouping took {took:.3f} s"
