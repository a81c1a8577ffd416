"""The Tasks page's pieces: the task list by thread, its rows, trace export and import.

A thread is a conversation (`TaskSummary.thread_id`): a task continued from another joins its
thread. A thread of several tasks is drawn as one box, titled with its first question, its
tasks newest first. A task's input came from a person or a model, so it is shown with
`st.text`, never markdown; its agent's name and file came from a person, so they are
escaped (`messages.plain`).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from agent_core.errors import AgentCoreError, TaskNotFoundError
from agent_core.llms.base import Usage
from agent_core.recordings.importers import MAX_IMPORT_BYTES, import_file
from agent_core.store.base import Store, TaskSummary
from agent_core.task_files import workspace_folder
from agent_core.trace import export_trace
from agent_core.types import ImportSource, Task, TaskStatus, short_id
from stepwise.app.components import navigation, runtime, state
from stepwise.app.components.actions import attempt
from stepwise.app.components.messages import cost_text, plain, plural, tokens_text
from stepwise.app.components.task_form import agent_label, model_label
from stepwise.app.components.task_origin import framework_of_task, import_text, replay_text

__all__ = [
    "ALL_STATUSES",
    "IMPORTED_BADGE",
    "PAGE_SIZE",
    "Thread",
    "agent_line",
    "delete_note",
    "filter_tasks",
    "group_threads",
    "import_upload",
    "render_import",
    "render_task_row",
    "render_thread",
    "status_options",
    "summary_line",
    "trace_data",
    "trace_file_name",
    "usage_cost_text",
    "workspace_file_count",
]

logger = logging.getLogger("stepwise.app")

PAGE_SIZE = 20
"""How many threads (single tasks included) the list shows before "Show all": each row costs
the browser about 20 ms to draw (60 ms on a busy machine)."""
ALL_STATUSES = "all"
_INPUT_SHOWN_CHARS = 160
_MAX_FILES_COUNTED = 10_000
IMPORTED_BADGE = "imported, read only"
READ_ONLY_NOTE = (
    "An imported trace is read only: the copy gets a new id and keeps its status, and "
    "nothing in it can run, be edited or be undone."
)


def filter_tasks(tasks: Sequence[TaskSummary], *, status: str, query: str) -> list[TaskSummary]:
    """The tasks with `status` (or any, for "all") whose input contains `query`, latest first.

    Latest means most recently updated, so a task just run or imported is at the top.
    """
    needle = query.strip().casefold()
    chosen = [
        task
        for task in tasks
        if (status == ALL_STATUSES or task.status.value == status)
        and (not needle or needle in task.input.casefold())
    ]
    return sorted(chosen, key=lambda task: task.updated_at, reverse=True)


@dataclass(frozen=True)
class Thread:
    """A conversation's tasks as the list shows them."""

    thread_id: str
    tasks: tuple[TaskSummary, ...]
    """The thread's tasks the filter kept, newest first."""
    title: str
    """The thread's first question: the input of its first task (filtered out or not)."""


def group_threads(
    shown: Sequence[TaskSummary], every: Sequence[TaskSummary] | None = None
) -> list[Thread]:
    """The `shown` tasks by thread, the thread updated last first; each thread's newest first.

    `every` (all the tasks, `shown` when None) gives each thread its title, so a filter that
    hides a thread's first task does not rename the thread. One pass over each list: cheap
    at thousands of tasks.
    """
    first: dict[str, TaskSummary] = {}
    for task in every if every is not None else shown:
        key = _thread_of(task)
        if key not in first or task.created_at < first[key].created_at:
            first[key] = task
    grouped: dict[str, list[TaskSummary]] = {}
    for task in sorted(shown, key=lambda task: task.updated_at, reverse=True):
        grouped.setdefault(_thread_of(task), []).append(task)  # The latest thread first.
    return [
        Thread(
            thread_id=key,
            tasks=tuple(sorted(tasks, key=lambda task: task.created_at, reverse=True)),
            title=(first.get(key) or tasks[-1]).input,
        )
        for key, tasks in grouped.items()
    ]


def _thread_of(task: TaskSummary) -> str:
    return task.thread_id or task.task_id  # A damaged row: a thread of its own.


def usage_cost_text(usage: Usage) -> str:
    """The cost of `usage` as `cost_text` writes it, or "" when no model ran (no tokens)."""
    if not usage.total_tokens and not usage.cost_usd:
        return ""
    return cost_text(usage.cost_usd)


def summary_line(task: TaskSummary) -> str:
    """Status, steps, tokens, cost and time of a task; holds no model or user text."""
    parts = [
        _status_word(task),
        f"{plural(task.steps_completed, 'step')} done",
        f"{task.steps_upcoming:,} upcoming",
        tokens_text(task.usage),
        usage_cost_text(task.usage),
        f"updated {task.updated_at:%Y-%m-%d %H:%M} UTC",
        f"id {short_id(task.task_id)}",
    ]
    return " · ".join(part for part in parts if part)


def _status_word(task: TaskSummary) -> str:
    """As the Stepper's header says it: a failed step to run again leaves the task active."""
    if task.status is TaskStatus.FAILED and not task.damaged and not task.imported:
        return "active · a failed step to fix and run again"
    return task.status.value


def agent_line(task_id: str) -> str:
    """The task's agent and model, as the create form names them (plain text, not markdown)."""
    try:
        spec = runtime.spec_of(task_id)
        imported_from, framework, replay_of = _origin_of(task_id)
        if imported_from is not None:  # No agent of this machine ran it.
            return f"Imported: {import_text(imported_from)}"
        model = f"the {framework} agent's own" if framework else model_label(spec)
        line = f"Agent: {agent_label(spec)} · Model: {model}"
        return f"{replay_text(replay_of)} · {line}" if replay_of else line
    except Exception:  # A stored spec this app cannot read (an old or hand-edited trace).
        logger.debug("no readable agent spec for task %s", task_id, exc_info=True)
        return "Agent and model unknown"


@st.cache_data(max_entries=1024, show_spinner=False)
def _origin_of(task_id: str) -> tuple[ImportSource | None, str | None, str | None]:
    # None changes once the task exists: read once per process, as its spec is.
    task = runtime.reader().get_task(task_id)
    return task.imported_from, framework_of_task(task), task.replay_of


def workspace_file_count(task_id: str) -> int:
    """How many files the task's workspace holds (symbolic links not followed or counted).

    Counting stops at 10,000.
    """
    try:
        spec = runtime.spec_of(task_id)
    except Exception:  # No readable spec: no workspace this app knows of.
        return 0
    folder = workspace_folder(Task(task_id=task_id, input="", spec=spec.model_dump()))
    if folder is None or folder.is_symlink() or not folder.is_dir():
        return 0
    return _count_files(folder)


def _count_files(folder: Path) -> int:
    count = 0
    for _, _, files in os.walk(folder, followlinks=False):
        count += len(files)
        if count >= _MAX_FILES_COUNTED:
            return _MAX_FILES_COUNTED
    return count


def delete_note(files: int) -> str:
    """What Delete asks before it deletes a task with `files` files in its workspace."""
    if not files:
        return "Delete this task with all its steps? This cannot be undone."
    many = f"over {plural(files, 'file')}" if files >= _MAX_FILES_COUNTED else plural(files, "file")
    return (
        f"Delete this task with all its steps? This also deletes its {many} "
        "(its workspace folder). This cannot be undone."
    )


def _one_line(text: str) -> str:
    flat = re.sub(r"\s+", " ", text).strip() or "(empty input)"
    return flat if len(flat) <= _INPUT_SHOWN_CHARS else flat[: _INPUT_SHOWN_CHARS - 1] + "…"


def trace_file_name(task_id: str) -> str:
    """The name a downloaded trace gets."""
    return f"stepwise-task-{short_id(task_id)}.json"


def trace_data(store: Store, task_id: str) -> Callable[[], str]:
    """The trace of `task_id`, built only when called (when the download is clicked)."""

    def build() -> str:
        # Runs on a server thread outside the script: it must not call Streamlit.
        loaded = store.load_task(task_id)
        if loaded is None:
            raise TaskNotFoundError(f"task {short_id(task_id)} was deleted; nothing to export")
        return export_trace(loaded)

    return build


def import_upload(data: bytes, *, name: str = "") -> list[str]:
    """Import a trace file's bytes (any format `import_file` reads); the new tasks' ids."""
    return import_file(data, runtime.shared_store(), name=name)


def render_thread(thread: Thread, *, store: Store) -> None:
    """A thread: one task as its row, or several in one box under the first question."""
    if len(thread.tasks) == 1:
        render_task_row(thread.tasks[0], store=store)
        return
    with st.container(border=True, key=f"thread-{thread.thread_id}"):
        st.caption(f"Conversation of {len(thread.tasks)} tasks, newest first. It began with:")
        st.text(_one_line(thread.title))
        for task in thread.tasks:
            render_task_row(task, store=store)


def render_task_row(task: TaskSummary, *, store: Store) -> None:
    """One task: its input as plain text, its numbers, and Open, Export and Delete.

    `store` is where Export reads the task from when the download is clicked.
    """
    task_id = task.task_id
    with st.container(border=True):
        info, open_col, export_col, delete_col = st.columns(
            [7, 1, 1, 1], vertical_alignment="center"
        )
        info.text(_one_line(task.input))
        if task.imported:
            info.badge(IMPORTED_BADGE, icon=":material/lock:", color="gray")
        if task.damaged:
            info.badge("damaged", icon=":material/error:", color="red")
            info.caption(
                plain(f"Its stored data cannot be read ({task.damaged}). Delete removes it.")
            )
        # One caption for both lines: each element costs the browser, a thousand tasks many.
        # The agent's names were chosen by a person: shown as typed.
        info.caption(f"{summary_line(task)}  \n{plain(agent_line(task_id))}")
        if open_col.button("Open", key=f"open-{task_id}"):
            state.set_current_task_id(task_id)
            navigation.switch_to("stepper")
        export_col.download_button(
            "Export",
            data=trace_data(store, task_id),
            file_name=trace_file_name(task_id),
            mime="application/json",
            key=f"export-{task_id}",
            on_click="ignore",
            help="Download the task's full trace (steps, outputs, memory) as JSON.",
        )
        # Drawn only while open: counting a workspace's files for every row cost each run.
        delete = delete_col.popover("Delete", key=f"delete-{task_id}", on_change="rerun")
        if delete.open:
            with delete:
                st.caption(delete_note(workspace_file_count(task_id)))
                if st.button("Delete for good", key=f"delete-confirm-{task_id}", type="primary"):
                    _delete(task_id)


def _delete(task_id: str) -> None:
    files = workspace_file_count(task_id)
    also = f" and its {plural(files, 'file')}" if files else ""
    attempt(
        lambda: runtime.reader().delete_task(task_id),
        success=f"Deleted task {short_id(task_id)}{also}.",
    )
    if state.current_task_id() == task_id:
        state.set_current_task_id(None)
    st.rerun()


def render_import() -> None:
    """Upload a trace file and import it as a new, read-only task, then open it."""
    with st.expander("Import a trace"):
        st.caption(READ_ONLY_NOTE)
        upload = st.file_uploader(
            "Trace file: exported from this page, OTLP JSON (OpenTelemetry, Phoenix), a "
            "Langfuse trace or a LangSmith run",
            type=["json", "jsonl"],
            key="trace-upload",
            max_upload_size=MAX_IMPORT_BYTES // (1024 * 1024),
        )
        if not st.button("Import", key="trace-import", disabled=upload is None):
            return
        assert upload is not None  # The button is disabled without a file.
        task_ids = _try_import(upload.getvalue(), name=upload.name)
        if not task_ids:
            return
        shown = ", ".join(short_id(task_id) for task_id in task_ids)
        state.push_notice("success", f"Imported task {shown}. {READ_ONLY_NOTE}")
        state.set_current_task_id(task_ids[0])
        navigation.switch_to("stepper")


def _try_import(data: bytes, *, name: str) -> list[str]:
    """The imported tasks' ids, or [] after showing why the import failed."""
    try:
        return import_upload(data, name=name)
    except AgentCoreError as exc:
        problem = str(exc)
    except Exception as exc:  # A bug, not a bad file: log the traceback, show a sentence.
        logger.exception("trace import failed")
        problem = f"Something went wrong ({type(exc).__name__}: {exc})."
    # The message may quote the file, so it is shown as plain text, not markdown.
    st.error("The trace could not be imported.")
    st.code(problem, language=None, wrap_lines=True)
    return []


def status_options(tasks: Sequence[TaskSummary]) -> dict[str, str]:
    """Status filter choices, each labelled with how many tasks have it."""
    counts = {status.value: 0 for status in TaskStatus}
    for task in tasks:
        counts[task.status.value] += 1
    return {
        ALL_STATUSES: f"all ({len(tasks)})",
        **{status: f"{status} ({count})" for status, count in counts.items()},
    }
