"""Services that recover (issue 23, item 10): Redis losing its data, a replica dying under
`stepwise services up`, and `up` refusing or stopping without a traceback.

Real processes on a real redis-server: the session's (AOF on) for `up`, and one of this
module's own with persistence off for the data loss, since losing data is its point.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from stepwise.services import (
    AgentService,
    ControlPlaneServer,
    PipelineOrchestrator,
    RedisStreamsMessageQueue,
    ServicesClient,
)
from stepwise.services.records import TaskStatus
from tests._redis_server import RedisServer
from tests.stepwise.services._system import (
    ROOT,
    echo_agent,
    eventually,
    free_port,
    running,
    wait_for,
)

EXAMPLES = ROOT / "examples"
SECRET = "The secret fact is: A baby llama is called a 'Cria'."


@pytest.fixture
def volatile_redis(tmp_path: Path) -> Iterator[tuple[RedisServer, list[str]]]:
    """A redis-server with no persistence at all; yields it and its start command."""
    executable = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(executable).exists():
        pytest.skip("redis-server is not installed (`make test` installs it)")
    server = RedisServer(executable, tmp_path, free_port())
    command = [executable, "--port", str(server.port), "--bind", "127.0.0.1", "--dir",
               str(tmp_path), "--appendonly", "no", "--save", ""]  # fmt: skip
    processes: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        processes.append(subprocess.Popen(command, stdout=subprocess.DEVNULL))
        wait_for(server.ping, within=10)
        server.process = processes[-1]

    server.start = start  # type: ignore[method-assign]
    start()
    try:
        yield server, command
    finally:
        for process in processes:
            process.kill()
            process.wait()


async def test_redis_restarted_without_its_data_loses_no_task(volatile_redis) -> None:
    server, _ = volatile_redis
    queue = RedisStreamsMessageQueue(server.url, block_ms=100, max_backoff=0.2)
    agent, seen = echo_agent(str.upper)
    service = AgentService(agent, queue, service_name="work", description="d")
    # hop_timeout 8 s: the watch looks every 2 s, and times nothing out within the test.
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["work"]), hop_timeout=8.0)
    async with running([], control_plane):
        await control_plane.register_service(service.service_definition)
        tasks = [await control_plane.create_task(f"t{n}") for n in range(10)]
        # Every hop is sent and waits in Redis: the service is not consuming yet.
        await eventually(lambda: all(control_plane.state.hops(t.task_id) for t in tasks), within=20)
        with redis.Redis.from_url(server.url) as raw:
            assert raw.xlen("stepwise:work") == 10  # The hops are in Redis...
        server.stop(kill=True)
        server.start()
        with redis.Redis.from_url(server.url) as raw:
            assert raw.dbsize() == 0  # ...and Redis came back empty.
        consuming = await service.launch_local()
        try:
            ended = [await control_plane.wait_for_task(t.task_id, timeout=30) for t in tasks]
        finally:
            consuming.cancel()
    await queue.close()
    assert [(t.status, t.result) for t in ended] == [
        (TaskStatus.COMPLETED, f"T{n}") for n in range(10)
    ]
    assert sorted(seen) == sorted(f"t{n}" for n in range(10))  # Each hop ran once.


# --------------------------------------------------------------------------- services up


def stepwise(*args: str) -> list[str]:
    return [sys.executable, "-m", "stepwise.cli", *args]


@pytest.fixture
def config(tmp_path: Path, redis_url: str, stream_prefix: str) -> Path:
    """Two processes on this session's Redis: a control plane and one agent service."""
    for name in ("services_agents.py", "services_quickstart.py"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    path = tmp_path / "services.toml"
    path.write_text(
        f'queue = "{redis_url}"\nstream_prefix = "{stream_prefix}"\n'
        f'[control_plane]\nhost = "127.0.0.1"\nport = {free_port()}\n'
        '[orchestrator]\nkind = "pipeline"\nservices = ["secret_fact_agent"]\n'
        '[[services]]\nname = "secret_fact_agent"\n'
        'agent = "services_agents.py:secret_fact_agent"\n',
        encoding="utf-8",
    )
    return path


class Up:
    """`stepwise services up` in its own process group, its output read as it comes."""

    def __init__(self, config: Path):
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("STEPWISE_API_TOKEN", None)
        self.process = subprocess.Popen(
            stepwise("services", "up", str(config)), cwd=ROOT, env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def pids(self, service: str) -> list[int]:
        """The pids `up` announced for a service's replicas (restarts included)."""
        pattern = rf"service {service}\b.*\(pid (\d+)\)"
        return [int(m) for m in re.findall(pattern, self.output)]

    def stop(self, signum: int) -> int:
        """Send `signum` to the whole group, as a terminal's Ctrl-C does; the exit status."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signum)
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"up did not stop within 30 s; it said:\n{self.output}") from None
        finally:
            self._reader.join(timeout=10)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def registered(url: str, count: int) -> bool:
    try:
        return len(httpx.get(f"{url}/services", timeout=1).json()) == count
    except (httpx.TransportError, ValueError):
        return False


def test_a_replica_killed_under_up_is_restarted_and_the_system_still_serves(config: Path) -> None:
    from stepwise.cli.services_config import load_config

    url = load_config(config).control_plane_url
    up = Up(config)
    try:
        wait_for(lambda: registered(url, 1), within=60)
        [victim] = up.pids("secret_fact_agent")
        os.kill(victim, signal.SIGKILL)  # Its only replica: nobody serves it unless restarted.
        wait_for(lambda: len(up.pids("secret_fact_agent")) == 2, within=30)
        assert up.process.poll() is None  # `up` kept running.
        with ServicesClient(url) as client:
            task_id = client.create_task("What is the secret fact?")
            assert client.wait_for_result(task_id, timeout=60).result == SECRET
        code = up.stop(signal.SIGINT)  # Ctrl-C: the whole group gets it, then `up` stops all.
    finally:
        up.kill()
    output = up.output
    assert code == 0, output
    assert f"(pid {victim}) exited with status -9; restarting it in 0.5 s" in output
    assert "restarted agent service secret_fact_agent: consumes" in output
    assert "Traceback" not in output  # A normal stop is quiet.
    assert "ERROR" not in output


def test_up_refusing_to_listen_without_a_token_prints_why_without_a_traceback(
    config: Path,
) -> None:
    text = config.read_text(encoding="utf-8").replace('host = "127.0.0.1"', 'host = "0.0.0.0"', 1)
    assert 'host = "0.0.0.0"' in text
    config.write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "STEPWISE_API_TOKEN"}
    result = subprocess.run(
        stepwise("services", "up", str(config)), cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "refusing to listen on 0.0.0.0 without a token" in output
    assert "Traceback" not in output
