"""A lone surrogate anywhere in a JSON body is a 422 `invalid_text` before anything is written.

It used to be stored with the task (`additional_input`), and the response repeating it failed
to encode: a 500 after the task existed, so a client that retried made a duplicate.
"""

from __future__ import annotations

import httpx
import pytest

from stepwise.server._invalid_text import lone_surrogate

JSON = {"content-type": "application/json"}
LONE_ESCAPE = b'"\\ud800"'  # JSON's own escape of a lone high surrogate.
LONE_BYTES = b'"\xed\xa0\x80"'  # Its UTF-8 bytes, which json.loads lets through as well.


def _task_ids(client: httpx.Client) -> list[str]:
    listed = client.get("/ap/v1/agent/tasks", params={"page_size": 100})
    assert listed.status_code == 200
    return [task["task_id"] for task in listed.json()["tasks"]]


def _refused(response: httpx.Response, field: str) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_text"
    assert error["params"]["what"] == field
    assert "nothing was written" in error["message"]


@pytest.mark.parametrize("lone", [LONE_ESCAPE, LONE_BYTES], ids=["escape", "utf8-bytes"])
def test_a_new_task_with_a_lone_surrogate_in_additional_input_is_refused_and_not_created(
    client: httpx.Client, lone: bytes
) -> None:
    kept = client.post("/ap/v1/agent/tasks", json={"input": "hi"}).json()["task_id"]
    before = _task_ids(client)
    body = b'{"input": "hi", "additional_input": {"note": ' + lone + b"}}"
    _refused(client.post("/ap/v1/agent/tasks", content=body, headers=JSON), "additional_input.note")
    assert _task_ids(client) == before == [kept]  # Nothing created: a retry makes no duplicate.
    # The connection is not reset: the same client goes on.
    assert client.post("/ap/v1/agent/tasks", json={"input": "again"}).status_code == 200


def test_a_lone_surrogate_in_a_key_is_refused_and_named_by_its_escape(
    client: httpx.Client,
) -> None:
    before = _task_ids(client)
    body = b'{"input": "hi", "additional_input": {"\\udc00": 1}}'
    refused = client.post("/ap/v1/agent/tasks", content=body, headers=JSON)
    _refused(refused, "additional_input.\\udc00")
    assert _task_ids(client) == before


def test_a_step_request_with_a_lone_surrogate_runs_no_step(client: httpx.Client) -> None:
    task_id = client.post("/ap/v1/agent/tasks", json={"input": "hi"}).json()["task_id"]
    steps = f"/ap/v1/agent/tasks/{task_id}/steps"
    before = client.get(steps).json()["steps"]
    body = b'{"input": "go", "additional_input": {"why": ' + LONE_ESCAPE + b"}}"
    _refused(client.post(steps, content=body, headers=JSON), "additional_input.why")
    assert client.get(steps).json()["steps"] == before


def test_execute_agent_refuses_a_lone_surrogate_in_a_message(client: httpx.Client) -> None:
    body = b'{"messages": [{"role": "user", "content": ' + LONE_ESCAPE + b"}]}"
    _refused(client.post("/v1/agent/execute", content=body, headers=JSON), "messages[0].content")


def test_the_extensions_refuse_a_lone_surrogate_before_the_task_changes(
    client: httpx.Client,
) -> None:
    task_id = client.post("/ap/v1/agent/tasks", json={"input": "hi"}).json()["task_id"]
    view = f"/stepwise/v1/tasks/{task_id}"
    before = client.get(view).json()
    body = b'{"text": ' + LONE_ESCAPE + b"}"
    _refused(client.post(f"{view}/feedback", content=body, headers=JSON), "text")
    conversation = b'{"messages": [{"role": "user", "content": ' + LONE_BYTES + b"}]}"
    refused = client.put(f"{view}/conversation", content=conversation, headers=JSON)
    _refused(refused, "messages[0].content")
    assert client.get(view).json()["version"] == before["version"]


def test_a_surrogate_pair_is_a_character_and_passes(client: httpx.Client) -> None:
    body = b'{"input": "smile", "additional_input": {"note": "\\ud83d\\ude00"}}'
    created = client.post("/ap/v1/agent/tasks", content=body, headers=JSON)
    assert created.status_code == 200, created.text
    assert created.json()["additional_input"] == {"note": "\N{GRINNING FACE}"}


def test_the_scan_finds_the_first_lone_surrogate_and_leaves_other_bodies_alone() -> None:
    assert lone_surrogate(b'{"a": ["ok", {"b": "x\\uDBFFy"}]}') == ("a[1].b", 1)
    assert lone_surrogate(b'"\\ud800"') == ("body", 0)
    assert lone_surrogate(b'{"a": "\\ud83d\\ude00"}') is None  # A pair.
    assert lone_surrogate(b'{"a": "\\ud800') is None  # Not JSON: the route says so.
    assert lone_surrogate(b"[" * 100_000 + b'"\\ud800"' + b"]" * 100_000) is None
