"""`stepwise mcp --http`: the MCP SDK's client over streamable HTTP, and the guard in front of it.

The guard is `stepwise serve`'s: a foreign Host name and a state-changing request from another
web page are refused (403) before the token is checked, and with `STEPWISE_API_TOKEN` set a
request without it is refused (401) while a client that sends it works.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agent_core.demos import ARITHMETIC_TASK
from tests.stepwise.mcp._session import call, free_port, serve_http

TOKEN = "a-token-of-sixteen-chars-or-more"
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "page", "version": "1"},
    },
}
_ACCEPT = {"Accept": "application/json, text/event-stream"}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEPWISE_")}
    return {**env, **extra}


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`stepwise mcp --http` with no token, shared by this module's tests; its endpoint's URL."""
    port = free_port()
    process = serve_http(tmp_path_factory.mktemp("open"), port, _env())
    yield f"http://127.0.0.1:{port}/mcp"
    _stop(process)


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`stepwise mcp --http` with `STEPWISE_API_TOKEN` set; its endpoint's URL."""
    port = free_port()
    process = serve_http(tmp_path_factory.mktemp("token"), port, _env(STEPWISE_API_TOKEN=TOKEN))
    yield f"http://127.0.0.1:{port}/mcp"
    _stop(process)


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def test_a_client_session_over_http_creates_and_runs_a_task(open_server: str) -> None:
    async with (
        streamable_http_client(open_server) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert len((await session.list_tools()).tools) >= 15
        task_id = (await call(session, "create_task", input=ARITHMETIC_TASK)).split()[2]
        held = await call(session, "run_until", task_id=task_id, before_tools=True)
        assert "stopped (breakpoint)" in held
        assert "rejected tool step" in await call(session, "reject", task_id=task_id, reason="no")


def test_a_foreign_host_name_is_refused(open_server: str) -> None:
    reply = httpx.post(open_server, json=_INITIALIZE, headers={**_ACCEPT, "Host": "evil.example"})
    assert reply.status_code == 403
    assert reply.json()["error"]["code"] == "host_not_allowed"


def test_a_post_from_another_page_is_refused(open_server: str) -> None:
    page = {**_ACCEPT, "Origin": "http://localhost:9999", "Sec-Fetch-Site": "same-site"}
    reply = httpx.post(open_server, json=_INITIALIZE, headers=page)
    assert reply.status_code == 403
    assert reply.json()["error"]["code"] == "cross_origin_refused"
    # The same request from a program (no Origin) is answered.
    assert httpx.post(open_server, json=_INITIALIZE, headers=_ACCEPT).status_code == 200


def test_with_a_token_a_request_without_it_is_refused(token_server: str) -> None:
    refused = httpx.post(token_server, json=_INITIALIZE, headers=_ACCEPT)
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"
    wrong = httpx.post(
        token_server, json=_INITIALIZE, headers={**_ACCEPT, "Authorization": "Bearer wrong"}
    )
    assert wrong.status_code == 401


async def test_with_a_token_a_client_that_sends_it_works(token_server: str) -> None:
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
    async with (
        client,
        streamable_http_client(token_server, http_client=client) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert "no tasks yet" in await call(session, "list_tasks")
