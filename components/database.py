"""The app's database: one store shared by every session for the life of the server.

Both the runtime (its runners) and the saved settings (`components.state`) read it; it lives
apart from both so neither imports the other to reach it. `$STEPWISE_DB` names it: a SQLite
file (the default, ./stepwise.db) or a team's `postgresql://` URL (`open_store`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import streamlit as st

from agent_core.errors import AgentCoreError
from agent_core.store.open import DB_ENV, DEFAULT_DB, masked_target, open_store

if TYPE_CHECKING:
    from agent_core.store import PostgresStore, SQLiteStore

__all__ = [
    "DB_ENV",
    "DEFAULT_DB",
    "database_label",
    "render_database_down",
    "shared_store",
    "when_database_answers",
]

DATABASE_DOWN = "store_unavailable"
"""The code of the error a store raises when its database does not answer."""


# No cached function shows Streamlit's default spinner: it names the function, an internal name.
@st.cache_resource(show_spinner=False)
def shared_store() -> SQLiteStore | PostgresStore:
    """The app's database ($STEPWISE_DB: a SQLite path or a PostgreSQL URL; ./stepwise.db)."""
    return open_store()


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
