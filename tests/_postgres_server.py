"""A real PostgreSQL server (Debian's) for the tests that need one, never a fake.

A pytest plugin like `tests._redis_server`: one server per session, shared by every test that
asks for it. Fixtures:

- `postgres_server` (session): `initdb` in a temporary folder, then `postgres` on a free
  loopback port with its unix socket in that folder, `fsync=off` (a test database need not
  survive a power cut) and trust authentication on loopback. As root it runs as the
  `postgres` user (`initdb` refuses root), in a folder that user owns. It answers a query
  before any test uses it and is stopped (`pg_ctl stop -m fast`) and removed when the session
  ends. Attributes: `url` (the `stepwise_test` database), `port`, `dir`.
- `postgres_url` (per test): the server's URL. Tests keep apart by schema: a `PostgresStore`
  opened with a schema no other test uses (`postgres_schema`) never sees another's tables.
- `postgres_schema` (per test): a fresh schema name (`t<hex>`), dropped after the test.

There is no skip: when the PostgreSQL binaries are missing the fixture fails, saying how to
install them (`apt-get install postgresql`; `make test` installs them).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

_READY_TIMEOUT = 30.0
_DATABASE = "stepwise_test"
_SEARCH = ("/usr/lib/postgresql/*/bin",)


def _binaries() -> Path:
    """The folder holding `initdb`, `pg_ctl` and `postgres`, or a failure saying how to get it."""
    found = shutil.which("pg_ctl")
    if found is not None:
        return Path(os.path.realpath(found)).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), reverse=True)
    if versions:
        return versions[0].parent
    pytest.fail(
        "the PostgreSQL server binaries (initdb, pg_ctl) are not installed: "
        "`apt-get install postgresql` (Debian's package; `make test` installs it)",
        pytrace=False,
    )


class PostgresServer:
    """A `postgres` process this test session owns, in a folder of its own."""

    def __init__(self, bin_dir: Path, directory: Path, port: int, *, durable: bool = False) -> None:
        self.bin_dir = bin_dir
        self.durable = durable  # PostgreSQL's own durability settings (fsync on): to measure.
        self.dir = directory
        self.port = port
        self.data = directory / "data"
        # As root the server runs as `postgres` (initdb refuses root); otherwise as us.
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    @property
    def url(self) -> str:
        """The test database's URL (TCP on loopback; trust authentication)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{_DATABASE}"

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            [*self._as, *args], capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}):\n{done.stdout}{done.stderr}")

    def init(self) -> None:
        """Create the cluster (initdb) and the test database."""
        self._run(
            str(self.bin_dir / "initdb"),
            "-D", str(self.data),
            "-U", "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )  # fmt: skip

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        fast = ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        options = " ".join(
            [
                f"-p {self.port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.dir}",
                "-c max_connections=200",
                *([] if self.durable else fast),
            ]
        )
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D", str(self.data),
            "-l", str(self.dir / "postgres.log"),
            "-o", options,
            "-w", "-t", str(int(_READY_TIMEOUT)),
            "start",
        )  # fmt: skip

    def create_database(self) -> None:
        """The database the tests use (the cluster starts with `postgres` only)."""
        import psycopg

        admin = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        deadline = time.monotonic() + _READY_TIMEOUT
        while True:
            try:
                with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f'CREATE DATABASE "{_DATABASE}"')
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server (fast shutdown: open sessions are ended)."""
        if (self.data / "postmaster.pid").exists():
            self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _own_folder() -> Path:
    """A temporary folder the server's user owns (pytest's tmp folders are root's, mode 0700)."""
    directory = Path(tempfile.mkdtemp(prefix="stepwise-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(directory, user.pw_uid, user.pw_gid)
    return directory


class _Shared:
    """One server per test process, however many modules import the fixture.

    A module that imports `postgres_server` (until the root conftest loads this plugin)
    defines a fixture of its own; each would start a server. They share this one instead,
    and the last to finish stops it.
    """

    server: PostgresServer | None = None
    users = 0

    @classmethod
    def take(cls) -> PostgresServer:
        if cls.server is None:
            server = PostgresServer(_binaries(), _own_folder(), _free_port())
            try:
                server.init()
                server.start()
                server.create_database()
            except BaseException:
                cls._remove(server)
                raise
            cls.server = server
        cls.users += 1
        return cls.server

    @classmethod
    def give_back(cls) -> None:
        cls.users -= 1
        if cls.users == 0 and cls.server is not None:
            server, cls.server = cls.server, None
            cls._remove(server)

    @staticmethod
    def _remove(server: PostgresServer) -> None:
        try:
            server.stop()
        finally:
            shutil.rmtree(server.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL for the session (see the module docstring)."""
    server = _Shared.take()
    try:
        yield server
    finally:
        _Shared.give_back()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The session server's URL."""
    return postgres_server.url


@pytest.fixture
def postgres_schema(postgres_url: str) -> Iterator[str]:
    """A schema name no other test uses; the schema (if created) is dropped afterwards."""
    import psycopg
    from psycopg import sql

    name = f"t{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
