"""Artifact uploads: read-only imported tasks, no folder an imported trace chooses, one limit.

Issue 23, item 9: uploads were accepted on imported tasks and landed wherever the trace's
`spec.workspace` said (outside `STEPWISE_WORKSPACES`); the listing read that folder too; and
the gate capped uploads at 1 MB while the artifact limit said 50 MB.
"""

from __future__ import annotations

import base64
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from agent_core.spec import AgentSpec
from agent_core.store import InMemoryStore, SQLiteStore
from agent_core.task_files import workspace_folder
from agent_core.trace import export_trace, import_trace
from agent_core.types import Task
from stepwise.server.agent_protocol import MAX_ARTIFACT_BYTES


def _trace_naming(folder: Path) -> tuple[str, str]:
    """(task id, trace) of a demo task whose spec puts its workspace in `folder`."""
    runner = AgentSpec(workspace=str(folder)).build_runner(store=InMemoryStore())
    task = runner.create_task("What is (121 * 3) + 42?")
    runner.run_step(task.task_id)
    return task.task_id, export_trace(runner.get_task_state(task.task_id))


def _upload(client: httpx.Client, task_id: str, data: bytes, path: str) -> httpx.Response:
    files = {"file": ("f.bin", data, "application/octet-stream")}
    return client.post(
        f"/ap/v1/agent/tasks/{task_id}/artifacts", files=files, data={"relative_path": path}
    )


def test_an_imported_trace_never_chooses_where_its_files_are(client, settings, tmp_path):
    outside = tmp_path / "elsewhere"
    task_id, trace = _trace_naming(outside)
    assert json.loads(trace)["task"]["task"]["spec"]["workspace"] == str(outside)
    (outside / task_id).mkdir(parents=True)
    (outside / task_id / "secret.txt").write_text("not the task's")
    store = SQLiteStore(settings.db)
    try:  # Restored under its own id, as a person restores a task a store lost.
        import_trace(trace, store, as_new=False)
        stored = AgentSpec().build_runner(store=store).get_task(task_id)
    finally:
        store.close()

    assert client.get(f"/ap/v1/agent/tasks/{task_id}/artifacts").json()["artifacts"] == []
    secret = base64.urlsafe_b64encode(b"secret.txt").decode().rstrip("=")
    got = client.get(f"/ap/v1/agent/tasks/{task_id}/artifacts/{secret}")
    assert got.status_code == 404 and "not the task's" not in got.text
    assert stored.spec is not None and "workspace" not in stored.spec  # Dropped on import.
    root = Path(os.environ["STEPWISE_WORKSPACES"]).resolve()
    assert workspace_folder(stored) == root / task_id


def test_a_task_imported_before_the_fix_reads_under_the_workspaces_root(settings, tmp_path):
    """A row stored with the trace's folder still gets the configured root's."""
    task = Task(task_id="a" * 32, input="x", spec={"workspace": str(tmp_path / "x")}, imported=True)
    root = Path(os.environ["STEPWISE_WORKSPACES"]).resolve()
    assert workspace_folder(task) == root / task.task_id
    assert workspace_folder(task.model_copy(update={"imported": False})) == (
        (tmp_path / "x").resolve() / task.task_id
    )


def test_an_upload_to_an_imported_task_is_refused_as_read_only(client, settings, tmp_path):
    outside = tmp_path / "elsewhere"
    _, trace = _trace_naming(outside)
    store = SQLiteStore(settings.db)
    try:
        task_id = import_trace(trace, store)
    finally:
        store.close()

    response = _upload(client, task_id, b"planted", "notes.txt")

    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "task_not_active"
    assert error["params"] == {"status": "imported", "action": "take uploads"}
    # Neither where the trace said nor under the workspaces root.
    assert list(tmp_path.rglob("notes.txt")) == []


def test_an_upload_over_the_general_body_limit_is_taken_up_to_the_artifact_limit(client):
    task_id = client.post("/ap/v1/agent/tasks", json={"input": "hi"}).json()["task_id"]
    data = os.urandom(3_000_000)  # Over the 1 MB every other route reads.

    made = _upload(client, task_id, data, "big.bin")

    assert made.status_code == 200, made.text
    got = client.get(f"/ap/v1/agent/tasks/{task_id}/artifacts/{made.json()['artifact_id']}")
    assert got.content == data


def _declared_post(url: str, path: str, length: int, kind: str) -> tuple[int, dict]:
    """POST declaring `length` bytes and sending none: the gate answers before reading."""
    where = urlsplit(url)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {where.netloc}\r\nContent-Type: {kind}\r\n"
        f"Content-Length: {length}\r\n\r\n"
    )
    with socket.create_connection((where.hostname, where.port), timeout=30) as sock:
        sock.sendall(head.encode())
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2])


def test_one_limit_an_upload_over_the_artifact_limit_and_a_large_request_say_what_holds(
    serve: Callable[..., str],
):
    url = serve()
    task_id = httpx.post(f"{url}/ap/v1/agent/tasks", json={"input": "hi"}).json()["task_id"]
    multipart = "multipart/form-data; boundary=x"

    over_upload, upload_error = _declared_post(
        url, f"/ap/v1/agent/tasks/{task_id}/artifacts", MAX_ARTIFACT_BYTES + 10**6, multipart
    )
    over_execute, execute_error = _declared_post(
        url, "/v1/agent/execute", 2_000_000, "application/json"
    )

    assert over_execute == over_upload == 413
    assert f"{MAX_ARTIFACT_BYTES:,}" in upload_error["error"]["hint"]
    assert "smaller file" in upload_error["error"]["hint"]
    # Execute Agent has no task, so no artifact to upload instead.
    assert "artifact" not in json.dumps(execute_error).lower()
    assert "1,000,000" in execute_error["error"]["message"]
