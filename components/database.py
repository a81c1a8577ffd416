"""The app's database: one store shared by every session for the life of the server.

Both the runtime (its runners) and the saved settings (`components.state`) read it; it lives
apart from both so neither imports the other to reach it. `$STEPWISE_DB` names it: a SQLite
file (the default, ./stepwise.db) or a team's `postgresql://` URL (`open_store`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import streamlit as st

from agent_core.store.open import DB_ENV, DEFAULT_DB, masked_target, open_store

if TYPE_CHECKING:
    from agent_core.store import PostgresStore, SQLiteStore

__all__ = ["DB_ENV", "DEFAULT_DB", "database_label", "shared_store"]


# No cached function shows Streamlit's default spinner: it names the function, an internal name.
@st.cache_resource(show_spinner=False)
def shared_store() -> SQLiteStore | PostgresStore:
    """The app's database ($STEPWISE_DB: a SQLite path or a PostgreSQL URL; ./stepwise.db)."""
    return open_store()


def database_label() -> str:
    """Where the tasks are kept, to show a user: a URL without its password, or the path."""
    return masked_target(os.environ.get(DB_ENV) or DEFAULT_DB)
