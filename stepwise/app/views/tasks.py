"""Tasks: every task in the store by thread, to open, delete, export as a trace, or import one.

The list reads the store's summaries (`list_tasks`), never a whole task: with a thousand
tasks it is one query and one pass to group them.
"""

from __future__ import annotations

import streamlit as st

from stepwise.app.components import runtime
from stepwise.app.components.actions import show_notice
from stepwise.app.components.database import when_database_answers
from stepwise.app.components.task_list import (
    ALL_STATUSES,
    PAGE_SIZE,
    filter_tasks,
    group_threads,
    render_import,
    render_thread,
    status_options,
)


def render() -> None:
    """Draw the Tasks page (or say that its database does not answer)."""
    with when_database_answers():
        _render()


def _render() -> None:
    show_notice()
    st.header("Tasks")
    tasks = runtime.reader().list_tasks()
    render_import()
    if not tasks:
        st.caption("No tasks yet: create one on the Stepper page, or import a trace.")
        st.stop()

    options = status_options(tasks)
    status_col, search_col = st.columns([1, 2])
    status = status_col.selectbox(
        "Status", list(options), format_func=options.__getitem__, key="tasks-status"
    )
    query = search_col.text_input("Search the task inputs", key="tasks-query")
    shown = filter_tasks(tasks, status=status or ALL_STATUSES, query=query)
    threads = group_threads(shown, tasks)
    if len(threads) > PAGE_SIZE and not st.toggle(
        f"Show all {len(threads)} conversations ({len(shown)} tasks)", key="tasks-show-all"
    ):
        st.caption(
            f"The {PAGE_SIZE} most recently updated of {len(threads)} conversations "
            f"({len(shown)} tasks)."
        )
        threads = threads[:PAGE_SIZE]
    if not shown:
        st.caption("No task matches the filter.")
    store = runtime.shared_store()
    for thread in threads:
        render_thread(thread, store=store)
