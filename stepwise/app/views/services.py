"""Services: watch and steer multi-agent services (`stepwise.services`) through a control plane.

Pointed at the local demo control plane (scripted services inside this app, no Redis) or at
one started with `stepwise services up`. It shows the registered services, the tasks with
their status, a New task form, what waits for a person (step-mode hops to approve, edit or
reject; the human inbox) and the chosen task's hops as a live DAG, each hop's own step DAG
one click away on the Stepper. The session keeps ids and UI choices only; everything else is
read from the control plane on each run. While Live is on, the panels below the picker
rerun on their own every few seconds (a fragment: the rest of the page does not).
"""

from __future__ import annotations

import httpx
import streamlit as st

from stepwise.app.components.actions import show_notice
from stepwise.app.components.messages import plain
from stepwise.app.components.services_connection import Connection, explain_error, render_connection
from stepwise.app.components.services_panels import (
    NOTICE_AT,
    Snapshot,
    load_snapshot,
    render_inbox,
    render_new_task,
    render_pending_hops,
    render_services,
    render_task_list,
    selected_task,
)
from stepwise.app.components.services_task_view import render_task_view
from stepwise.services import ServicesError

LIVE_EVERY_S = 2.0


def _waiting(connection: Connection, snapshot: Snapshot) -> None:
    st.subheader("Waiting for you", anchor=False)
    if not snapshot.pending and not snapshot.inbox:
        st.caption(
            "Nothing waits for you. Step-mode hops to approve and questions for a person "
            "appear here."
        )
    render_pending_hops(connection, snapshot)
    render_inbox(connection, snapshot)


def _panels(connection: Connection) -> None:
    show_notice(NOTICE_AT)
    try:
        snapshot = load_snapshot(connection)
    except (httpx.HTTPError, ServicesError) as exc:
        st.error(plain(explain_error(exc, connection)), icon=":material/error:")
        st.button("Try again", key="services.retry")
        return
    left, right = st.columns([2, 3], gap="large")
    with left:
        render_new_task(connection)
        _waiting(connection, snapshot)
        render_services(snapshot)
    with right:
        task = selected_task(snapshot)
        if task is not None:
            render_task_view(connection, snapshot, task)
        render_task_list(snapshot, task)


def render() -> None:
    """Draw the Services page."""
    show_notice()
    st.header("Services", anchor=False)
    connection = render_connection()
    if connection is None:
        st.stop()
    live_col, refresh_col = st.columns([4, 1], vertical_alignment="center")
    live = live_col.toggle(
        "Live", value=True, key="services.live",
        help=f"Read the control plane again every {LIVE_EVERY_S:g} s. Off: press Refresh.",
    )  # fmt: skip
    refresh_col.button("Refresh", key="services.refresh", width="stretch")
    st.fragment(_panels, run_every=LIVE_EVERY_S if live else None)(connection)
