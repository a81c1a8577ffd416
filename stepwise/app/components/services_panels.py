"""The Services page's panels: services, a new task, what waits for a person, and the tasks.

Every panel reads from a `Snapshot` fetched once per run and acts through the control
plane's client. Text that came from a person, a model or a service (task inputs, results,
prompts, service names) is shown with `st.code`, `st.text` or a table, or escaped with
`messages.plain` where Streamlit reads markdown; never as markup.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import streamlit as st

from stepwise.app.components import runtime, state
from stepwise.app.components.messages import plain, plural
from stepwise.app.components.services_connection import Connection, explain_error
from stepwise.services import ServicesError
from stepwise.services.records import (
    HopRecord,
    HumanRequest,
    ServiceKind,
    ServiceRecord,
    TaskRecord,
    TaskStatus,
)

__all__ = [
    "NOTICE_AT",
    "Snapshot",
    "load_snapshot",
    "render_inbox",
    "render_new_task",
    "render_pending_hops",
    "render_services",
    "render_task_list",
]

NOTICE_AT = "services"
"""Where the page shows the outcome of its buttons (`actions.show_notice`)."""
TASKS_SHOWN = 20
SELECTED_TASK = "services.task"
_TAKES_HOPS = (ServiceKind.AGENT, ServiceKind.HUMAN)
_BADGE_COLORS = {
    TaskStatus.RUNNING: "blue",
    TaskStatus.AWAITING_APPROVAL: "orange",
    TaskStatus.AWAITING_HUMAN: "orange",
    TaskStatus.COMPLETED: "green",
    TaskStatus.FAILED: "red",
}


@dataclass
class Snapshot:
    """What the control plane holds now, read once per page run."""

    services: list[ServiceRecord]
    tasks: list[TaskRecord]
    pending: list[HopRecord]
    inbox: list[HumanRequest]

    @property
    def kinds(self) -> dict[str, ServiceKind]:
        """Each service's kind, by name."""
        return {service.service_name: service.kind for service in self.services}

    @property
    def hop_targets(self) -> list[str]:
        """Services a hop can be sent to (agents and people)."""
        return [s.service_name for s in self.services if s.kind in _TAKES_HOPS]


def load_snapshot(connection: Connection) -> Snapshot:
    """Read services, the newest tasks, pending hops and the waiting human requests."""
    client = connection.client
    return Snapshot(
        services=client.list_services(),
        tasks=client.list_tasks(limit=TASKS_SHOWN),
        pending=client.pending_hops(),
        inbox=client.list_human_requests(),
    )


def short_id(an_id: str) -> str:
    """The first 8 characters of an id, as the page names tasks."""
    return an_id[:8]


def ago(timestamp: float) -> str:
    """How long ago `timestamp` was, in words ("12 s ago", "3 min ago")."""
    seconds = max(0, int(time.time() - timestamp))
    if seconds < 90:
        return f"{seconds} s ago"
    if seconds < 90 * 60:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"


def act(connection: Connection, action: Callable[[], Any], *, success: str) -> bool:
    """Run a control plane call; keep the outcome to show after the rerun. True if it worked.

    `success` is the app's own words (markdown); names inside it must be `plain`.
    """
    try:
        action()
    except (httpx.HTTPError, ServicesError) as exc:
        state.push_notice("error", explain_error(exc, connection), where=NOTICE_AT)
        return False
    state.push_notice("success", success, where=NOTICE_AT)
    return True


def _address(service: ServiceRecord) -> str:
    if service.host and service.port:
        return f"{service.host}:{service.port}"
    return "via the queue"


def render_services(snapshot: Snapshot) -> None:
    """The registered services: kind, what they do, where they are, when they registered."""
    st.subheader("Services", anchor=False)
    if not snapshot.services:
        st.caption("No service has registered yet: start them, and they appear here.")
        return
    rows = [
        {
            "Service": service.service_name,
            "Kind": service.kind.value,
            "Description": service.description,
            "Address": _address(service),
            "Registered": ago(service.registered_at),
        }
        for service in snapshot.services
    ]
    st.dataframe(rows, hide_index=True, width="stretch")


def render_new_task(connection: Connection) -> None:
    """The "New task" form: the text, and whether to pause before each hop (step mode)."""
    st.subheader("New task", anchor=False)
    with st.form("services-new-task", clear_on_submit=True, border=True):
        text = st.text_area("Task", key="services.new_text", height=90)
        step_mode = st.checkbox(
            "Step mode: pause before each hop for your approval", key="services.new_step_mode"
        )
        submitted = st.form_submit_button("Create task", type="primary")
    if not submitted:
        return
    if not text.strip():
        st.warning("Type the task first, then press Create task.")
        return
    created: list[str] = []
    then = ": approve its first hop under Waiting for you." if step_mode else "."
    done = act(
        connection,
        lambda: created.append(connection.client.create_task(text, step_mode=step_mode)),
        success=f"Task created{then}",
    )
    if done:
        st.session_state[SELECTED_TASK] = created[0]
        st.rerun()


def _hop_heading(hop: HopRecord, snapshot: Snapshot) -> str:
    task = next((t for t in snapshot.tasks if t.task_id == hop.task_id), None)
    about = f" of “{plain(_one_line(task.input, 60))}”" if task else ""
    service = plain(hop.proposed_service)
    return f"Task {short_id(hop.task_id)}{about}: hop {hop.seq} proposes **{service}**"


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _approve(connection: Connection, hop: HopRecord) -> None:
    if act(
        connection,
        lambda: connection.client.approve_hop(hop.task_id, hop.hop_id),
        success=f"Approved: hop {hop.seq} went to {plain(hop.proposed_service)}.",
    ):
        st.rerun()


def _edit_form(connection: Connection, hop: HopRecord, snapshot: Snapshot) -> None:
    targets = snapshot.hop_targets or [hop.proposed_service]
    index = targets.index(hop.proposed_service) if hop.proposed_service in targets else 0
    with st.form(f"edit-{hop.hop_id}", border=False):
        service = st.selectbox("Service", targets, index=index, key=f"edit-service-{hop.hop_id}")
        text = st.text_area("Input", value=hop.proposed_input, key=f"edit-input-{hop.hop_id}")
        if not st.form_submit_button("Send edited hop"):
            return
    if service == hop.proposed_service and text == hop.proposed_input:
        st.warning("Nothing changed: press Approve to send the hop as proposed.")
        return
    if act(
        connection,
        lambda: connection.client.edit_hop(
            hop.task_id, hop.hop_id,
            service_name=service if service != hop.proposed_service else None,
            input=text if text != hop.proposed_input else None,
        ),
        success=f"Edited: hop {hop.seq} went to {plain(service or '')}.",
    ):  # fmt: skip
        st.rerun()


def _reject_form(connection: Connection, hop: HopRecord) -> None:
    with st.form(f"reject-{hop.hop_id}", border=False):
        st.caption("The task fails with your reason. To send it elsewhere instead, use Edit.")
        reason = st.text_input("Reason", key=f"reject-reason-{hop.hop_id}")
        if not st.form_submit_button("Reject hop"):
            return
    if not reason.strip():
        st.warning("Say why in Reason, then press Reject hop.")
        return
    if act(
        connection,
        lambda: connection.client.reject_hop(hop.task_id, hop.hop_id, reason.strip()),
        success=f"Rejected hop {hop.seq}: the task failed with your reason.",
    ):
        st.rerun()


def _pending_hop(connection: Connection, hop: HopRecord, snapshot: Snapshot) -> None:
    with st.container(border=True, key=f"pending-{hop.hop_id}"):
        st.markdown(_hop_heading(hop, snapshot))
        st.code(hop.proposed_input, language=None, wrap_lines=True)
        approve_col, edit_col, reject_col = st.columns(3)
        if approve_col.button("Approve", key=f"approve-{hop.hop_id}", type="primary"):
            _approve(connection, hop)
        with edit_col.popover("Edit", width="stretch"):
            _edit_form(connection, hop, snapshot)
        with reject_col.popover("Reject", width="stretch"):
            _reject_form(connection, hop)


def render_pending_hops(connection: Connection, snapshot: Snapshot) -> None:
    """Step mode: each proposed hop, with Approve, Edit (service and input) and Reject."""
    if not snapshot.pending:
        return
    st.markdown(f"**Hops to approve** ({len(snapshot.pending)})")
    for hop in snapshot.pending:
        _pending_hop(connection, hop, snapshot)


def _request(connection: Connection, request: HumanRequest) -> None:
    rid = request.request_id
    with st.container(border=True, key=f"request-{rid}"):
        st.markdown(
            f"**{plain(request.service_name)}** asks, for task {short_id(request.task_id)} "
            f"({ago(request.created_at)}):"
        )
        st.code(request.prompt, language=None, wrap_lines=True)
        with st.form(f"answer-{rid}", border=False):
            answer = st.text_area("Your answer", key=f"answer-text-{rid}", height=70)
            if not st.form_submit_button("Send answer", type="primary"):
                return
    if not answer.strip():
        st.warning("Type your answer first, then press Send answer.")
        return
    if act(
        connection,
        lambda: connection.client.answer_human_request(rid, answer),
        success="Answer sent: the task goes on.",
    ):
        st.rerun()


def render_inbox(connection: Connection, snapshot: Snapshot) -> None:
    """The human inbox: each waiting request, with an answer box and Send answer."""
    if not snapshot.inbox:
        return
    st.markdown(f"**Human inbox** ({len(snapshot.inbox)})")
    for request in snapshot.inbox:
        _request(connection, request)


def _select_task(task_id: str) -> None:
    st.session_state[SELECTED_TASK] = task_id


def _task_row(task: TaskRecord, *, selected: bool) -> None:
    with st.container(border=True, key=f"task-{task.task_id}"):
        info, show = st.columns([6, 1], vertical_alignment="center")
        info.text(_one_line(task.input, 120))
        status = task.status.value.replace("_", " ")
        info.badge(status, color=_BADGE_COLORS.get(task.status, "gray"))
        mode = " · step mode" if task.step_mode else ""
        info.caption(
            f"{short_id(task.task_id)} · {plural(task.hop_count, 'hop')}{mode} · "
            f"updated {ago(task.updated_at)}"
        )
        show.button(
            "Shown" if selected else "Show",
            key=f"show-{task.task_id}",
            disabled=selected,
            on_click=_select_task,
            args=(task.task_id,),
        )


def selected_task(snapshot: Snapshot) -> TaskRecord | None:
    """The task whose hops the page shows: the one chosen, else the newest."""
    chosen = st.session_state.get(SELECTED_TASK)
    found = next((t for t in snapshot.tasks if t.task_id == chosen), None)
    return found or (snapshot.tasks[0] if snapshot.tasks else None)


def render_task_list(snapshot: Snapshot, shown: TaskRecord | None) -> None:
    """The newest tasks with their status; Show picks the one whose hops are drawn."""
    st.subheader("Tasks", anchor=False)
    if not snapshot.tasks:
        st.caption("No tasks yet: create one under New task.")
        return
    if len(snapshot.tasks) >= TASKS_SHOWN:
        st.caption(f"The {TASKS_SHOWN} newest tasks.")
    for task in snapshot.tasks:
        _task_row(task, selected=shown is not None and task.task_id == shown.task_id)


def in_app_store(task_id: str | None) -> bool:
    """Whether `task_id` is a task in this app's store (so the Stepper can open it)."""
    if not task_id:
        return False
    try:
        return runtime.shared_store().task_version(task_id) is not None
    except Exception:  # An unreadable store only means no link.
        return False
