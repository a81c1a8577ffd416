"""Re-run on save: a watcher that polls the user's code files and says when one changed.

It polls modification times (and sizes) on a thread of its own, once a second by default: a
project's few files cost nothing to stat, and no inotify watch is set, so a checkout with a
large `.venv` cannot overflow the kernel's queue as a recursive watcher does. The files are
those of the user's modules imported so far and the file targets registered (`--agent
file.py:build_agent`), and every file once seen stays watched: a reload forgets the modules
until the next build imports them again, and a file saved with a syntax error is imported by
nobody, yet its next save is the fix.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from agent_core.user_code.imports import user_module_files
from agent_core.user_code.registry import UserCodeRegistry

__all__ = ["DEFAULT_POLL_S", "CodeWatcher", "registry_files"]

logger = logging.getLogger(__name__)

DEFAULT_POLL_S = 1.0

_Stamp = tuple[int, int] | None
"""A file's (mtime in ns, size); None when it is missing."""


def registry_files(registry: UserCodeRegistry) -> list[Path]:
    """The user's code files: the registered file targets and the user modules imported now.

    Only recorded targets are read: nothing is imported on the watcher's thread.
    """
    refs = [registry.agent_target(name) for name in registry.names("agent")]
    refs = [ref.rpartition(":")[0] for ref in refs if ref]
    refs += [registry.tools_module(name) or "" for name in registry.names("tools")]
    files = [Path(ref) for ref in refs if ref.endswith(".py")]
    return files + user_module_files()


class CodeWatcher:
    """Polls files and calls `on_change(files)` with those that changed; it reloads nothing.

    Args:
        files: What to watch, asked on every poll (new files join without firing).
        on_change: Called from the watcher's thread with the files that changed.
        interval: Seconds between polls.
    """

    def __init__(
        self,
        files: Callable[[], Iterable[Path]],
        on_change: Callable[[list[Path]], None],
        *,
        interval: float = DEFAULT_POLL_S,
    ) -> None:
        self._files = files
        self._on_change = on_change
        self._interval = interval
        self._stamps: dict[Path, _Stamp] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> list[Path]:
        """Poll once: the files that changed since the last poll (`on_change` is called)."""
        for path in self._files():
            resolved = path.resolve()
            if resolved not in self._stamps:
                self._stamps[resolved] = _stamp(resolved)
        changed = []
        for path, before in self._stamps.items():
            now = _stamp(path)
            if now != before:
                self._stamps[path] = now
                changed.append(path)
        if changed:
            self._on_change(changed)
        return changed

    def start(self) -> CodeWatcher:
        """Poll on a daemon thread until `stop()`."""
        if self._thread is None:
            self.check()  # The first poll only learns the files.
            self._thread = threading.Thread(target=self._run, name="stepwise-code-watcher")
            self._thread.daemon = True
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop polling."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.check()
            except Exception:  # A watcher that dies silently would leave the page stale.
                logger.exception("watching the user's code failed; polling goes on")


def _stamp(path: Path) -> _Stamp:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
