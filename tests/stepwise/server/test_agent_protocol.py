"""The Agent Protocol v1 over a real uvicorn: every route, checked against the v1 schema."""

from __future__ import annotations

import base64
import threading
import urllib.parse
from typing import Any

import httpx
import pytest

from agent_core import AgentRunner
from agent_core.errors import StepError
from agent_core.llms import ScriptedLLM
from agent_core.store import SQLiteStore
from agent_core.workers import ReActAgentWorker
from stepwise.server.agent_protocol import step_of

SEED = "What is (121 * 3) + 42?"

# The Agent Protocol v1's models, as its OpenAPI document defines them.
ARTIFACT = {
    "type": "object",
    "required": ["artifact_id", "agent_created", "file_name"],
    "properties": {
        "artifact_id": {"type": "string"},
        "agent_created": {"type": "boolean"},
        "file_name": {"type": "string"},
        "relative_path": {"type": ["string", "null"]},
    },
}
PAGINATION = {
    "type": "object",
    "required": ["total_items", "total_pages", "current_page", "page_size"],
    "properties": {
        k: {"type": "integer"} for k in ("total_items", "total_pages", "current_page", "page_size")
    },
}
TASK = {
    "type": "object",
    "required": ["task_id", "artifacts"],
    "properties": {
        "task_id": {"type": "string"},
        "input": {"type": ["string", "null"]},
        "additional_input": {"type": ["object", "null"]},
        "artifacts": {"type": "array", "items": ARTIFACT},
    },
}
STEP = {
    "type": "object",
    "required": ["task_id", "step_id", "status", "artifacts", "is_last"],
    "properties": {
        "task_id": {"type": "string"},
        "step_id": {"type": "string"},
        "name": {"type": ["string", "null"]},
        "status": {"enum": ["created", "running", "completed"]},
        "input": {"type": ["string", "null"]},
        "additional_input": {"type": ["object", "null"]},
        "output": {"type": ["string", "null"]},
        "additional_output": {"type": ["object", "null"]},
        "artifacts": {"type": "array", "items": ARTIFACT},
        "is_last": {"type": "boolean"},
    },
}


def _list_of(key: str, item: dict) -> dict:
    return {
        "type": "object",
        "required": [key, "pagination"],
        "properties": {key: {"type": "array", "items": item}, "pagination": PAGINATION},
    }


_TYPES = {
    "string": str,
    "integer": int,
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}


def check(value: Any, schema: dict, where: str = "$") -> None:
    """Validate `value` against the small JSON Schema subset the protocol's models use."""
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
        return
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    ok = any(
        isinstance(value, _TYPES[k]) and not (k == "integer" and isinstance(value, bool))
        for k in kinds
    )
    assert ok, f"{where}: {value!r} is not {kinds}"
    if isinstance(value, dict):
        for name in schema.get("required", []):
            assert name in value, f"{where}: missing {name}"
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                check(value[name], sub, f"{where}.{name}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            check(item, schema["items"], f"{where}[{index}]")


def _new_task(client: httpx.Client, text: str = SEED) -> dict:
    response = client.post("/ap/v1/agent/tasks", json={"input": text})
    assert response.status_code == 200, response.text
    check(response.json(), TASK)
    return response.json()


def _step(client: httpx.Client, task_id: str, text: str | None = None) -> dict:
    body = {"input": text} if text else {}
    response = client.post(f"/ap/v1/agent/tasks/{task_id}/steps", json=body)
    assert response.status_code == 200, response.text
    check(response.json(), STEP)
    return response.json()


def test_the_seed_question_runs_to_405_with_steering_and_an_undo(client, settings):
    task_id = _new_task(client)["task_id"]

    first = _step(client, task_id)
    assert first["name"].startswith("multiply(121, 3)") and first["status"] == "completed"
    undone = client.post(f"/stepwise/v1/tasks/{task_id}/undo", json={"steps": 1})
    assert undone.status_code == 200 and undone.json()["steps"][0]["status"] == "created"

    steered = _step(client, task_id, f"{SEED} Show your work.")
    assert steered["input"] == f"{SEED} Show your work."
    assert steered["additional_output"]["edited"] is True
    second = _step(client, task_id)
    last = _step(client, task_id)

    assert second["name"].startswith("add(363, 42)")
    assert last["is_last"] is True and "405" in last["output"]
    steps = client.get(f"/ap/v1/agent/tasks/{task_id}/steps").json()
    check(steps, _list_of("steps", STEP))
    assert [s["status"] for s in steps["steps"]] == ["completed"] * 3
    undone_step = client.get(f"/ap/v1/agent/tasks/{task_id}/steps/{first['step_id']}").json()
    assert undone_step["additional_output"]["stepwise_status"] == "undone"

    # The task is in the app's store, as the app reads it.
    app_runner = AgentRunner(ReActAgentWorker([], ScriptedLLM([])), store=SQLiteStore(settings.db))
    assert app_runner.get_task(task_id).input == SEED
    assert len(app_runner.get_task_state(task_id).completed) == 3


def test_tasks_are_listed_in_pages_and_unknown_ids_are_404(client):
    made = [_new_task(client, f"{SEED} #{n}")["task_id"] for n in range(3)]
    page = client.get("/ap/v1/agent/tasks", params={"current_page": 2, "page_size": 2}).json()
    check(page, _list_of("tasks", TASK))
    assert page["pagination"] == {
        "total_items": 3,
        "total_pages": 2,
        "current_page": 2,
        "page_size": 2,
    }
    assert [t["task_id"] for t in page["tasks"]] == [made[0]]  # Newest first.
    assert client.get(f"/ap/v1/agent/tasks/{made[1]}").json()["task_id"] == made[1]
    for path in ("/ap/v1/agent/tasks/nope", f"/ap/v1/agent/tasks/{made[0]}/steps/nope"):
        missing = client.get(path)
        assert missing.status_code == 404 and missing.json()["error"]["code"].endswith("not_found")


def test_artifacts_are_uploaded_listed_and_downloaded_inside_the_workspace(client, settings):
    task_id = _new_task(client)["task_id"]
    files = {"file": ("data.csv", b"a,b\n1,2\n", "text/csv")}
    made = client.post(
        f"/ap/v1/agent/tasks/{task_id}/artifacts",
        files=files,
        data={"relative_path": "in/data.csv"},
    )
    assert made.status_code == 200, made.text
    check(made.json(), ARTIFACT)

    listed = client.get(f"/ap/v1/agent/tasks/{task_id}/artifacts").json()
    check(listed, _list_of("artifacts", ARTIFACT))
    [artifact] = listed["artifacts"]
    assert artifact["relative_path"] == "in/data.csv" and artifact["agent_created"] is False
    got = client.get(f"/ap/v1/agent/tasks/{task_id}/artifacts/{artifact['artifact_id']}")
    assert got.content == b"a,b\n1,2\n"
    assert client.get(f"/ap/v1/agent/tasks/{task_id}").json()["artifacts"] == [artifact]


@pytest.mark.parametrize(
    ("name", "ascii_name"),
    [("日本.txt", "__.txt"), ("llama 🦙.svg", "llama _.svg"), ("plain.txt", "plain.txt")],
)
def test_an_artifact_named_in_any_script_downloads_with_its_name(client, name, ascii_name):
    """The name was written into a Latin-1 header as is: a 500 for `日本.txt` (issue 23, 5)."""
    task_id = _new_task(client)["task_id"]
    files = {"file": (name, "内容".encode(), "text/plain")}
    made = client.post(f"/ap/v1/agent/tasks/{task_id}/artifacts", files=files)
    assert made.status_code == 200, made.text

    got = client.get(f"/ap/v1/agent/tasks/{task_id}/artifacts/{made.json()['artifact_id']}")

    assert got.status_code == 200 and got.content == "内容".encode()
    header = got.headers["content-disposition"]
    assert header.startswith(f'attachment; filename="{ascii_name}"')
    encoded = header.partition("filename*=UTF-8''")[2]
    assert urllib.parse.unquote(encoded) == (name if name != ascii_name else "")


@pytest.mark.parametrize("path", ["../../escape.txt", "/etc/cron.d/x", "a/../../b", "..\\up"])
def test_an_upload_cannot_leave_the_workspace(client, tmp_path, path):
    task_id = _new_task(client)["task_id"]
    files = {"file": ("x.txt", b"owned", "text/plain")}
    response = client.post(
        f"/ap/v1/agent/tasks/{task_id}/artifacts", files=files, data={"relative_path": path}
    )
    assert response.status_code == 422 and response.json()["error"]["code"] in (
        "invalid_path",
        "invalid_request",
    )
    assert not (tmp_path / "escape.txt").exists()
    sneaky = base64.urlsafe_b64encode(b"../stepwise.db").decode().rstrip("=")
    assert client.get(f"/ap/v1/agent/tasks/{task_id}/artifacts/{sneaky}").status_code == 422


def test_events_stream_in_order_while_another_request_runs_a_step(client):
    task_id = _new_task(client)["task_id"]
    seen: list[str] = []
    subscribed = threading.Event()

    def watch() -> None:
        with httpx.Client(base_url=str(client.base_url), timeout=30) as watcher:
            with watcher.stream("GET", f"/stepwise/v1/tasks/{task_id}/events") as events:
                for line in events.iter_lines():
                    if line.startswith("event: "):
                        seen.append(line.removeprefix("event: "))
                        subscribed.set()
                    if "step_completed" in seen:
                        return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    assert subscribed.wait(20)
    _step(client, task_id)
    thread.join(20)

    assert seen[0] == "subscribed"
    assert seen.index("step_started") < seen.index("step_completed")
    assert "tool_call_started" in seen and "tool_call_finished" in seen


def test_a_failed_step_gives_the_code_of_what_failed_it():
    runner = AgentRunner(ReActAgentWorker([], ScriptedLLM([])))
    task_id = runner.create_task(SEED).task_id
    with pytest.raises(StepError):
        runner.run_step(task_id)
    state = runner.get_task_state(task_id)
    (failed,) = state.step_queue
    extra = step_of(state, failed).additional_output or {}
    assert extra["error"].startswith("ScriptedLLM")
    assert (extra["error_code"], extra["error_params"]) == ("script_exhausted", {"replies": 0})
