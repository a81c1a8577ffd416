"""The run_python tool: run a model's Python code in a child process with hard limits.

The code runs as `python -I` (isolated: no user site, no PYTHON* variables) under a small
launcher (`_sandbox_launcher.py`), started in the task's workspace folder, in a session of
its own, with an environment that carries none of the app's variables beyond PATH and the
locale. So no key reaches the code's environment, nor its parent's: the launcher, not the
app, is the process whose `/proc/<ppid>/environ` the code can read. The code has rlimits on
address space, CPU time, file size, core dumps and, when not running as root, process count.
When the code ends, times out, floods its output or the step is cancelled, every process it
started is killed, even one that left the session or killed the launcher: `_containment`
says how (a PID namespace where the machine allows one, else subreapers and a sweep).

This bounds what well-meant code can do to the machine by accident. It is not a security
boundary against hostile code: the code runs as the app's user, so it can read and write
whatever that user can (outside the workspace too), read other processes of that user
through /proc (the app's own environment included, by walking up from its parent), and use
the network. The README's "Security" section says how to get a real boundary.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_core.errors import ToolError, UserError
from agent_core.tools import _containment
from agent_core.tools.base import FunctionTool
from agent_core.tools.workspace import Workspace

__all__ = ["MAX_CODE_BYTES", "python_tool"]

MAX_CODE_BYTES = 100_000
"""Longest program accepted (it is passed as a command-line argument, capped by the OS)."""

_STOP_GRACE_S = 3.0  # The launcher's sweep takes milliseconds; past this, kill its group.
_ENV_KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
_CHUNK = 65_536
_MEMORY_CRASHES = {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS}


@dataclass(frozen=True)
class _Limits:
    timeout: float
    memory_mb: int
    max_output_chars: int
    max_file_mb: int
    max_processes: int

    @property
    def output_bytes(self) -> int:
        # A character is at most 4 bytes of UTF-8: past this, the output is over the cap.
        return 4 * self.max_output_chars


def python_tool(
    workspace: Workspace,
    *,
    timeout: float = 10.0,
    memory_mb: int = 256,
    max_output_chars: int = 20_000,
    max_file_mb: int = 64,
    max_processes: int = 64,
) -> FunctionTool:
    """The tool "run_python": run code in a limited subprocess inside the task's workspace.

    Files the code writes are not journaled, so undoing its step cannot remove them: the
    tool declares side effects, and undo warns that it could not revert the call.

    Args:
        workspace: Whose task folder is the child's working directory and HOME.
        timeout: Wall-clock seconds before the child's process group is killed.
        memory_mb: Address-space limit of each child process (RLIMIT_AS), in MB.
        max_output_chars: Most characters of stdout plus stderr returned; output beyond four
            times as many bytes stops the child.
        max_file_mb: Largest file the child may write (RLIMIT_FSIZE), in MB.
        max_processes: Processes and threads the child may add (RLIMIT_NPROC). Not applied
            as root, whom the kernel does not hold to it.
    """
    limits = _Limits(timeout, memory_mb, max_output_chars, max_file_mb, max_processes)
    _check_limits(limits)

    async def run_python(code: str) -> str:
        """Run a Python program and return its exit code, stdout and stderr.

        Args:
            code: A complete Python 3 program; print what you want to see.
        """
        return await _run(code, workspace.folder(), limits)

    description = (
        "Run a Python 3 program in a fresh process and return its exit code, stdout and"
        " stderr. It runs in the task's workspace folder: files it writes there can be read"
        " with read_file. Nothing but files persists between calls; print what you want to"
        f" see. Limits: {timeout:g} s, {memory_mb} MB of memory,"
        f" {max_output_chars:,} characters of output."
    )
    return FunctionTool.from_defaults(run_python, description=description, side_effects=True)


def _check_limits(limits: _Limits) -> None:
    if not limits.timeout > 0:
        raise UserError(f"python_tool timeout must be over 0 seconds, got {limits.timeout}")
    if limits.memory_mb < 64:
        raise UserError(
            f"python_tool memory_mb={limits.memory_mb} is too small for Python to start;"
            " give at least 64"
        )
    if limits.max_output_chars < 100 or limits.max_file_mb < 1 or limits.max_processes < 1:
        raise UserError(
            "python_tool needs max_output_chars >= 100, max_file_mb >= 1 and max_processes >= 1"
        )


async def _run(code: str, folder: Path, limits: _Limits) -> str:
    _check_code(code)
    namespace = await asyncio.to_thread(_containment.pid_namespaces)
    if namespace:
        return await _launch(code, folder, limits, namespace=True)
    # The code can kill its launcher here: its orphans must come to this process.
    _containment.adopt()
    try:
        return await _launch(code, folder, limits, namespace=False)
    finally:
        await asyncio.to_thread(_containment.release)


async def _launch(code: str, folder: Path, limits: _Limits, *, namespace: bool) -> str:
    nproc = await asyncio.to_thread(_process_limit, limits.max_processes, namespace)
    loop = asyncio.get_running_loop()
    report, status_fd = os.pipe()  # the launcher writes the code's status on it
    try:
        config = _launcher_config(limits, nproc, namespace, status_fd)
        transport, child = await loop.subprocess_exec(
            lambda: _Child(loop, limits, None if namespace else _containment.sweep),
            *(sys.executable, "-I", "-S", str(_containment.LAUNCHER), json.dumps(config)),
            *(sys.executable, "-I", "-u", "-X", "utf8", "-c", code),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=folder,
            env=_child_env(folder),
            start_new_session=True,  # its own session and process group
            pass_fds=(status_fd,),
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        os.close(report)
        raise ToolError(f"could not start Python: {exc}") from None
    finally:
        os.close(status_fd)
    try:
        await child.finish(transport)
        reported = _read_report(report)
    finally:
        os.close(report)
    return _report(child, reported, transport.get_returncode(), limits)


def _read_report(fd: int) -> dict[str, object]:
    """What the launcher reported before it exited: `status` or `error`; {} if nothing."""
    os.set_blocking(fd, False)
    try:
        report = json.loads(os.read(fd, 4096) or b"{}")
    except (OSError, ValueError):  # nothing written, or not the launcher's JSON
        return {}
    return report if isinstance(report, dict) else {}


def _check_code(code: str) -> None:
    if not code.strip():
        raise ToolError("the code is empty; send a Python program, e.g. print(1 + 1)")
    if "\x00" in code:
        raise ToolError("the code contains a NUL byte, which a Python program cannot hold")
    try:
        size = len(code.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ToolError(f"the code is not valid Unicode text: {exc.reason}") from None
    if size > MAX_CODE_BYTES:
        raise ToolError(
            f"the code is {size:,} bytes; the limit is {MAX_CODE_BYTES:,}. Save it with"
            " write_file and run it with: import runpy; runpy.run_path('script.py')"
        )


def _child_env(folder: Path) -> dict[str, str]:
    """An allowlist, never a copy of os.environ: no key, token or secret reaches the child."""
    env = {name: os.environ[name] for name in _ENV_KEPT if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        HOME=str(folder),
        PYTHONIOENCODING="utf-8",
        # Under RLIMIT_AS, glibc's per-thread malloc arenas and numeric libraries starting a
        # thread per core reserve address space the code never uses, and fail early.
        MALLOC_ARENA_MAX="2",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
    )
    return env


def _launcher_config(
    limits: _Limits, nproc: int | None, namespace: bool, status_fd: int
) -> dict[str, object]:
    """What the launcher (`-S`: standard library only, quick) applies and how it holds the code."""
    return {
        "memory_mb": limits.memory_mb,
        "cpu_s": math.ceil(limits.timeout) + 1,
        "max_file_mb": limits.max_file_mb,
        "nproc": nproc,
        "mark": None if namespace else _containment.mark(),
        "namespace": namespace,
        "parent": os.getpid(),
        "status_fd": status_fd,
    }


def _process_limit(extra: int, namespace: bool = False) -> int | None:
    """RLIMIT_NPROC for the child: the user's running tasks plus `extra`; None if unknown.

    The kernel counts every process and thread of the user, not just the child's, so a fixed
    number would be wrong; in a user namespace of its own it counts those of the namespace
    only (the launcher and the namespace's init, then the code's). Root is not held to the
    limit, so none is set for root.
    """
    if os.geteuid() == 0:
        return None
    if namespace:
        return 2 + extra
    try:
        return _user_task_count(os.getuid()) + extra
    except (OSError, KeyError, ValueError):  # no /proc (not Linux), or an unexpected format
        return None


def _user_task_count(uid: int) -> int:
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:  # the process ended meanwhile
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid:
            total += int(fields["Threads"])
    return total


class _Child(asyncio.SubprocessProtocol):
    """One child process: its output, capped as it arrives, and whether it had to be stopped.

    Output is pushed to this protocol and never waits to be read, so a flood cannot stall the
    child on a full pipe; past the cap it is dropped and the child's process group killed.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        limits: _Limits,
        sweep: Callable[[], None] | None = None,
    ) -> None:
        self.limits = limits
        self._loop = loop
        self._sweep = sweep
        self._swept: asyncio.Future[None] | None = None
        self.output = {1: bytearray(), 2: bytearray()}
        self.timed_out = False
        self.flooded = False
        self._pid: int | None = None
        self._exited = loop.create_future()
        self._closed = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self._pid = transport.get_pid()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        buffer = self.output[fd]
        room = self.limits.output_bytes - len(buffer)
        buffer += data[: max(room, 0)]
        if len(data) > room and not self.flooded:
            self.flooded = True
            self.stop()

    def process_exited(self) -> None:
        _set_done(self._exited)
        # The launcher swept what the code left; a process it missed would hold the pipes.
        self.kill_group()
        if self._sweep is not None:  # The code may have killed it first: sweep for it.
            self._swept = self._loop.run_in_executor(None, self._sweep)

    def connection_lost(self, exc: Exception | None) -> None:
        _set_done(self._closed)  # the child exited and every pipe reached its end

    async def finish(self, transport: asyncio.SubprocessTransport) -> None:
        """Wait for the child and its output; past the timeout, kill its process group."""
        try:
            async with asyncio.timeout(self.limits.timeout):
                await self._closed
        except TimeoutError:
            # A process that left the group may still hold a pipe after the child exited.
            self.timed_out = not self._exited.done()
        finally:
            await self._stop_everything()  # also when the step is cancelled
            transport.close()

    async def _stop_everything(self) -> None:
        """Have the launcher kill every process below it, then kill its group regardless."""
        self.stop()
        try:
            async with asyncio.timeout(_STOP_GRACE_S):
                await asyncio.shield(self._exited)
        except TimeoutError:
            pass
        finally:
            self.kill_group()

    def stop(self) -> None:
        """SIGTERM the launcher: it kills the code and all it started, then exits."""
        if self._pid is not None and not self._exited.done():  # else the pid may be reused
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self._pid, signal.SIGTERM)

    def kill_group(self) -> None:
        """SIGKILL the launcher's process group (what a sweep could not reach)."""
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._pid, signal.SIGKILL)


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _report(run: _Child, reported: dict[str, object], launcher: int | None, limits: _Limits) -> str:
    """The result text, or a ToolError when the run did not end on its own."""
    stdout = run.output[1].decode("utf-8", errors="replace")
    stderr = run.output[2].decode("utf-8", errors="replace")
    shown = _outputs(stdout, stderr, limits.max_output_chars)
    if run.timed_out:
        raise ToolError(
            f"the code ran longer than {limits.timeout:g} s and was stopped; make it faster"
            f" or do less in one call.{shown}"
        )
    if run.flooded:
        raise ToolError(
            f"the code printed more than {limits.max_output_chars:,} characters and was"
            f" stopped; print a summary instead, or write large results to a file.{shown}"
        )
    code = _code_exit(reported, launcher, shown)
    if code and _last_line(stderr).startswith("MemoryError"):
        raise ToolError(
            f"the code ran out of memory: it may use {limits.memory_mb} MB. Use less memory"
            f" (smaller data, streaming, generators).{shown}"
        )
    if code is not None and code < 0:
        raise ToolError(f"{_signal_message(-code, limits)}{shown}")
    return f"exit code: {code}{shown or ' (no output; print what you want to see)'}"


def _code_exit(reported: dict[str, object], launcher: int | None, shown: str) -> int:
    """The code's exit code (negative: killed by that signal), as its launcher reported it."""
    if "error" in reported:
        raise ToolError(f"the sandbox could not hold the code ({reported['error']}); try again")
    status = reported.get("status")
    if isinstance(status, int):
        with contextlib.suppress(ValueError):  # not a wait status
            return os.waitstatus_to_exitcode(status)
    # No status: the launcher died before the code ended, and every process went with it.
    if launcher is not None and launcher < 0:
        number = -launcher
        raise ToolError(
            f"the code's launcher was killed ({_signal_name(number)}) before the code ended,"
            " most likely by the code itself; the code was stopped with every process it"
            f" started. Do not signal the code's parent process.{shown}",
            code="sandbox_launcher_killed",
            params={"signal": number},
        )
    raise ToolError(f"the sandbox's launcher failed (exit status {launcher}).{shown}")


def _signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name}, signal {number}"
    except ValueError:
        return f"signal {number}"


def _signal_message(number: int, limits: _Limits) -> str:
    try:
        sig = signal.Signals(number)
    except ValueError:
        return f"the code was stopped by signal {number}"
    if sig is signal.SIGXCPU:
        return (
            f"the code used more than {math.ceil(limits.timeout) + 1} s of CPU time and was"
            " stopped; make it faster or do less in one call"
        )
    if sig in _MEMORY_CRASHES:
        return (
            f"the code crashed ({sig.name}); with a {limits.memory_mb} MB memory limit this"
            " usually means it ran out of memory"
        )
    return f"the code was killed ({sig.name}), perhaps because the machine ran out of memory"


def _outputs(stdout: str, stderr: str, max_chars: int) -> str:
    """Stdout from its start and stderr to its end (where tracebacks are), within max_chars."""
    # Leave room for the message and labels: the tool's output is cut at its own limit.
    budget = max(max_chars - 500, max_chars // 2)
    err_budget = min(len(stderr), max(budget // 2, budget - len(stdout)))
    parts = []
    if stdout:
        parts.append(f"\nstdout:\n{_head(stdout, budget - err_budget)}")
    if stderr:
        parts.append(f"\nstderr:\n{_tail(stderr, err_budget)}")
    return "".join(parts)


def _head(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit:,} more characters]"


def _tail(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"[... {len(text) - limit:,} earlier characters]\n{text[len(text) - limit :]}"


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""
