"""The app's database: one SQLite store shared by every session for the life of the server.

Both the runtime (its runners) and the saved settings (`components.state`) read it; it lives
apart from both so neither imports the other to reach it.
"""

from __future__ import annotations

import os

import streamlit as st

from agent_core.store import SQLiteStore

__all__ = ["DB_ENV", "DEFAULT_DB", "shared_store"]

DB_ENV = "STEPWISE_DB"
DEFAULT_DB = "stepwise.db"


# No cached function shows Streamlit's default spinner: it names the function, an internal name.
@st.cache_resource(show_spinner=False)
def shared_store() -> SQLiteStore:
    """The embedded database ($STEPWISE_DB, default ./stepwise.db)."""
    return SQLiteStore(os.environ.get(DB_ENV, DEFAULT_DB))
