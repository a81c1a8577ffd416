"""A real `redis-server` (Debian's) for the tests that need one, never a fake.

A pytest plugin (the root conftest loads it), so the services' tests and the fault tests
share one server per session. Fixtures:

- `redis_server` (session): one `redis-server` on a free loopback port, in a temporary folder,
  with the append-only file on (`appendfsync always`, no RDB snapshots), so a restart loses
  nothing that was acknowledged. It answers PING before any test uses it and is stopped when
  the session ends. Attributes: `url` (database 0), `port`, `dir`, `process`. Methods:
  `restart(kill=False, down_for=0.0)` stops it (SIGTERM, or SIGKILL with `kill=True`), waits
  `down_for` seconds, and starts it again on the same port and folder; `stop(kill=False)` and
  `start()` do the halves, for a test that needs Redis down for a while; `ping()`.
- `redis_url` (per test): the server's URL after emptying it (FLUSHALL), with the server
  started again if an earlier test left it stopped.
- `stream_prefix` (per test): a unique key prefix (`t<hex>:`), to pass as
  `RedisStreamsMessageQueue(redis_url, stream_prefix=stream_prefix)`, so a test never sees
  another's streams even when its own processes outlive it.

Example:
    async def test_round_trip(redis_url, stream_prefix):
        queue = RedisStreamsMessageQueue(redis_url, stream_prefix=stream_prefix)

The session is skipped, with the reason, when `redis-server` is not installed (`make test`
installs it).
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

_READY_TIMEOUT = 10.0


class RedisServer:
    """A `redis-server` process this test session owns, restartable on its port and folder."""

    def __init__(self, executable: str, directory: Path, port: int):
        self.executable = executable
        self.dir = directory
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The URL of database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server and wait until it answers PING (its AOF replayed)."""
        if self.process is not None and self.process.poll() is None:
            return
        log = (self.dir / "redis.log").open("ab")
        self.process = subprocess.Popen(
            [
                self.executable,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--dir", str(self.dir),
                "--appendonly", "yes",
                "--appendfsync", "always",
                "--save", "",
                "--daemonize", "no",
                "--logfile", "",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + _READY_TIMEOUT
        while not self.ping():
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited; see {self.dir / 'redis.log'}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not answer PING within {_READY_TIMEOUT} s")
            time.sleep(0.02)

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server: SIGTERM (a clean shutdown) or SIGKILL (a crash)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.process.wait(timeout=_READY_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def restart(self, *, kill: bool = False, down_for: float = 0.0) -> None:
        """Stop the server, leave it down for `down_for` seconds, and start it again."""
        self.stop(kill=kill)
        time.sleep(down_for)
        self.start()

    def ping(self) -> bool:
        """True when the server answers PING (False while it loads its data or is down)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def flushall(self) -> None:
        """Empty every database."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5.0) as conn:
            conn.sendall(b"FLUSHALL\r\n")
            reply = conn.recv(64)
        if not reply.startswith(b"+OK"):
            raise RuntimeError(f"FLUSHALL failed: {reply!r}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A real redis-server for the session (see the module docstring)."""
    executable = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )
    if executable is None:
        pytest.skip("redis-server is not installed (`make test` installs it)")
    server = RedisServer(executable, tmp_path_factory.mktemp("redis"), _free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session server's URL, emptied for this test."""
    redis_server.start()  # An earlier test may have left it stopped.
    redis_server.flushall()
    return redis_server.url


@pytest.fixture
def stream_prefix() -> str:
    """A key prefix no other test uses."""
    return f"t{uuid.uuid4().hex[:10]}:"
