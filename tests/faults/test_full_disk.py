"""A full disk, simulated with RLIMIT_FSIZE: the store reports it plainly and loses nothing.

The child process may not grow any file past a limit, as on a full disk. SQLite then fails
the commit and rolls back itself; the store's own ROLLBACK used to raise "cannot rollback -
no transaction is active", which replaced the real cause.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, resource, signal, sys
from agent_core.errors import StoreError
from agent_core.llms import ScriptedLLM
from agent_core.runtime.runner import AgentRunner
from agent_core.store import SQLiteStore
from agent_core.workers import ReActAgentWorker

path = sys.argv[1]
agent = AgentRunner(ReActAgentWorker([], ScriptedLLM([])), store=SQLiteStore(path))
kept = agent.create_task("kept").task_id
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # A write past the limit fails with EFBIG.
resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000))
try:
    for n in range(1000):
        agent.create_task("x" * 50_000)
    print(json.dumps({"error": None}))
except StoreError as exc:
    print(json.dumps({"error": str(exc), "type": type(exc).__name__, "kept": kept}))
"""


def test_a_full_disk_is_a_store_error_that_says_so_and_keeps_what_was_stored(tmp_path: Path):
    db = tmp_path / "full.db"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(db)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])

    assert report["type"] == "StoreError", report
    assert "disk is full" in report["error"] and "cannot rollback" not in report["error"]

    from agent_core.store import SQLiteStore

    store = SQLiteStore(db)  # The file opens again, and the task stored before is intact.
    try:
        state = store.load_task(report["kept"])
        assert state is not None and state.task.input == "kept"
    finally:
        store.close()
