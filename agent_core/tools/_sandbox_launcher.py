"""The run_python launcher: starts the model's code, and ends every process it started.

Run by path as `python -I -S _sandbox_launcher.py CONFIG_JSON CODE_ARGV...`, with the clean
environment the tool builds: the standard library only, so it starts in milliseconds, and so
the code's parent process holds no key (`/proc/<ppid>/environ` shows the clean environment).
`--probe` instead says by its exit status whether a PID namespace can be made here.

Two ways to hold the code, the tool choosing (CONFIG's `namespace`):
- a PID namespace (inside a user namespace of its own unless root): the launcher forks the
  namespace's init, which starts the code. The code can neither see nor signal the launcher,
  and the kernel ignores its signals to init; when init exits (the code ended) or is killed
  (the tool stopped the run, the launcher died), the kernel kills every process inside.
- else a child subreaper: orphans of the code, even ones that left the session, become the
  launcher's children, and it kills them when the code ends. The code can kill the launcher
  here; the tool's own sweep (`_containment`) then finds the rest by their mark.

Either way the launcher dies with the thread that started it (PR_SET_PDEATHSIG), reports the
code's wait status on CONFIG's `status_fd` (so a launcher that died without reporting was
killed, not the code), and exits as the code did.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import sys
import time
from typing import NoReturn

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_SWEEP_SECONDS = 2.0
_LIBC = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> None:
    try:
        _LIBC.prctl(option, value, 0, 0, 0)
    except AttributeError:  # Not Linux: no subreaper, no death signal.
        pass


def _die_with(parent: int) -> None:
    """SIGKILL this process when its parent's thread ends (and now, if it has already)."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(125)


def _die_with_launcher(alive: int) -> None:
    """`_die_with` for init, whose parent is outside its namespace (its ppid reads 0).

    `alive` is the read end of a pipe only the launcher can write to: at its end, EOF.
    """
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if select.select([alive], [], [], 0)[0]:
        os._exit(125)
    os.close(alive)


def _enter_pid_namespace() -> str:
    """Make the next child the init of a new PID namespace; '' on success, else why not."""
    uid, gid = os.geteuid(), os.getegid()
    # Root keeps its own ids (no user namespace needed); others map their ids to themselves.
    tries = [_CLONE_NEWPID] if uid == 0 else []
    why = ""
    unshare = getattr(_LIBC, "unshare", None)
    if unshare is None:
        return "no unshare (not Linux)"
    for flags in [*tries, _CLONE_NEWUSER | _CLONE_NEWPID]:
        if unshare(flags) == 0:
            if not flags & _CLONE_NEWUSER:
                return ""
            try:  # (an LSM may allow the namespace and refuse the map: then give up)
                _write("/proc/self/setgroups", "deny")
                _write("/proc/self/uid_map", f"{uid} {uid} 1")
                _write("/proc/self/gid_map", f"{gid} {gid} 1")
            except OSError as exc:
                return f"cannot map the user into its namespace: {exc.strerror}"
            return ""
        why = os.strerror(ctypes.get_errno())
    return why or "unshare failed"


def _write(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


def _lower(kind: int, soft: int, hard: int | None = None) -> None:
    """Set a limit, never above the hard limit already in force (that would fail)."""
    _, current_hard = resource.getrlimit(kind)
    hard = soft if hard is None else hard
    if current_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    resource.setrlimit(kind, (soft, hard))


def _apply_limits(config: dict[str, int]) -> None:
    megabyte = 1024 * 1024
    _lower(resource.RLIMIT_AS, config["memory_mb"] * megabyte)
    _lower(resource.RLIMIT_CPU, config["cpu_s"], config["cpu_s"] + 1)  # soft: SIGXCPU
    _lower(resource.RLIMIT_FSIZE, config["max_file_mb"] * megabyte)
    _lower(resource.RLIMIT_CORE, 0)
    if config.get("nproc") is not None:
        _lower(resource.RLIMIT_NPROC, config["nproc"])
    if config.get("mark") is not None:
        # A hard limit the code cannot raise again (without CAP_SYS_RESOURCE), inherited by
        # all it starts: how the tool tells them from its other children. It bounds only
        # real-time scheduled processes, which the code is not.
        _lower(resource.RLIMIT_RTTIME, config["mark"])


def _start_code(config: dict[str, int], argv: list[str]) -> int:
    pid = os.fork()
    if pid == 0:  # The code: limits, then exec (which resets the signal handlers).
        try:
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # if the launcher dies, so does it
            _apply_limits(config)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    return pid


def _init(config: dict[str, int], argv: list[str], report: int) -> None:
    """PID 1 of the namespace: start the code, reap orphans until it ends, report, exit.

    Exiting ends the namespace: the kernel kills whatever the code left running.
    """
    for number in (signal.SIGTERM, signal.SIGINT):  # handlers the code could trigger
        signal.signal(number, signal.SIG_DFL)
    code = _start_code(config, argv)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == code:
            os.write(report, str(status).encode())
            os._exit(0)


def _contained(config: dict[str, int], argv: list[str]) -> int:
    """Run the code in a PID namespace; its wait status (if init died, exit as it did)."""
    read, write = os.pipe()
    alive, launcher = os.pipe()
    init = 0

    def stop(signum: int, frame: object) -> None:
        if init:  # Killing init kills the namespace, and the kernel waits for all of it.
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(init, signal.SIGKILL)
                os.waitpid(init, 0)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    init = os.fork()
    if init == 0:
        try:
            os.close(read)
            os.close(launcher)
            _die_with_launcher(alive)
            _init(config, argv, write)
        finally:
            os._exit(126)
    os.close(write)
    _, status = os.waitpid(init, 0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:  # The code ended (init reported it), or init was killed (the namespace with it).
        return int(os.read(read, 32))
    except ValueError:
        _exit_like(status)


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


def _reaping(config: dict[str, int], argv: list[str]) -> int:
    """Run the code as a child subreaper's; sweep what it left; its wait status."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)

    def stop(signum: int, frame: object) -> None:
        _sweep()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    pid = _start_code(config, argv)
    _, status = os.waitpid(pid, 0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # The sweep runs once.
    _sweep()
    return status


def _exit_like(status: int) -> NoReturn:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        os._exit(128 + number)  # A signal whose default is not to terminate.
    os._exit(os.waitstatus_to_exitcode(status))


def _probe() -> int:
    """0 if a PID namespace can be made and entered here, else 1 (reason on stderr)."""
    why = _enter_pid_namespace()
    if why:
        print(why, file=sys.stderr)
        return 1
    pid = os.fork()
    if pid == 0:
        os._exit(0 if os.getpid() == 1 else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def main() -> None:
    """Start the code, held one way or the other; report its status; exit as it did."""
    if sys.argv[1] == "--probe":
        sys.exit(_probe())
    config, argv = json.loads(sys.argv[1]), sys.argv[2:]
    _die_with(config["parent"])
    report = config["status_fd"]
    os.set_inheritable(report, False)  # The code must not hold it.
    _lower(resource.RLIMIT_CORE, 0)
    if config["namespace"]:
        why = _enter_pid_namespace()
        if why:
            os.write(report, json.dumps({"error": why}).encode())
            os._exit(126)
        status = _contained(config, argv)
    else:
        status = _reaping(config, argv)
    os.write(report, json.dumps({"status": status}).encode())
    _exit_like(status)


if __name__ == "__main__":
    main()
