"""run_python: real child processes, confined to the workspace and stopped at every limit."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_core import AgentRunner
from agent_core.effects import step_context
from agent_core.errors import UserError
from agent_core.llms import ScriptedLLM
from agent_core.tools.base import MAX_OUTPUT_CHARS
from agent_core.tools.python import MAX_CODE_BYTES, _user_task_count, python_tool
from agent_core.tools.workspace import Workspace
from agent_core.workers import ReActAgentWorker

IS_ROOT = os.geteuid() == 0


@pytest.fixture
def workspace(tmp_path):
    return Workspace(tmp_path / "workspaces")


async def _run(workspace: Workspace, code: str, **limits: Any):
    return await python_tool(workspace, **limits).acall({"code": code})


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting for a reaper has stopped running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in {"Z", "X"}


async def _wait_gone(pid: int) -> bool:
    for _ in range(50):  # SIGKILL takes effect quickly; give the kernel a moment
        if not _alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


def _running_in(folder: Path) -> list[int]:
    """Processes whose working directory is `folder` (the code's, which these do not leave)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(entry, "cwd").readlink() == folder:
                found.append(int(entry.name))
        except OSError:  # ended meanwhile, or not ours to read
            continue
    return [pid for pid in found if _alive(pid)]


async def _wait_none_in(folder: Path) -> bool:
    for _ in range(50):
        if not _running_in(folder):
            return True
        await asyncio.sleep(0.02)
    return False


# The code may run in a PID namespace of its own, where os.getpid() is not this test's pid:
# /proc is still this machine's, and /proc/self names the process as the test sees it.
_HOST_PID = "os.readlink('/proc/self')"


async def test_hello_world_returns_exit_code_and_stdout(workspace):
    out = await _run(workspace, "print('hello, world')")
    assert (out.content, out.is_error) == ("exit code: 0\nstdout:\nhello, world\n", False)


async def test_no_output_says_so(workspace):
    out = await _run(workspace, "x = 1 + 1")
    assert out.content == "exit code: 0 (no output; print what you want to see)"


async def test_an_exception_shows_the_exit_code_and_the_traceback(workspace):
    out = await _run(workspace, "print('before')\nraise ValueError('boom')")
    assert not out.is_error  # the model reads its own traceback and fixes the code
    assert out.content.startswith("exit code: 1\nstdout:\nbefore\n\nstderr:\nTraceback")
    assert out.content.rstrip().endswith("ValueError: boom")
    exited = await _run(workspace, "import sys; sys.exit(3)")
    assert exited.content.startswith("exit code: 3")


async def test_the_code_runs_in_the_task_workspace(workspace):
    with step_context("task-a", "step-1"):
        out = await _run(
            workspace, "import os\nopen('out.txt', 'w').write('made')\nprint(os.getcwd())"
        )
    folder = workspace.root / "task-a"
    assert out.content == f"exit code: 0\nstdout:\n{folder}\n"
    assert (folder / "out.txt").read_text() == "made"
    assert not (workspace.root / "default" / "out.txt").exists()


async def test_no_secret_of_the_parent_reaches_the_child(workspace, monkeypatch):
    secrets = {
        "OPENAI_API_KEY": "sk-parent-openai",
        "ANTHROPIC_API_KEY": "sk-ant-parent",
        "MY_SERVICE_KEY": "service-key-value",
        "GITHUB_TOKEN": "ghp_parent_token",
        "DB_SECRET_PASSWORD": "hunter2",
        "AWS_SECRET_ACCESS_KEY": "aws-secret",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    out = await _run(workspace, code)
    env = json.loads(out.content.split("stdout:\n", 1)[1])
    for name, value in secrets.items():
        assert name not in env
        assert value not in out.content
    assert not [n for n in env if n.endswith(("_KEY", "_TOKEN")) or "SECRET" in n]
    assert env["HOME"] == str(workspace.folder())
    assert "PATH" in env


_APP_WITH_A_KEY = """
import asyncio, sys
from agent_core.tools.python import python_tool
from agent_core.tools.workspace import Workspace
code = (  # the parent's pid as /proc sees it (os.getppid() may be its namespace's)
    "ppid = open('/proc/self/stat').read().rsplit(')', 1)[1].split()[1]; "
    "print(open('/proc/' + ppid + '/environ', 'rb').read())"
)
out = asyncio.run(python_tool(Workspace(sys.argv[1])).acall({"code": code}))
print(out.content)
"""


def test_the_codes_parent_holds_no_secret_of_the_app(tmp_path):
    # Model code can read its parent's environment through /proc: that parent must not be
    # the app (whose environment, as it started, holds the key) but the clean launcher.
    env = {**os.environ, "OPENAI_API_KEY": "sk-app-process-key"}
    done = subprocess.run(
        [sys.executable, "-c", _APP_WITH_A_KEY, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.startswith("exit code: "), done.stdout + done.stderr
    assert "sk-app-process-key" not in done.stdout and "OPENAI_API_KEY" not in done.stdout
    # It read its parent's (clean) environment; or, in a user namespace, where the parent
    # holds capabilities the code lacks, it could not read its parent at all.
    read = done.stdout.startswith("exit code: 0") and "HOME=" in done.stdout
    assert read or "PermissionError: [Errno 13]" in done.stdout, done.stdout


# A process that leaves the session (double fork + setsid) escapes a process-group kill.
_ESCAPE = """
import os, subprocess, sys, time
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        subprocess.Popen(['sleep', '120'], start_new_session=True)
        os.write(write, os.readlink('/proc/self').encode())
        time.sleep(120)
    os._exit(0)
print(os.read(read, 32).decode(), flush=True)
"""


async def test_a_process_that_left_the_session_is_killed_when_the_code_ends(workspace):
    out = await _run(workspace, _ESCAPE, timeout=20)
    assert out.content.startswith("exit code: 0")
    escaped = int(out.content.split("stdout:\n", 1)[1].split()[0])
    assert await _wait_gone(escaped)


async def test_a_process_that_left_the_session_is_killed_at_the_timeout(workspace):
    out = await _run(workspace, _ESCAPE + "while True: pass\n", timeout=1)
    assert out.is_error and "ran longer than 1 s" in out.content
    escaped = int(out.content.split("stdout:\n", 1)[1].split()[0])
    assert await _wait_gone(escaped)


async def test_an_endless_loop_is_stopped_at_the_timeout(workspace):
    started = time.monotonic()
    out = await _run(workspace, "print('started', flush=True)\nwhile True: pass", timeout=1)
    elapsed = time.monotonic() - started
    assert out.is_error
    assert "the code ran longer than 1 s and was stopped" in out.content
    assert "stdout:\nstarted" in out.content  # what it printed before is still shown
    assert elapsed < 5  # without the kill it would never end


async def test_a_timeout_kills_the_processes_the_code_started(workspace):
    code = (
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        "print(child.pid, flush=True)\n"
        "while True: pass\n"
    )
    out = await _run(workspace, code, timeout=1)
    assert out.is_error and "ran longer than 1 s" in out.content
    assert await _wait_none_in(workspace.folder())


async def test_background_processes_left_behind_are_killed(workspace):
    code = "import subprocess\nprint(subprocess.Popen(['sleep', '60']).pid)"
    started = time.monotonic()
    out = await _run(workspace, code, timeout=20)
    assert out.content.startswith("exit code: 0")
    assert time.monotonic() - started < 10  # did not wait for the sleep holding the pipe
    assert await _wait_none_in(workspace.folder())


async def test_cancelling_the_step_kills_the_child(workspace):
    tool = python_tool(workspace, timeout=30)
    code = f"import os\nopen('pid', 'w').write({_HOST_PID})\nwhile True: pass"
    call = asyncio.ensure_future(tool.acall({"code": code}))
    pid_file = workspace.folder() / "pid"
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text():
            break
        await asyncio.sleep(0.02)
    pid = int(pid_file.read_text())
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await _wait_gone(pid)


async def test_a_memory_bomb_is_reported_as_out_of_memory(workspace):
    out = await _run(workspace, "x = bytearray(2_000_000_000)", memory_mb=128)
    assert out.is_error
    assert "the code ran out of memory: it may use 128 MB" in out.content
    assert out.content.rstrip().endswith("MemoryError")


async def test_an_output_flood_is_cut_and_stopped_quickly(workspace):
    started = time.monotonic()
    out = await _run(workspace, "print('x' * 10**8)", memory_mb=1024, timeout=30)
    assert out.is_error
    assert "printed more than 20,000 characters and was stopped" in out.content
    assert len(out.content) <= MAX_OUTPUT_CHARS
    assert time.monotonic() - started < 15  # stopped by the cap, long before the timeout

    endless = await _run(workspace, "while True: print('y' * 1000)", timeout=30)
    assert endless.is_error and "printed more than" in endless.content
    assert len(endless.content) <= MAX_OUTPUT_CHARS


async def test_long_output_keeps_the_start_of_stdout_and_the_end_of_stderr(workspace):
    code = (
        "import sys\n"
        "print('FIRST'); print('o' * 15000)\n"
        "print('e' * 15000, file=sys.stderr)\n"
        "raise RuntimeError('LAST')\n"
    )
    out = await _run(workspace, code)
    assert not out.is_error
    assert "stdout:\nFIRST" in out.content
    assert out.content.rstrip().endswith("RuntimeError: LAST")
    assert "more characters]" in out.content and "earlier characters]" in out.content
    assert len(out.content) <= MAX_OUTPUT_CHARS


async def test_files_over_the_size_limit_cannot_be_written(workspace):
    code = "open('big.bin', 'wb').write(b'x' * 3 * 1024 * 1024)"
    out = await _run(workspace, code, max_file_mb=1)
    assert "File too large" in out.content
    assert (workspace.folder() / "big.bin").stat().st_size <= 1024 * 1024


async def test_a_crash_by_signal_is_an_error_naming_it(workspace):
    segv = await _run(workspace, "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert segv.is_error and "crashed (SIGSEGV)" in segv.content
    cpu = await _run(workspace, "import os, signal; os.kill(os.getpid(), signal.SIGXCPU)")
    assert cpu.is_error and "s of CPU time" in cpu.content


@pytest.mark.skipif(IS_ROOT, reason="RLIMIT_NPROC does not apply to root")
async def test_a_fork_bomb_runs_into_the_process_limit(workspace):
    code = (
        "import os, time\n"
        "started = 0\n"
        "try:\n"
        "    for _ in range(300):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "        started += 1\n"
        "except OSError as exc:\n"
        "    print('refused after', started, type(exc).__name__)\n"
    )
    out = await _run(workspace, code, max_processes=10, timeout=10)
    assert "refused after" in out.content
    assert int(out.content.split("refused after ")[1].split()[0]) <= 10


def test_the_process_count_for_the_limit_sees_this_process():
    assert _user_task_count(os.getuid()) >= 1


async def test_code_that_is_empty_or_too_big_is_refused_before_running(workspace):
    empty = await _run(workspace, "   ")
    assert empty.is_error and "the code is empty" in empty.content
    big = await _run(workspace, "#" * (MAX_CODE_BYTES + 1))
    assert big.is_error and "runpy.run_path" in big.content
    nul = await _run(workspace, "print(1)\x00")
    assert nul.is_error and "NUL byte" in nul.content


def test_the_tool_describes_itself_and_its_limits(workspace):
    tool = python_tool(workspace, timeout=3, memory_mb=128)
    spec = tool.metadata.to_spec()
    assert spec.name == "run_python"
    assert spec.parameters["required"] == ["code"]
    assert "print what you want to see" in spec.parameters["properties"]["code"]["description"]
    assert "3 s, 128 MB of memory" in spec.description
    assert tool.metadata.side_effects


@pytest.mark.parametrize(
    "limits", [{"timeout": 0}, {"memory_mb": 10}, {"max_output_chars": 5}, {"max_processes": 0}]
)
def test_impossible_limits_are_refused_when_building_the_tool(workspace, limits):
    with pytest.raises(UserError, match="python_tool"):
        python_tool(workspace, **limits)


def test_in_an_agent_run_files_land_in_the_task_folder_and_undo_warns(workspace):
    call = json.dumps({"code": "open('result.txt', 'w').write(str(6 * 7))"})
    llm = ScriptedLLM([f"Action: run_python\nAction Input: {call}"])
    agent = AgentRunner(ReActAgentWorker.from_tools([python_tool(workspace)], llm=llm))
    task = agent.create_task("compute and save")
    out = agent.run_step(task.task_id)
    assert out.tool_calls[0].content.startswith("exit code: 0")
    result = workspace.root / task.task_id / "result.txt"
    assert result.read_text() == "42"
    agent.undo_step(task.task_id)
    warnings = agent.get_step(task.task_id, out.task_step.step_id).undo_warnings
    assert len(warnings) == 1 and "run_python cannot be undone" in warnings[0]
    assert result.exists()  # not journaled: the warning says so
