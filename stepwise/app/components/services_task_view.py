"""One services task on the Services page: its hop DAG, its outcome, and each hop in detail.

A hop run by an agent service names the Stepwise task the service ran it as. When that task
is in this app's store (the local demo's agents, or services started on the app's database),
"Open in Stepper" opens its own step DAG; otherwise the page shows the id to look up in the
service's store.
"""

from __future__ import annotations

import httpx
import streamlit as st

from stepwise.app.components import navigation, state
from stepwise.app.components.hop_dag import render_hop_dag
from stepwise.app.components.messages import plain
from stepwise.app.components.services_connection import Connection, explain_error
from stepwise.app.components.services_panels import Snapshot, in_app_store, short_id
from stepwise.services import ServicesError
from stepwise.services.records import HopRecord, HopStatus, TaskRecord

__all__ = ["render_task_view"]

_SELECTED_HOP = "services.hop.{task_id}"


def _select_hop(task_id: str, hop_id: str | None) -> None:
    st.session_state[_SELECTED_HOP.format(task_id=task_id)] = hop_id


def _open_in_stepper(task_id: str) -> None:
    state.set_current_task_id(task_id)
    navigation.switch_to("stepper")


def _service_task(hop: HopRecord) -> None:
    if not hop.service_task_id:
        return
    if in_app_store(hop.service_task_id):
        if st.button(
            "Open in Stepper",
            key=f"open-hop-{hop.hop_id}",
            help="Its steps, DAG and memory, on the Stepper page.",
        ):
            _open_in_stepper(hop.service_task_id)
    else:
        st.caption("Its Stepwise task, in the service's own store:")
        st.code(hop.service_task_id, language=None)


def _hop_title(hop: HopRecord) -> str:
    service = hop.service_name or hop.proposed_service
    edited = " · edited" if hop.edited else ""
    return f"Hop {hop.seq} · {plain(service)} · {hop.status.value}{edited}"


def _hop_detail(hop: HopRecord, *, expanded: bool) -> None:
    with st.expander(_hop_title(hop), expanded=expanded):
        if hop.edited:
            st.text(f"Proposed: {hop.proposed_service}")
            st.code(hop.proposed_input, language=None, wrap_lines=True)
            st.text(f"Ran instead (a person edited it): {hop.service_name}")
            st.code(hop.input or "", language=None, wrap_lines=True)
        elif hop.status is HopStatus.PENDING:
            st.text(f"Proposed: {hop.proposed_service}; approve, edit or reject it on the left.")
            st.code(hop.proposed_input, language=None, wrap_lines=True)
        else:
            st.text(f"Input to {hop.service_name or hop.proposed_service}:")
            st.code(hop.input or hop.proposed_input, language=None, wrap_lines=True)
        if hop.result is not None:
            st.text("Result:")
            st.code(hop.result, language=None, wrap_lines=True)
        if hop.error:
            st.text("Error:")
            st.code(hop.error, language=None, wrap_lines=True)
        _service_task(hop)


def _outcome(task: TaskRecord) -> None:
    if task.result is not None:
        st.text("Result:")
        st.code(task.result, language=None, wrap_lines=True)
    elif task.error:
        st.text("The task failed:")
        st.code(task.error, language=None, wrap_lines=True)


def _conversation(connection: Connection, task: TaskRecord) -> None:
    if not st.toggle("What the orchestrator saw", key=f"orchestrator-{task.task_id}"):
        return
    try:
        messages = connection.client.get_orchestrator_state(task.task_id).get("messages", [])
    except (httpx.HTTPError, ServicesError) as exc:
        st.error(plain(explain_error(exc, connection)))
        return
    if not messages:
        st.caption("This orchestrator keeps no conversation (a pipeline follows its list).")
    for message in messages:
        calls = ", ".join(call.get("name", "?") for call in message.get("tool_calls") or [])
        st.text(f"{message.get('role', '?')}" + (f" → calls {calls}" if calls else ""))
        if message.get("content"):
            st.code(message["content"], language=None, wrap_lines=True)


def render_task_view(connection: Connection, snapshot: Snapshot, task: TaskRecord) -> None:
    """The task's hop DAG (click a hop to open it below), outcome, hops and conversation."""
    try:
        if task.truncated:  # The list cuts long texts; the task view shows them whole.
            task = connection.client.get_task(task.task_id)
        hops = connection.client.get_hops(task.task_id)
    except (httpx.HTTPError, ServicesError) as exc:
        st.error(plain(explain_error(exc, connection)))
        return
    st.subheader(f"Hops of task {short_id(task.task_id)}", anchor=False)
    st.code(task.input, language=None, wrap_lines=True)
    key = _SELECTED_HOP.format(task_id=task.task_id)
    chosen = st.session_state.get(key)
    render_hop_dag(
        task, hops, snapshot.kinds, selected=chosen,
        on_select=lambda hop_id: _select_hop(task.task_id, hop_id),
    )  # fmt: skip
    _outcome(task)
    if not hops:
        st.caption("No hop yet: the orchestrator is choosing the first service.")
    elif chosen is None:
        st.caption("Click a hop in the graph to open it here.")
    for hop in hops:
        _hop_detail(hop, expanded=hop.hop_id == chosen)
    _conversation(connection, task)
