"""What another web page can make a browser send to a loopback server is refused (issue 23,
item 1): forms, `text/plain` and body-less POSTs, foreign `Origin` and `Sec-Fetch-Site`, and a
rebinding `Host`. Each attack is sent as the browser would send it, over a real uvicorn, and
leaves the task as it was; the same calls from a program (no browser headers) still work.
The control plane's API has the same guard.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_core.errors import UserError
from agent_core.spec import AgentSpec
from stepwise.http.settings import allowed_hosts, check_exposure
from stepwise.server import ServerSettings
from stepwise.services import (
    AgentService,
    ControlPlaneServer,
    PipelineOrchestrator,
    SimpleMessageQueue,
)
from tests.stepwise.server.conftest import running_server
from tests.stepwise.services._system import echo_agent, free_port, served, wait_for

FOREIGN = "http://127.0.0.1:9"  # Another origin on this machine: a page on another port.
FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A loopback server with no token (the default) whose agent asks before each tool call."""
    monkeypatch.setenv("STEPWISE_WORKSPACES", str(tmp_path / "workspaces"))
    settings = ServerSettings(
        db=tmp_path / "stepwise.db",
        token=None,
        allowed_hosts=frozenset({"stepwise.test"}),
        default_agent=AgentSpec(tool_approval=True),
    )
    with running_server(settings) as url:
        yield url


@pytest.fixture
def client(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=30) as http:
        yield http


def _pending(client: httpx.Client) -> tuple[str, str]:
    """A task whose model proposed a tool call that waits for a person: (task, step)."""
    task_id = client.post("/ap/v1/agent/tasks", json={"input": "What is (121 * 3) + 42?"})
    task_id = task_id.json()["task_id"]
    assert client.post(f"/ap/v1/agent/tasks/{task_id}/steps", json={}).status_code == 200
    [held] = [s for s in _view(client, task_id)["steps"] if s["status"] == "created"]
    return task_id, held["step_id"]


def _view(client: httpx.Client, task_id: str) -> dict[str, Any]:
    return client.get(f"/stepwise/v1/tasks/{task_id}").json()


def _files(client: httpx.Client, task_id: str) -> list[dict[str, Any]]:
    return client.get(f"/ap/v1/agent/tasks/{task_id}/artifacts").json()["artifacts"]


def _browser(origin: str, site: str = "cross-site", **more: str) -> dict[str, str]:
    """The headers Chromium adds to a request one page makes to another origin."""
    return {"Origin": origin, "Sec-Fetch-Site": site, "Sec-Fetch-Mode": "no-cors", **more}


# (what, route under the task, headers, body, status, code): each as a page would send it.
ATTACKS = [
    ("form approving", "approve", {**_browser(FOREIGN), "Content-Type": FORM}, b"", 403),
    ("form with fields", "approve", {**_browser(FOREIGN), "Content-Type": FORM}, b"a=1", 403),
    ("body-less run", "steps", _browser(FOREIGN), b"", 403),
    ("text/plain run", "steps", _browser(FOREIGN, **{"Content-Type": "text/plain"}), b"{}", 403),
    ("foreign Origin", "approve", {"Origin": "http://localhost:9"}, b"", 403),
    ("Origin null", "approve", {"Origin": "null"}, b"", 403),
    ("Sec-Fetch-Site", "steps", {"Sec-Fetch-Site": "cross-site"}, b"", 403),
    ("same-site port", "steps", {"Sec-Fetch-Site": "same-site"}, b"", 403),
    ("foreign Referer", "steps", {"Referer": "http://evil.test/page"}, b"", 403),
    ("form, no markers", "approve", {"Content-Type": FORM}, b"", 415),
    ("text/plain, no markers", "steps", {"Content-Type": "text/plain"}, b'{"input":"x"}', 415),
]
CODES = {403: "cross_origin_refused", 415: "unsupported_media_type"}


@pytest.mark.parametrize(
    ("route", "headers", "body", "status"),
    [attack[1:] for attack in ATTACKS],
    ids=[attack[0] for attack in ATTACKS],
)
def test_a_forged_request_is_refused_and_changes_nothing(client, route, headers, body, status):
    task_id, step_id = _pending(client)
    before = _view(client, task_id)
    path = {
        "approve": f"/stepwise/v1/tasks/{task_id}/steps/{step_id}/approve",
        "steps": f"/ap/v1/agent/tasks/{task_id}/steps",
    }[route]

    refused = client.post(path, content=body, headers=headers)

    assert refused.status_code == status, refused.text
    assert refused.json()["error"]["code"] == CODES[status]
    assert _view(client, task_id) == before  # Same version, same steps: the tool never ran.


def test_a_rebinding_host_reads_nothing_and_runs_nothing(client, server):
    task_id, _ = _pending(client)
    before = _view(client, task_id)
    rebound = {"Host": f"rebind.test:{server.rsplit(':', 1)[1]}"}

    listed = client.get("/ap/v1/agent/tasks", headers=rebound)
    ran = client.post(f"/ap/v1/agent/tasks/{task_id}/steps", json={}, headers=rebound)
    executed = client.post("/v1/agent/execute", json={"messages": []}, headers=rebound)
    health = client.get("/health", headers=rebound)

    for refused in (listed, ran, executed):
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "host_not_allowed"
        assert "STEPWISE_ALLOWED_HOSTS" in refused.json()["error"]["hint"]
        assert task_id not in refused.text
    assert health.json() == {"status": "ok", "model": None}  # Open, but names no model.
    assert _view(client, task_id) == before


def test_an_upload_from_another_page_writes_no_file(client):
    task_id, _ = _pending(client)
    files = {"file": ("evil.txt", b"pwned", "text/plain")}

    forged = client.post(
        f"/ap/v1/agent/tasks/{task_id}/artifacts", files=files, headers=_browser(FOREIGN)
    )
    elsewhere = client.post(f"/stepwise/v1/tasks/{task_id}/feedback", files=files)

    assert forged.status_code == 403 and forged.json()["error"]["code"] == "cross_origin_refused"
    assert elsewhere.status_code == 415  # Multipart is read by the upload route only.
    assert _files(client, task_id) == []


def test_a_program_and_the_servers_own_pages_still_work(client, server):
    task_id, step_id = _pending(client)
    approve = f"/stepwise/v1/tasks/{task_id}/steps/{step_id}/approve"
    own = _browser(server, site="same-origin")  # /docs (Swagger UI) on this server.

    approved = client.post(approve, headers=own)  # Body-less, as Swagger sends it.
    ran = client.post(f"/ap/v1/agent/tasks/{task_id}/steps")  # Body-less, from a program.
    uploaded = client.post(
        f"/ap/v1/agent/tasks/{task_id}/artifacts", files={"file": ("a.txt", b"hi", "text/plain")}
    )
    named = client.get("/ap/v1/agent/tasks", headers={"Host": "stepwise.test"})  # Allowed.
    by_name = client.post(
        f"/stepwise/v1/tasks/{task_id}/feedback",
        json={"text": "thanks"},
        headers={"Host": "proxy.internal", "Origin": "https://stepwise.test"}
        | {"Sec-Fetch-Site": "same-origin"},
    )

    assert approved.status_code == 200, approved.text
    assert ran.status_code == 200, ran.text
    assert uploaded.status_code == 200, uploaded.text
    assert named.status_code == 200
    assert by_name.status_code == 403  # proxy.internal is no name of the server's.
    assert [f["relative_path"] for f in _files(client, task_id)] == ["a.txt"]
    done = [s for s in _view(client, task_id)["steps"] if s["step_id"] == step_id]
    assert done[0]["status"] == "completed" and done[0]["output"] == "363"


def test_a_page_under_an_allowed_name_may_change_state(client, server):
    task_id, _ = _pending(client)
    port = server.rsplit(":", 1)[1]
    page = {"Host": f"stepwise.test:{port}", "Origin": "https://stepwise.test"}

    answered = client.post(
        f"/stepwise/v1/tasks/{task_id}/feedback", json={"text": "hi"}, headers=page
    )

    assert answered.status_code == 200, answered.text


# ------------------------------------------------------------------------- the control plane


@pytest.fixture
def control_plane_url() -> Iterator[str]:
    queue = SimpleMessageQueue()
    echo = AgentService(echo_agent(str.upper)[0], queue, service_name="echo", description="Echo.")
    control_plane = ControlPlaneServer(queue, PipelineOrchestrator(["echo"]), port=free_port())
    with served([echo], control_plane, queue) as url:
        yield url


def test_the_control_plane_refuses_what_a_page_forges(control_plane_url):
    with httpx.Client(base_url=control_plane_url, timeout=30) as plain:
        task_id = plain.post("/tasks", json={"input": "go", "step_mode": True}).json()["task_id"]
        [hop] = wait_for(lambda: plain.get("/hops/pending").json())
        approve = f"/tasks/{task_id}/hops/{hop['hop_id']}/approve"
        rebound = {"Host": "rebind.test"}

        attacks = [
            plain.post(approve, headers=_browser(FOREIGN)),
            plain.post(approve, headers={**_browser(FOREIGN), "Content-Type": FORM}),
            plain.post("/tasks", content=b'{"input":"x"}', headers={"Content-Type": "text/plain"}),
            plain.post(approve, headers=rebound),
            plain.get("/tasks", headers=rebound),
        ]
        still = plain.get("/hops/pending").json()
        tasks = plain.get("/tasks").json()
        approved = plain.post(approve)  # A program's body-less POST.

    assert [a.status_code for a in attacks] == [403, 403, 415, 403, 403]
    codes = [a.json()["error"]["code"] for a in attacks]
    assert (
        codes
        == ["cross_origin_refused"] * 2 + ["unsupported_media_type"] + ["host_not_allowed"] * 2
    )
    assert [h["hop_id"] for h in still] == [hop["hop_id"]] and len(tasks) == 1
    assert approved.status_code == 200, approved.text


# ------------------------------------------------------------------------- settings


def test_an_exposed_server_refuses_a_short_token_and_loopback_needs_none():
    with pytest.raises(UserError, match="at least 16 characters"):
        check_exposure("0.0.0.0", "short-token")
    check_exposure("0.0.0.0", "a-long-random-secret")
    check_exposure("127.0.0.1", None)
    check_exposure("localhost", "short")


def test_serve_refuses_a_short_token_beyond_loopback_before_opening_anything(tmp_path):
    env = {**os.environ, "STEPWISE_API_TOKEN": "hunter2", "STEPWISE_WORKSPACES": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "stepwise.cli", "serve", "--host", "0.0.0.0", "--port", "9"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    assert "7-character token" in done.stderr and "at least 16" in done.stderr
    assert "hunter2" not in done.stderr
    assert not (tmp_path / "stepwise.db").exists()


def test_allowed_hosts_are_names_and_a_url_is_refused_with_the_variable():
    env = {"STEPWISE_ALLOWED_HOSTS": " Stepwise.Example.com, ,api.internal. "}
    assert allowed_hosts(env) == {"stepwise.example.com", "api.internal"}
    with pytest.raises(UserError, match="STEPWISE_ALLOWED_HOSTS"):
        allowed_hosts({"STEPWISE_ALLOWED_HOSTS": "https://stepwise.example.com"})
