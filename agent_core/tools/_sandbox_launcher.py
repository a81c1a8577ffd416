"""The run_python launcher: starts the model's code, then removes every process it left.

Run by path as `python -I -S _sandbox_launcher.py LIMITS_JSON CODE_ARGV...`, with the clean
environment the tool builds: the standard library only, so it starts in milliseconds, and so
the code's parent process holds no key (`/proc/<ppid>/environ` shows the clean environment).

It makes itself a child subreaper (Linux), so a process the code starts and orphans — even
one that left the session with `setsid` — becomes the launcher's child instead of init's.
When the code exits, or on SIGTERM from the tool (timeout, output flood, cancelled step),
the launcher kills every process below it, reaps them, and exits as the code did (a code
killed by a signal makes the launcher die by the same signal, so the tool can say why).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys
import time

_PR_SET_CHILD_SUBREAPER = 36
_SWEEP_SECONDS = 2.0


def _become_subreaper() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # Not Linux: orphans go to init, as before.
        pass


def _lower(kind: int, soft: int, hard: int | None = None) -> None:
    """Set a limit, never above the hard limit already in force (that would fail)."""
    _, current_hard = resource.getrlimit(kind)
    hard = soft if hard is None else hard
    if current_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    resource.setrlimit(kind, (soft, hard))


def _apply_limits(limits: dict[str, int]) -> None:
    megabyte = 1024 * 1024
    _lower(resource.RLIMIT_AS, limits["memory_mb"] * megabyte)
    _lower(resource.RLIMIT_CPU, limits["cpu_s"], limits["cpu_s"] + 1)  # soft: SIGXCPU
    _lower(resource.RLIMIT_FSIZE, limits["max_file_mb"] * megabyte)
    _lower(resource.RLIMIT_CORE, 0)
    if limits.get("nproc") is not None:
        _lower(resource.RLIMIT_NPROC, limits["nproc"])


def _children() -> list[int]:
    """The launcher's child processes, read from /proc (zombies included)."""
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                # The name field may hold spaces or ')': the ppid follows the last ')'.
                ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == me:
            found.append(int(name))
    return found


def _sweep() -> None:
    """Kill and reap every process below the launcher (orphans arrive as its children)."""
    deadline = time.monotonic() + _SWEEP_SECONDS
    while time.monotonic() < deadline:
        for pid in _children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return  # No child left at all.
        time.sleep(0.005)


def _exit_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        os._exit(128 + number)  # A signal whose default is not to terminate.
    os._exit(os.waitstatus_to_exitcode(status))


def main() -> None:
    """Start the code, wait for it, sweep, and exit as it did."""
    limits, argv = json.loads(sys.argv[1]), sys.argv[2:]
    _become_subreaper()
    _lower(resource.RLIMIT_CORE, 0)

    def stop(signum: int, frame: object) -> None:
        _sweep()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    pid = os.fork()
    if pid == 0:  # The code: limits, then exec (which resets the SIGTERM handler).
        try:
            _apply_limits(limits)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    _, status = os.waitpid(pid, 0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # The sweep runs once.
    _sweep()
    _exit_like(status)


if __name__ == "__main__":
    main()
