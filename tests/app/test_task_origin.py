"""What the Tasks page and the Stepper call the model of a task that never ran on its spec's
model (issue 32 item 5): a framework agent's task, and a task imported from a trace."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from agent_core.runtime.fork import new_task_change
from agent_core.runtime.worker_state import dump_state
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.types import ImportSource, Task, TaskState, TaskStatus

DEMO = "scripted replies"


def _store_task(db_path: Path, **fields: object) -> str:
    task = Task(input="Book a flight", spec=AgentSpec().model_dump(), **fields)
    state = TaskState(task=task)
    state.set_extra_state_json(dump_state(task.extra_state, task_id=task.task_id, step_id=""))
    store = SQLiteStore(db_path)
    try:
        store.commit(new_task_change(state))
    finally:
        store.close()
    return task.task_id


def _captions(at: AppTest) -> str:
    assert not at.exception, [e.value for e in at.exception]
    text = "\n".join(str(e.value) for kind in ("caption", "text") for e in at.get(kind))
    return re.sub(r"\\([^\w\s])", r"\1", text)  # Markdown escapes (messages.plain) undone.


def test_a_framework_task_is_not_called_the_demo_model(app: AppTest, db_path: Path) -> None:
    task_id = _store_task(
        db_path, status=TaskStatus.COMPLETED, extra_state={"pydantic_ai": {"messages": []}}
    )
    app.switch_page("app_pages/tasks.py").run()
    listed = _captions(app)
    assert "the pydantic-ai agent's own" in listed and DEMO not in listed

    app.query_params["task"] = task_id
    app.switch_page("app_pages/stepper.py").run()
    header = _captions(app)
    assert "Model: the pydantic-ai agent's own" in header and DEMO not in header
    assert "reasoning step" not in header
    assert "0 / 50 model requests" in header  # Issue 32 item 2: its request_limit, raisable.


def test_an_imported_task_says_where_it_came_from(app: AppTest, db_path: Path) -> None:
    source = ImportSource(format="langfuse", file="run.json", framework="pydantic-ai")
    task_id = _store_task(db_path, status=TaskStatus.COMPLETED, imported=True, imported_from=source)
    app.switch_page("app_pages/tasks.py").run()
    listed = _captions(app)
    assert "Imported: recorded in run.json (a Langfuse trace, pydantic-ai)" in listed
    assert DEMO not in listed

    app.query_params["task"] = task_id
    app.switch_page("app_pages/stepper.py").run()
    header = _captions(app)
    assert "Model: recorded in run.json (a Langfuse trace, pydantic-ai)" in header
    assert DEMO not in header and "reasoning step" not in header


def test_a_framework_task_shows_no_reply_cap_it_does_not_send(app: AppTest, db_path: Path) -> None:
    # The header said "replies up to 3,000 tokens" where the agent sends its own cap (200).
    task = Task(
        input="Book a flight",
        spec=AgentSpec(max_tokens=3000).model_dump(),
        status=TaskStatus.COMPLETED,
        extra_state={"pydantic_ai": {"messages": []}},
    )
    state = TaskState(task=task)
    state.set_extra_state_json(dump_state(task.extra_state, task_id=task.task_id, step_id=""))
    store = SQLiteStore(db_path)
    try:
        store.commit(new_task_change(state))
    finally:
        store.close()

    app.query_params["task"] = task.task_id
    app.switch_page("app_pages/stepper.py").run()
    header = _captions(app)
    assert "Model: the pydantic-ai agent's own" in header and "replies up to" not in header
