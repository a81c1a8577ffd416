"""UI: how long the stepper page takes to rerun for tasks of 50, 200 and 500 steps (AppTest),
and how many bytes the DAG page sends to the browser."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from agent_core.llms import FunctionLLM
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from stepwise.app.components.dag_view import dag_html

ROOT = Path(__file__).resolve().parent.parent
SIZES = (50, 200, 500)
ACTION = 'Thought: again.\nAction: add\nAction Input: {"a": 1, "b": 2}'


def _task_with_steps(db: Path, steps: int) -> str:
    """A stored ReAct task (demo spec, so the page can rebuild it) with `steps` steps."""
    spec = AgentSpec(max_iterations=steps + 5, workspace=str(db.parent / "ws"))
    runner = spec.build_runner(store=SQLiteStore(db))
    runner.agent_worker.llm = FunctionLLM(lambda messages, tools: ACTION)  # type: ignore[attr-defined]
    task = runner.create_task("Add 1 and 2, again and again.")
    for _ in range(steps):
        runner.run_step(task.task_id)
    return task.task_id


def rerun_ms(steps: int, *, reruns: int = 5) -> dict:
    """Median AppTest rerun time of the stepper showing a task of `steps` steps."""
    from streamlit.testing.v1 import AppTest

    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "ui.db"
        task_id = _task_with_steps(db, steps)
        os.environ["STEPWISE_DB"] = str(db)
        app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        app.session_state["stepwise.task_id"] = task_id
        app.run()  # The first run loads the task and builds the runner.
        assert not app.exception, app.exception
        samples = []
        for _ in range(reruns):
            started = time.perf_counter()
            app.run()
            samples.append(time.perf_counter() - started)
        state = SQLiteStore(db).load_task(task_id)
        assert state is not None
        return {
            "steps": steps,
            "rerun_ms_median": statistics.median(samples) * 1e3,
            "dag_bytes": len(dag_html(state).encode()),
        }


def measure() -> list[dict]:
    """Rerun time and DAG bytes for each task size."""
    import streamlit as st

    results = []
    for steps in SIZES:
        st.cache_resource.clear()
        st.cache_data.clear()
        results.append(rerun_ms(steps))
    return results


if __name__ == "__main__":
    for row in measure():
        print(row)
