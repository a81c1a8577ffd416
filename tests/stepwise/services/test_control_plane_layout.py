"""A control plane's SQLite file written before the hop watch kept its deadlines in it opens,
and its hops get the new columns (a hop in flight is watched as before)."""

from __future__ import annotations

import sqlite3
import time

from stepwise.services.control_plane import ControlPlaneState

_OLD_HOPS = """
CREATE TABLE hops (
    hop_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, seq INTEGER NOT NULL, status TEXT NOT NULL,
    proposed_service TEXT NOT NULL, proposed_input TEXT NOT NULL, service_name TEXT,
    input TEXT, edited INTEGER NOT NULL DEFAULT 0, result TEXT, error TEXT,
    service_task_id TEXT, message_id TEXT NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, UNIQUE (task_id, seq));
CREATE TABLE tasks (
    task_id TEXT PRIMARY KEY, input TEXT NOT NULL, status TEXT NOT NULL,
    step_mode INTEGER NOT NULL, session_id TEXT, result TEXT, error TEXT,
    orchestrator_state TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL, updated_at REAL NOT NULL);
"""


def test_an_older_file_gets_the_hop_watch_columns(tmp_path) -> None:
    path = tmp_path / "control_plane.db"
    old = sqlite3.connect(path)
    old.executescript(_OLD_HOPS)
    sent = time.time() - 100
    old.execute("INSERT INTO tasks VALUES ('t', 'x', 'running', 0, NULL, NULL, NULL, '{}', ?, ?)",
                (sent, sent))  # fmt: skip
    old.execute("INSERT INTO hops VALUES ('h', 't', 1, 'sent', 'a', 'x', 'a', 'x', 0, NULL, "
                "NULL, NULL, 'm', ?, ?)", (sent, sent))  # fmt: skip
    old.commit()
    old.close()

    state = ControlPlaneState(path)
    assert [hop.hop_id for hop in state.due_hops(now=time.time(), timeout=10)] == ["h"]
    assert state.claim_resend("h", now=time.time(), timeout=10, until=time.time() + 10)
    assert not state.claim_resend("h", now=time.time() + 60, timeout=10, until=time.time())
