"""Header floods against a real `stepwise serve` and the control plane, over raw sockets.

Request headers are read before the token gate runs: a parser that buffers them without limit
lets anyone grow the server's memory (ten 64 MB headers took it from 78 MB to 649 MB). Both
servers listen through `stepwise.http.listening`, which refuses a header block past
`MAX_HEADER_BYTES` or `MAX_HEADER_COUNT` fields with a 431 and closes the connection.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stepwise.http.listening import MAX_HEADER_BYTES, MAX_HEADER_COUNT
from stepwise.services import ControlPlaneServer, PipelineOrchestrator, SimpleMessageQueue
from tests._serve_process import wait_healthy
from tests.stepwise.services._system import free_port, served

TOKEN = "a-token-of-the-flood-test"
FLOOD_BYTES = 64 * 1024 * 1024
CHUNK = 256 * 1024
FLOODS = 10
RSS_GROWTH_BOUND_MB = 100  # Unbounded, ten floods grew it by about 570 MB.


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, int]]:
    """`stepwise serve` with a token, in its own process: (host, port, pid)."""
    folder = tmp_path_factory.mktemp("flood")
    port = free_port()
    env = {**os.environ, "STEPWISE_WORKSPACES": str(folder / "ws"), "STEPWISE_API_TOKEN": TOKEN}
    command = [sys.executable, "-m", "stepwise.cli", "serve", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--db", str(folder / "runs.db")],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process)
        yield "127.0.0.1", port, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def _flood(host: str, port: int) -> tuple[socket.socket, int]:
    """Send one header of up to 64 MB in chunks; the open socket and the bytes it took."""
    sock = socket.create_connection((host, port), timeout=10)
    sock.sendall(f"GET /ap/v1/agent/tasks HTTP/1.1\r\nHost: {host}\r\nX-Flood: ".encode())
    chunk, sent = b"a" * CHUNK, 0
    try:
        while sent < FLOOD_BYTES:
            sock.sendall(chunk)
            sent += len(chunk)
    except OSError:  # Refused: the server closed the connection.
        pass
    return sock, sent


def _answer(sock: socket.socket) -> bytes:
    """What the server answered before closing (b"" when it closed without a word)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except OSError:
        pass
    return received


def _raw_request(host: str, port: int, headers: list[str], path: str = "/health") -> bytes:
    """One request with these header lines; the status line of the answer."""
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", *headers, "Connection: close", "", ""]
    with socket.create_connection((host, port), timeout=10) as sock:
        try:
            sock.sendall("\r\n".join(lines).encode())
        except OSError:
            pass
        return _answer(sock).split(b"\r\n", 1)[0]


def test_ten_64_mb_headers_are_refused_and_the_server_stays_small(server):
    host, port, pid = server
    before = _rss_mb(pid)
    started = time.monotonic()
    floods = [_flood(host, port) for _ in range(FLOODS)]  # Held open, as an attacker would.
    peak = _rss_mb(pid)
    took = time.monotonic() - started
    for sock, sent in floods:
        assert sent < FLOOD_BYTES, "the server read a whole 64 MB header"
        assert _answer(sock).startswith(b"HTTP/1.1 431"), "refused with 431, then closed"
        sock.close()
    assert peak - before < RSS_GROWTH_BOUND_MB, f"RSS {before:.0f} -> {peak:.0f} MB"
    assert took < 30, f"ten refusals took {took:.1f} s"


def test_too_many_header_fields_are_refused(server):
    host, port, _ = server
    assert _raw_request(host, port, [f"X-{n}: v" for n in range(10_000)]).startswith(
        b"HTTP/1.1 431"
    )
    # Under the byte bound but over the count bound.
    over = [f"X-{n}: v" for n in range(MAX_HEADER_COUNT + 1)]
    assert len("\r\n".join(over)) < MAX_HEADER_BYTES
    assert _raw_request(host, port, over).startswith(b"HTTP/1.1 431")


def test_normal_requests_still_pass(server):
    host, port, _ = server
    auth = f"Authorization: Bearer {TOKEN}"
    many = [auth, *(f"X-{n}: v" for n in range(MAX_HEADER_COUNT - 3))]
    assert _raw_request(host, port, many, "/ap/v1/agent/tasks").startswith(b"HTTP/1.1 200")
    cookie = f"Cookie: session={'c' * (MAX_HEADER_BYTES // 2)}"
    assert _raw_request(host, port, [auth, cookie], "/ap/v1/agent/tasks").startswith(
        b"HTTP/1.1 200"
    )
    answered = httpx.get(
        f"http://{host}:{port}/ap/v1/agent/tasks", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert answered.status_code == 200


def test_the_control_plane_refuses_header_floods_too():
    control_plane = ControlPlaneServer(
        SimpleMessageQueue(), PipelineOrchestrator(["nobody"]), port=free_port()
    )
    with served([], control_plane, control_plane.message_queue) as url:
        host, port = "127.0.0.1", int(url.rsplit(":", 1)[1])
        sock, sent = _flood(host, port)
        with sock:
            assert sent < FLOOD_BYTES and _answer(sock).startswith(b"HTTP/1.1 431")
        lines = [f"X-{n}: v" for n in range(10_000)]
        assert _raw_request(host, port, lines).startswith(b"HTTP/1.1 431")
        assert _raw_request(host, port, []).startswith(b"HTTP/1.1 200")
