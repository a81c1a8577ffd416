"""The app's database: one `Host` (agent_core.host) shared by every session for the server's life.

Both the runtime (its runners) and the saved settings (`state`) read its store; it
lives apart from both so neither imports the other to reach it. `$STEPWISE_DB` names it: a
SQLite file (the default, ./stepwise.db) or a team's `postgresql://` URL. The host hears the
other processes on it (`stepwise serve`, a user's attached program): their commits, and the
app's Stop for a step one of them runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import streamlit as st

from agent_core.errors import AgentCoreError
from agent_core.host import DB_ENV, DEFAULT_DB, Host, masked_target

if TYPE_CHECKING:
    from agent_core.store import PostgresStore, SQLiteStore

__all__ = [
    "DB_ENV",
    "DEFAULT_DB",
    "database_label",
    "render_database_down",
    "shared_host",
    "shared_store",
    "when_database_answers",
]

DATABASE_DOWN = "store_unavailable"
"""The code of the error a store raises when its database does not answer."""


# No cached function shows Streamlit's default spinner: it names the function, an internal name.
# Released (a cache cleared, the server stopping): its change feed and store are closed.
@st.cache_resource(show_spinner=False, on_release=lambda host: host.close())
def shared_host() -> Host:
    """The app's host over $STEPWISE_DB (a SQLite path or a PostgreSQL URL; ./stepwise.db)."""
    return Host()


def shared_store() -> SQLiteStore | PostgresStore:
    """The app's database: the shared host's store."""
    return shared_host().store  # type: ignore[return-value]


def database_label() -> str:
    """Where the tasks are kept, to show a user: a URL without its password, or the path."""
    return masked_target(os.environ.get(DB_ENV) or DEFAULT_DB)


@contextmanager
def when_database_answers() -> Iterator[None]:
    """Draw a page; if its database does not answer, say so (from the error's code) instead.

    Anything else passes on. Without this the page showed a traceback, or blamed settings
    "saved by another version" that it only could not read.
    """
    try:
        yield
    except AgentCoreError as error:
        if error.code != DATABASE_DOWN:
            raise
        render_database_down(error)


def render_database_down(error: AgentCoreError) -> None:
    """The database is down: where it is (no password), how to fix it, and a Try again button."""
    where = error.params.get("where") or database_label()
    st.error(
        f"**The database at {where} does not answer.** Start it (a PostgreSQL server must be "
        f"running and accept this user), or open another database: restart the app with "
        f"`stepwise ui --db PATH` or another `{DB_ENV}`. Then press **Try again**.",
        icon=":material/cloud_off:",
    )
    if detail := error.params.get("detail"):
        st.caption(f"The database driver said: {detail}")
    if st.button("Try again", key="database-down-retry", type="primary"):
        st.rerun()
