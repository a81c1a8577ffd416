"""Tasks: every task in the store, to open, delete, export or import."""

from __future__ import annotations

import streamlit as st

from components import runtime, state
from components.actions import attempt, show_notice

show_notice()
st.header("Tasks")
tasks = runtime.reader().list_tasks()
if not tasks:
    st.caption("No tasks yet: create one on the Stepper page.")
for summary in tasks:
    cost = f"${summary.usage.cost_usd:.4f}" if summary.usage.cost_usd is not None else "—"
    with st.container(border=True):
        info, open_col, delete_col = st.columns([6, 1, 1])
        info.text(summary.input[:120])
        info.caption(
            f"{summary.status.value} · {summary.steps_completed} steps done · "
            f"{summary.steps_upcoming} upcoming · {summary.usage.total_tokens:,} tokens · "
            f"{cost} · {summary.updated_at:%Y-%m-%d %H:%M}"
        )
        if open_col.button("Open", key=f"open-{summary.task_id}"):
            state.set_current_task_id(summary.task_id)
            st.switch_page("pages/stepper.py")
        if delete_col.button("Delete", key=f"delete-{summary.task_id}"):
            attempt(lambda s=summary: runtime.reader().delete_task(s.task_id), success="Deleted.")
            if state.current_task_id() == summary.task_id:
                state.set_current_task_id(None)
            st.rerun()
