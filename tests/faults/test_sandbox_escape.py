"""Model code cannot outlive its step, whatever it does to run_python's launcher.

The attack (issue 23, item 2): the code forks a daemon that calls setsid and double-forks,
then SIGKILLs its own launcher. Each tier of containment is run: the PID namespace where this
machine allows one, and the fallback (the launcher a subreaper, this process adopting what
it leaves), forced by patching the probe.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_core import AgentRunner
from agent_core.errors import ToolError
from agent_core.llms import ScriptedLLM
from agent_core.tools import _containment
from agent_core.tools.python import python_tool
from agent_core.tools.workspace import Workspace
from agent_core.workers import ReActAgentWorker

# A daemon as a daemon is made: setsid, fork again, leave the folder and the output pipes.
# It writes its pid as /proc (this machine's) names it, then sleeps for good.
_DAEMON = """
import os, signal, time
pid_file = os.path.abspath('daemon.pid')
ready_read, ready_write = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.chdir('/')
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        with open(pid_file + '.tmp', 'w') as out:
            out.write(os.readlink('/proc/self'))
        os.rename(pid_file + '.tmp', pid_file)
        os.write(ready_write, b'x')
        while True:
            time.sleep(1)
    os._exit(0)
os.read(ready_read, 1)
"""

# Then kill the launcher: the parent, by the pid the code sees and by the one /proc shows.
_KILL_LAUNCHER = (
    _DAEMON
    + """
host_ppid = int(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[1])
for parent in {os.getppid(), host_ppid}:
    try:
        os.kill(parent, signal.SIGKILL)
    except OSError:
        pass
time.sleep(0.5)
print('the launcher lives on')
"""
)

_TIERS = ["namespace", "subreaper"]
_PR_GET_CHILD_SUBREAPER = 37


@pytest.fixture
def workspace(tmp_path):
    return Workspace(tmp_path / "workspaces")


@pytest.fixture(params=_TIERS)
def tier(request, monkeypatch):
    if request.param == "namespace":
        if not _containment.pid_namespaces():
            pytest.skip("this machine refuses PID namespaces")
    else:
        monkeypatch.setattr(_containment, "pid_namespaces", lambda: False)
    return request.param


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in {"Z", "X"}


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether `pid` ended and was reaped (a zombie left to this process is not gone)."""
    deadline = time.monotonic() + within  # generous: SIGKILL lands in milliseconds
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.02)
    return False


def _zombie_children() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = Path(entry, "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # not a process, or it ended meanwhile
            continue
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            found.append(int(entry.name))
    return found


def _daemon_pid(folder: Path) -> int:
    pid = int((folder / "daemon.pid").read_text())
    assert pid > 0
    return pid


async def _raw_run(workspace: Workspace, code: str) -> str:
    """The tool's function itself, so its ToolError (and code) reaches the test."""
    return await python_tool(workspace, timeout=10).fn(code)


async def test_a_daemon_that_kills_its_launcher_dies_with_the_step(workspace, tier):
    result = ""
    try:
        result = await _raw_run(workspace, _KILL_LAUNCHER)
    except ToolError as exc:
        error = exc
    else:
        error = None
    daemon = _daemon_pid(workspace.folder())
    try:
        assert _gone(daemon), f"the daemon {daemon} outlived its step"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(daemon, signal.SIGKILL)
    if tier == "namespace":
        # The launcher is out of the code's reach: the kernel ignores its signals to init.
        assert error is None, error
        assert result.startswith("exit code: 0") and "the launcher lives on" in result
    else:
        assert error is not None, result  # the patched probe held: the launcher was killable
        assert error.code == "sandbox_launcher_killed"
        assert error.params["signal"] == signal.SIGKILL
        assert "launcher was killed (SIGKILL, signal 9)" in str(error)
        assert "out of memory" not in str(error)
        assert not _zombie_children()  # what this process adopted, it reaped


async def test_a_daemon_holding_the_output_pipes_does_not_hold_the_step(workspace, tier):
    # Without dup2 to /dev/null the daemon keeps stdout and stderr open: the step must not
    # wait for its timeout to end them.
    code = _KILL_LAUNCHER.replace("for fd in (0, 1, 2):", "for fd in ():")
    started = time.monotonic()
    out = await python_tool(workspace, timeout=60).acall({"code": code})
    assert time.monotonic() - started < 30, out.content  # generous; the timeout is 60 s
    assert ("launcher was killed" in out.content) == (tier == "subreaper"), out.content
    assert _gone(_daemon_pid(workspace.folder()))


async def test_a_daemon_that_only_detaches_dies_with_the_step(workspace, tier):
    out = await python_tool(workspace, timeout=10).acall({"code": _DAEMON + "print('done')"})
    assert out.content.startswith("exit code: 0") and "done" in out.content
    assert _gone(_daemon_pid(workspace.folder()))


async def test_one_runs_sweep_spares_the_code_of_another(tmp_path, tier):
    def tool(name: str):
        return python_tool(Workspace(tmp_path / name), timeout=30)

    calm = "import time\ntime.sleep(1.5)\nprint('calm finished')"
    attacks = [tool(f"attack{n}").acall({"code": _KILL_LAUNCHER}) for n in range(3)]
    done = await asyncio.gather(tool("calm").acall({"code": calm}), *attacks)
    assert done[0].content == "exit code: 0\nstdout:\ncalm finished\n", done[0].content
    for n in range(3):
        assert _gone(_daemon_pid(Workspace(tmp_path / f"attack{n}").folder()))


def test_in_an_agent_run_the_daemon_ends_with_the_step_and_the_task(workspace, tier):
    call = json.dumps({"code": _KILL_LAUNCHER})
    llm = ScriptedLLM([f"Action: run_python\nAction Input: {call}", "Answer: done"])
    agent = AgentRunner(ReActAgentWorker.from_tools([python_tool(workspace)], llm=llm))
    task = agent.create_task("start a daemon")
    out = agent.run_step(task.task_id)
    content = out.tool_calls[0].content
    assert ("launcher was killed" in content) == (tier == "subreaper"), content
    daemon = _daemon_pid(workspace.root / task.task_id)
    assert _gone(daemon)
    agent.abandon_task(task.task_id)
    assert not _alive(daemon)


def test_a_step_stopped_mid_run_takes_the_daemon_with_it(workspace, tier):
    call = json.dumps({"code": _DAEMON + "time.sleep(60)\n"})
    llm = ScriptedLLM([f"Action: run_python\nAction Input: {call}", "Answer: done"])
    tool = python_tool(workspace, timeout=60)
    agent = AgentRunner(ReActAgentWorker.from_tools([tool], llm=llm))
    task = agent.create_task("start a daemon and wait")
    run = agent.start_step(task.task_id)
    pid_file = workspace.root / task.task_id / "daemon.pid"
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    daemon = _daemon_pid(pid_file.parent)
    assert _alive(daemon)  # the step is still running
    agent.cancel_step(task.task_id, run.step_id)
    assert _gone(daemon)
    agent.abandon_task(task.task_id)


_SERVER = """
import asyncio, sys
from agent_core.tools.python import python_tool
from agent_core.tools.workspace import Workspace
code = sys.argv[2] + "\\ntime.sleep(60)\\n"
asyncio.run(python_tool(Workspace(sys.argv[1]), timeout=60).acall({"code": code}))
"""


def test_a_server_killed_mid_step_takes_the_daemon_with_it(tmp_path):
    if not _containment.pid_namespaces():
        pytest.skip("only a PID namespace outlives the server (see docs/security.md)")
    workspace = Workspace(tmp_path / "workspaces")
    server = subprocess.Popen([sys.executable, "-c", _SERVER, str(workspace.root), _DAEMON])
    pid_file = workspace.folder() / "daemon.pid"
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        daemon = _daemon_pid(workspace.folder())
        assert _alive(daemon)
    finally:
        server.kill()  # SIGKILL: no cleanup of its own runs
        server.wait()
    assert _gone(daemon)


def test_the_probe_runs_once_per_process(monkeypatch):
    probes = []
    monkeypatch.setattr(_containment, "_probed", [])
    monkeypatch.setattr(_containment, "_probe", lambda: probes.append(1) or True)
    assert all(_containment.pid_namespaces() for _ in range(3))
    assert probes == [1]


def _subreaper() -> bool:
    flag = ctypes.c_int()
    ctypes.CDLL(None).prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
    return bool(flag.value)


async def test_the_fallback_sweep_leaves_this_process_own_children_alone(monkeypatch):
    monkeypatch.setattr(_containment, "pid_namespaces", lambda: False)
    own = await asyncio.create_subprocess_exec("sleep", "30")
    try:
        _containment.adopt()
        assert _subreaper()
        await asyncio.to_thread(_containment.release)
        assert own.returncode is None and _alive(own.pid)
        assert not _subreaper()  # only while a run lasts
    finally:
        own.kill()
        await own.wait()
