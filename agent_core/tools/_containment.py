"""How run_python holds model code so that every process it starts ends with its run.

Two ways, chosen once per process by a probe:
- a PID namespace (the launcher makes one, in a user namespace of its own unless root). The
  code cannot signal or even see its launcher, and the kernel kills everything in the
  namespace when its init ends. Nothing is needed here beyond the probe.
- where namespaces are refused (no user namespaces for unprivileged users, a container's
  seccomp profile, not Linux): the launcher is a child subreaper, and the code may kill it.
  So while such a run lasts, this process is a child subreaper too: the launcher's orphans
  come to it, not to init, and `release` kills and reaps them when the run ends. It tells
  them from its own children by a mark the launcher gives the code: a hard RLIMIT_RTTIME
  below this process's, which the code and all it starts inherit and cannot raise again
  without CAP_SYS_RESOURCE (root has it, so as root this way holds only against code that
  does not look for it).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

__all__ = ["LAUNCHER", "adopt", "mark", "pid_namespaces", "release", "sweep"]

logger = logging.getLogger(__name__)

LAUNCHER = Path(__file__).with_name("_sandbox_launcher.py")
_PR_SET_CHILD_SUBREAPER = 36
_SWEEP_SECONDS = 2.0
_RTTIME_LINE = "Max realtime timeout"
_UNMARKED = 2**62  # Below "unlimited", above any real-time budget a process would be given.

_lock = threading.Lock()
_sweeping = threading.Lock()  # one sweep at a time: a pid another sweep reaped may be reused
_probed: list[bool] = []
_adopting = 0


def pid_namespaces() -> bool:
    """Whether the launcher can hold code in a PID namespace here (probed once)."""
    with _lock:
        if not _probed:
            _probed.append(_probe())
        return _probed[0]


def _probe() -> bool:
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", str(LAUNCHER), "--probe"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        why = str(exc)
    else:
        if done.returncode == 0:
            return True
        why = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
    logger.warning(
        "run_python: no PID namespace here (%s); model code is held by subreapers instead,"
        " which a process it detaches outlives only if this app is killed (README, Security)",
        why,
    )
    return False


def mark() -> int | None:
    """The hard RLIMIT_RTTIME that marks the code's processes (None: no room below ours)."""
    kind = getattr(resource, "RLIMIT_RTTIME", None)
    if kind is None:  # Not Linux
        return None
    hard = resource.getrlimit(kind)[1]
    if hard == resource.RLIM_INFINITY:
        return _UNMARKED
    return hard - 1 if hard > 1 else None


def adopt() -> None:
    """Make this process a child subreaper until every `adopt` has had its `release`."""
    global _adopting
    with _lock:
        _adopting += 1
        if _adopting == 1:
            _set_subreaper(True)


def release() -> None:
    """Kill and reap the marked orphans, then end this `adopt` (blocking: see `sweep`)."""
    global _adopting
    try:
        sweep()
    finally:
        with _lock:
            _adopting -= 1
            if _adopting == 0:
                _set_subreaper(False)


def _set_subreaper(on: bool) -> None:
    try:
        ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
    except (OSError, AttributeError):  # Not Linux: orphans go to init.
        pass


def sweep() -> None:
    """Kill and reap every marked child of this process, and so, round by round, all below.

    Milliseconds; up to 2 s against code that keeps forking (its process limit bounds it).
    """
    limit = mark()
    if limit is None:
        return
    with _sweeping:
        _sweep(limit)


def _sweep(limit: int) -> None:
    killed: set[int] = set()
    deadline = time.monotonic() + _SWEEP_SECONDS
    while time.monotonic() < deadline:
        found = _marked_children(limit) - killed
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # Our child: its pid is ours until reaped.
        killed |= found
        killed -= _reaped(killed)
        if not found and not killed:
            return
        time.sleep(0.005)


def _reaped(pids: set[int]) -> set[int]:
    """Those of `pids` (killed children of ours) that are reaped now."""
    done = set()
    for pid in pids:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                done.add(pid)
        except ChildProcessError:  # Not ours any more (or reaped already).
            done.add(pid)
    return done


def _marked_children(limit: int) -> set[int]:
    """This process's children whose hard RLIMIT_RTTIME is at most `limit` (the mark)."""
    me, found = os.getpid(), set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if name.isdigit() and _parent(name) == me and _rttime_hard(name) <= limit:
            found.add(int(name))
    return found


def _parent(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # The name field may hold spaces or ')': the ppid follows the last ')'.
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _rttime_hard(pid: str) -> float:
    try:
        with open(f"/proc/{pid}/limits") as limits:
            for line in limits:
                if line.startswith(_RTTIME_LINE):
                    hard = line[len(_RTTIME_LINE) :].split()[1]
                    return float("inf") if hard == "unlimited" else int(hard)
    except (OSError, IndexError, ValueError):
        pass
    return float("inf")
