"""Page speed as a person feels it: real Chromium against `streamlit run app.py`.

Measured on demo ReAct tasks of 10 and 500 completed steps, built through the runtime (the
demo spec, a `ScriptedLLM`, the SQLite store the app reads through `STEPWISE_DB`), beside
1,000 short tasks for the Tasks page:

- Run step: from the click until the page is idle (no script running) and the DAG changed,
  at 10 and at 500 steps, and at 500 steps with "Show all" ticked (every step in a table).
- Page load: from opening the task's URL until the DAG is drawn and the page idle, at 500
  steps.
- Tasks page: from opening `/tasks` until the page is idle with its task rows drawn, with
  1,000 tasks in the store.
- Cold start: from starting `streamlit run app.py` until the first page ("/", the new task
  form) is idle in Chromium: the process's imports, the server's start and the first run.
  The server runs with the app's settings (`stepwise ui`'s flags) and Python's compiled
  bytecode, as an installed app has it; the first start, which compiles it, is its own row.

Each sample uses a task of its own, opened fresh (a new browser session), so no sample pays
for the one before; one warm-up run first builds the app's runner. Medians are printed and
written to bench/results/page_speed.json. `make bench` runs it; `python -m bench.page_speed
--runs 3` is quicker. The goals are the issue's; nothing here asserts them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from agent_core.llms import ScriptedLLM
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from stepwise.app.config import streamlit_flags

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "page_speed.json"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [  # As tests/e2e/conftest.py.
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
RUNS = 7
SMALL, LARGE = 10, 500
"""Completed steps of the short and the long tasks."""
LISTED = 1_000
"""Tasks in the store when the Tasks page is measured."""
THREAD = 3
"""Tasks in each conversation the Tasks page lists."""
TASK = "Add 1 and 2, again and again."
ANSWER = "Thought: done.\nAnswer: 3"
ACTION = 'Thought: again.\nAction: add\nAction Input: {"a": 1, "b": 2}'
TIMEOUT_S = 90.0
POLL_S = 0.01

_DAG = """() => window.stepwiseDag
    ? window.stepwiseDag.nodes.get().map(n => n.id + ':' + n.status).sort().join(',')
    : null"""
_SCRIPT_STATE = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return app ? app.getAttribute('data-test-script-state') : null;
}"""


@dataclass
class Measure:
    """One measured action and its samples (seconds)."""

    name: str
    steps: int
    goal_s: float
    samples_s: list[float] = field(default_factory=list)

    def row(self) -> dict:
        """The JSON row: samples, median, min, max and the goal."""
        return {
            "name": self.name,
            "steps": self.steps,
            "goal_s": self.goal_s,
            "samples_s": [round(s, 4) for s in self.samples_s],
            "median_s": round(statistics.median(self.samples_s), 4),
            "min_s": round(min(self.samples_s), 4),
            "max_s": round(max(self.samples_s), 4),
        }


def _task_with_steps(db: Path, workspaces: Path, steps: int) -> str:
    """A stored demo ReAct task with `steps` completed steps, made through the runtime."""
    spec = AgentSpec(
        name="demo-react",
        worker="react",
        tools=("arithmetic",),
        max_iterations=1000,  # One spec for every task: the app builds one runner for all.
        workspace=str(workspaces),
    )
    store = SQLiteStore(db)
    try:
        runner = spec.build_runner(store=store)
        runner.agent_worker.llm = ScriptedLLM([ACTION] * steps)  # type: ignore[attr-defined]
        task_id = runner.create_task(TASK).task_id
        while len(runner.get_task_state(task_id).completed) < steps:
            runner.run_step(task_id)
    finally:
        store.close()
    return task_id


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def _server(folder: Path, db: Path, *, wait: bool = True) -> Iterator[str]:
    """`streamlit run app.py` on a free port (as the browser tests start it).

    With `wait`, yields once the server answers its health check; without, at once.
    """
    from stepwise.app.components.dag_view import ensure_static_assets

    ensure_static_assets()
    port = _free_port()
    env = {**os.environ, "STEPWISE_DB": str(db), "STEPWISE_WORKSPACES": str(folder / "ws")}
    # Python's compiled bytecode, as an installed app has it (pip writes it; a first run
    # does): this shell may forbid writing it, and uv installs none.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    command = [
        sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
        *streamlit_flags(port=port),  # The app's settings, as `stepwise ui` passes them.
        "--server.enableStaticServing", "true", "--server.fileWatcherType", "none",
    ]  # fmt: skip
    log_path = folder / "streamlit.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=log)
        url = f"http://localhost:{port}"
        try:
            if wait:
                _wait_until_up(url, server)
            yield url
        except Exception:
            print(log_path.read_text()[-3000:], file=sys.stderr)
            raise
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()


def _wait_until_up(url: str, server: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    raise RuntimeError(f"streamlit did not answer at {url} within {timeout:.0f}s")


class _Tab:
    """A Chromium tab on the app, with what the measurements read from it."""

    def __init__(self, page, url: str) -> None:
        self.page = page
        self.url = url
        self._dag_frame = None

    def open(self, task_id: str) -> float:
        """Open the task's URL; seconds until the DAG is drawn and the page idle."""
        self._dag_frame = None
        started = time.perf_counter()
        self.page.goto(f"{self.url}/?task={task_id}")
        return self._until(lambda: self.idle() and bool(self.dag())) - started

    def click(self, control) -> float:
        """Click `control`; seconds until the page is idle and the DAG changed."""
        before = self.dag()
        control.wait_for(timeout=TIMEOUT_S * 1000)
        started = time.perf_counter()
        control.click()
        return self._until(lambda: self.idle() and self.dag() not in (None, before)) - started

    def tick_show_all(self, steps: int) -> None:
        """Tick "Show all N steps" and wait until the page is idle with the table of steps."""
        self.page.get_by_text(re.compile(r"^Show all [\d,]+ steps")).first.click()
        table = self.page.locator('[data-testid="stDataFrame"]')
        self._until(lambda: self.idle() and table.count() >= 1)

    def dag(self) -> str | None:
        """The DAG's nodes (id:status, sorted), or None while it is not drawn."""
        frames = [self._dag_frame] if self._dag_frame is not None else []
        for frame in frames + [f for f in self.page.frames if f is not self._dag_frame]:
            try:
                nodes = frame.evaluate(_DAG)
            except Exception:  # A frame being replaced by a rerun.
                continue
            if nodes is not None:
                self._dag_frame = frame
                return nodes
        self._dag_frame = None
        return None

    def idle(self) -> bool:
        """Whether no script run is under way or asked for."""
        return self.page.evaluate(_SCRIPT_STATE) == "notRunning"

    def _until(self, check: Callable[[], bool]) -> float:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            if check():
                return time.perf_counter()
            time.sleep(POLL_S)
        raise TimeoutError(f"the page did not get there within {TIMEOUT_S:.0f} s: {self.url}")


def _run_step(tab: _Tab):
    return tab.page.get_by_role("button", name="Run step", exact=True).first


def _listed_tasks(db: Path, workspaces: Path, count: int) -> None:
    """`count` short demo tasks for the Tasks page: a tenth of them in conversations of
    three finalized tasks (one step each), the rest created and not run."""
    spec = AgentSpec(
        name="demo-react",
        worker="react",
        tools=("arithmetic",),
        max_iterations=1000,
        workspace=str(workspaces),
    )
    store = SQLiteStore(db)
    try:
        runner = spec.build_runner(store=store)
        threaded = count // 10 // THREAD * THREAD
        runner.agent_worker.llm = ScriptedLLM([ANSWER] * threaded)  # type: ignore[attr-defined]
        earlier = None
        for number in range(threaded):
            after = {} if number % THREAD == 0 else {"continue_from": earlier}
            earlier = runner.create_task(f"Listed task {number}: and again?", **after).task_id
            runner.run_step(earlier)
            runner.finalize_response(earlier)
        for number in range(threaded, count):
            runner.create_task(f"Listed task {number}: add {number} and 2.")
    finally:
        store.close()


def open_tasks_page(tab: _Tab) -> float:
    """Open the Tasks page; seconds until it is idle with its task rows drawn."""
    rows = tab.page.get_by_role("button", name="Open", exact=True)
    started = time.perf_counter()
    tab.page.goto(f"{tab.url}/tasks")
    return tab._until(lambda: tab.idle() and rows.count() > 0) - started


def cold_start(folder: Path, db: Path, browser) -> float:
    """Seconds from starting the app's process until its first page is idle in Chromium.

    The first page is "/" with no task: the new task form, whose "Create task" button is
    the last thing it draws.
    """
    page = browser.new_context(viewport={"width": 1500, "height": 1000}).new_page()
    create = page.get_by_role("button", name="Create task", exact=True)
    started = time.perf_counter()
    with _server(folder, db, wait=False) as url:
        tab = _Tab(page, url)
        while True:
            try:
                page.goto(url, timeout=TIMEOUT_S * 1000)
                break
            except Exception:  # Not listening yet: try again at once.
                if time.perf_counter() - started > TIMEOUT_S:
                    raise
                time.sleep(POLL_S)
        finished = tab._until(lambda: tab.idle() and create.count() > 0)
    page.context.close()
    return finished - started


def measure(runs: int = RUNS) -> list[Measure]:
    """Every measurement, `runs` samples each."""
    from playwright.sync_api import sync_playwright

    small = Measure("Run step to updated page", SMALL, 0.3)
    large = Measure("Run step to updated page", LARGE, 0.3)
    show_all = Measure('Run step to updated page, "Show all" ticked', LARGE, 1.0)
    load = Measure("Page load to DAG drawn", LARGE, 1.0)
    tasks = Measure(f"Tasks page, {LISTED:,} tasks", 0, 1.0)
    cold = Measure("Cold start to first page idle", 0, 4.0)
    first = Measure("Cold start, the first (compiles bytecode)", 0, 4.0)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        db = folder / "page_speed.db"
        print(f"building {runs * 3 + 1} demo tasks and {LISTED:,} listed ones…", flush=True)
        warm_up = _task_with_steps(db, folder / "ws", SMALL)
        ten = [_task_with_steps(db, folder / "ws", SMALL) for _ in range(runs)]
        hundreds = [_task_with_steps(db, folder / "ws", LARGE) for _ in range(runs)]
        shown_all = [_task_with_steps(db, folder / "ws", LARGE) for _ in range(runs)]
        _listed_tasks(db, folder / "ws", LISTED - len(ten) - len(hundreds) * 2 - 1)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            first.samples_s.append(cold_start(folder, db, browser))
            for _ in range(runs):
                cold.samples_s.append(cold_start(folder, db, browser))
            print("  cold starts done", flush=True)
            with _server(folder, db) as url:
                page = browser.new_context(viewport={"width": 1500, "height": 1000}).new_page()
                tab = _Tab(page, url)
                tab.open(warm_up)  # Builds the app's runner and loads vis-network once.
                tab.click(_run_step(tab))
                open_tasks_page(tab)  # Its first run imports the page's modules.
                for i in range(runs):
                    tab.open(ten[i])
                    small.samples_s.append(tab.click(_run_step(tab)))
                    load.samples_s.append(tab.open(hundreds[i]))
                    large.samples_s.append(tab.click(_run_step(tab)))
                    tab.open(shown_all[i])
                    tab.tick_show_all(show_all.steps)
                    show_all.samples_s.append(tab.click(_run_step(tab)))
                    tasks.samples_s.append(open_tasks_page(tab))
                    print(f"  run {i + 1}/{runs} done", flush=True)
            browser.close()
    return [small, large, show_all, load, tasks, cold, first]


def table(measures: list[Measure], runs: int) -> str:
    """The printed table: median, min and max against the goal."""
    lines = [
        f"Page speed in Chromium (seconds, median of {runs} runs, each on a fresh task)",
        f"  {'measure':48} {'steps':>5} {'median':>7} {'min':>6} {'max':>6} {'goal':>6}",
    ]
    for m in measures:
        row = m.row()
        lines.append(
            f"  {m.name:48} {m.steps or '':5} {row['median_s']:7.2f} {row['min_s']:6.2f} "
            f"{row['max_s']:6.2f} {'≤' + format(m.goal_s, 'g'):>6}"
        )
    return "\n".join(lines)


def main() -> None:
    """Measure, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description="Page speed in real Chromium.")
    parser.add_argument("--runs", type=int, default=RUNS, help="samples of each measure")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = parser.parse_args()
    started, load_before = time.time(), os.getloadavg()[0]
    measures = measure(args.runs)
    load = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    results = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "load_average_1min": load,  # Before and after: a busy machine inflates every figure.
        "browser": "chromium (headless)",
        "runs": args.runs,
        "page_speed": [m.row() for m in measures],
        "seconds": round(time.time() - started, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(table(measures, args.runs))
    print(f"  (1-minute load average {load[0]:.1f} before, {load[1]:.1f} after)")
    print(
        f"\nwritten to {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}"
    )


if __name__ == "__main__":
    main()
