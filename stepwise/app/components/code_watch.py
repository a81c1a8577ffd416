"""Re-run on save in the app: one watcher per process reloads the user's code when it changes.

`stepwise ui --reload` (on by default with `--agent` / `--tools` file targets) sets
`$STEPWISE_RELOAD`; the app then keeps one `CodeWatcher` for the server's life
(`st.cache_resource`), which polls the user's files on a thread of its own and calls
`user_code.reload()` on a save. Each page run also polls once, so a save is seen by the next
click without waiting for the thread, and the Stepper listens (a fragment every 2 s) so a
save shows unasked. The changes seen are counted and timed: the Stepper offers "Re-run from
step N" on a task whose steps ran before the latest one.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import streamlit as st

from agent_core import user_code
from agent_core.types import utcnow
from agent_core.user_code.watch import DEFAULT_POLL_S, CodeWatcher, registry_files

__all__ = [
    "RELOAD_ENV",
    "CodeChange",
    "latest_change",
    "reload_enabled",
    "render_change_listener",
    "render_reload_watch",
    "watch_user_code",
]

logger = logging.getLogger(__name__)

RELOAD_ENV = "STEPWISE_RELOAD"
"""`1` to watch the user's code and reload it on a save (`stepwise ui --reload`)."""
_CHECKED_AT = "stepwise.code_change_seen"
"""The change count this session drew last (a newer one reruns the page)."""


@dataclass(frozen=True)
class CodeChange:
    """The latest save the watcher saw: how many so far, when, and which files."""

    count: int
    at: datetime
    files: tuple[Path, ...]


@dataclass
class _Watch:
    """The process's watcher and what it saw; a lock, since page runs poll beside its thread."""

    watcher: CodeWatcher | None = None
    latest: CodeChange | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def on_change(self, files: list[Path]) -> None:
        user_code.reload()
        count = self.latest.count + 1 if self.latest else 1
        self.latest = CodeChange(count=count, at=utcnow(), files=tuple(files))

    def poll(self) -> None:
        if self.watcher is not None:
            with self.lock:
                self.watcher.check()

    def run(self) -> None:
        while not self.stop.wait(DEFAULT_POLL_S):
            try:
                self.poll()
            except Exception:  # A dead watcher would leave every page stale: keep polling.
                logger.exception("watching the user's code failed; polling goes on")


def reload_enabled() -> bool:
    """Whether the app watches the user's code (`$STEPWISE_RELOAD` is 1, true or yes)."""
    return os.environ.get(RELOAD_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@st.cache_resource(show_spinner=False, on_release=lambda watch: watch.stop.set())
def _watch() -> _Watch:
    watch = _Watch()
    # Not CodeWatcher.start(): its thread would poll beside page runs without the lock.
    watch.watcher = CodeWatcher(
        lambda: registry_files(user_code.default_registry()), watch.on_change
    )
    watch.poll()  # The first poll only learns the files.
    thread = threading.Thread(target=watch.run, name="stepwise-code-watcher", daemon=True)
    thread.start()
    return watch


def watch_user_code() -> CodeChange | None:
    """Start the process's watcher if reload is on, poll once, and give the latest change."""
    if not reload_enabled():
        return None
    watch = _watch()
    watch.poll()
    return watch.latest


def latest_change() -> CodeChange | None:
    """The latest save seen (None with reload off or before any), polling nothing."""
    return _watch().latest if reload_enabled() else None


@st.fragment(run_every=2)
def _rerun_on_change() -> None:
    """Rerun the page when a save was seen since it was drawn, so the offer shows unasked."""
    if _count(latest_change()) != st.session_state.get(_CHECKED_AT):
        st.rerun(scope="app")


def _count(change: CodeChange | None) -> int:
    return change.count if change else 0


def render_reload_watch() -> None:
    """Watch the user's code: start the watcher, poll once (nothing with reload off)."""
    if reload_enabled():
        st.session_state[_CHECKED_AT] = _count(watch_user_code())  # What this run draws.


def render_change_listener() -> None:
    """Rerun the page when the watcher sees a save (nothing with reload off).

    Called from a page, not from the app's entry script: a fragment there reruns without the
    page's own script, and the browser shows "Page not found".
    """
    if reload_enabled():
        _rerun_on_change()
