"""`stepwise services up` and `status` as a user runs them: real processes on a real Redis.

`up` starts examples/services.toml (copied beside its agents, with this session's Redis URL
and a free port) as a subprocess; a client here runs a task through it; `status` prints it;
SIGTERM stops `up` and every process it started.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stepwise.cli.services_config import load_config
from stepwise.services import ServicesClient

from ._system import ROOT, free_port, wait_for

EXAMPLES = ROOT / "examples"
SECRET = "The secret fact is: A baby llama is called a 'Cria'."


def stepwise(*args: str) -> list[str]:
    return [sys.executable, "-m", "stepwise.cli", *args]


@pytest.fixture
def config(tmp_path: Path, redis_url: str, stream_prefix: str) -> Path:
    """examples/services.toml on this session's Redis, a free port and a fresh prefix."""
    for name in ("services_agents.py", "services_quickstart.py"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    text = (EXAMPLES / "services.toml").read_text(encoding="utf-8")
    text = text.replace('"redis://127.0.0.1:6379/0"', f'"{redis_url}"', 1)
    text = text.replace('stream_prefix = "stepwise:"', f'stream_prefix = "{stream_prefix}"', 1)
    text = text.replace("port = 8100", f"port = {free_port()}", 1)
    path = tmp_path / "services.toml"
    path.write_text(text, encoding="utf-8")
    return path


def children_of(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def up(config: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`stepwise services up CONFIG` running; yields it and the control plane's URL."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("STEPWISE_API_TOKEN", None)
    process = subprocess.Popen(
        stepwise("services", "up", str(config)), cwd=ROOT, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = load_config(config).control_plane_url
    try:
        yield process, url
    finally:
        # The whole group: a failed test must not leave `up`'s children running (orphaned).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def registered(url: str, count: int) -> bool:
    try:
        return len(httpx.get(f"{url}/services", timeout=1).json()) == count
    except (httpx.TransportError, ValueError):
        return False


def test_up_runs_the_example_until_sigterm_stops_every_process(up, config: Path) -> None:
    process, url = up
    wait_for(lambda: registered(url, 3), within=60)
    started = children_of(process.pid)
    assert len(started) == 5  # The control plane, secret_fact_agent x2, dumb_fact_agent, human.

    with ServicesClient(url) as client:
        task_id = client.create_task("What is the secret fact?")
        assert client.wait_for_result(task_id, timeout=30).result == SECRET

    status = subprocess.run(
        stepwise("services", "status", "--url", url), capture_output=True, text=True, timeout=60
    )
    assert status.returncode == 0, status.stderr
    assert re.search(r"secret_fact_agent\s+agent", status.stdout)
    assert re.search(r"human\s+human", status.stdout)
    assert re.search(
        rf"{task_id[:8]}\s+completed\s+1 hops\s+What is the secret fact\?", status.stdout
    )
    assert "→ The secret fact is: A baby llama" in status.stdout
    assert "Hops waiting for approval (0):" in status.stdout

    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert f"control plane       {url}" in output
    assert "agent service secret_fact_agent replica 2/2" in output
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in started if alive(pid)], "a service outlived `up`"


def test_status_says_how_to_start_a_control_plane_that_is_not_there() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    status = subprocess.run(
        stepwise("services", "status", "--url", url), capture_output=True, text=True, timeout=60
    )
    assert status.returncode == 1
    assert f"no control plane answers at {url}" in status.stderr
    assert "stepwise services up CONFIG" in status.stderr


def test_a_bad_config_names_the_key_to_fix(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('queue = "simple"\n[[services]]\nname = "a"\n', encoding="utf-8")
    result = subprocess.run(
        stepwise("services", "up", str(path)), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert "an agent service) needs `agent`" in result.stderr
