"""Stepwise's extensions over a real uvicorn: each route once, with its effect checked."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from agent_core.spec import AgentSpec
from tests.llm_servers import OpenAIServer, Reply

SEED = "What is (121 * 3) + 42?"


def _task(client: httpx.Client, text: str = SEED) -> str:
    return client.post("/ap/v1/agent/tasks", json={"input": text}).json()["task_id"]


def _step(client: httpx.Client, task_id: str) -> dict:
    response = client.post(f"/ap/v1/agent/tasks/{task_id}/steps", json={})
    assert response.status_code == 200, response.text
    return response.json()


def _ext(task_id: str, what: str = "") -> str:
    return f"/stepwise/v1/tasks/{task_id}{what}"


@pytest.fixture
def approving(serve):
    """A client on a server whose default agent asks before each tool call."""
    with httpx.Client(base_url=serve(default_agent=AgentSpec(tool_approval=True)), timeout=30) as c:
        yield c


def test_a_tool_call_is_approved_with_edited_arguments(approving):
    task_id = _task(approving)
    _step(approving, task_id)  # The model proposes multiply(121, 3).
    [held] = [s for s in approving.get(_ext(task_id)).json()["steps"] if s["status"] == "created"]

    view = approving.post(
        _ext(task_id, f"/steps/{held['step_id']}/approve"), json={"arguments": {"a": 100, "b": 3}}
    ).json()

    [ran] = [s for s in view["steps"] if s["step_id"] == held["step_id"]]
    assert ran["status"] == "completed" and ran["output"] == "300"
    assert ran["additional_output"]["edited"] is True


def test_a_rejected_tool_call_does_not_run_and_the_model_reads_why(approving):
    task_id = _task(approving)
    _step(approving, task_id)
    held = approving.get(_ext(task_id)).json()["steps"][-1]

    view = approving.post(
        _ext(task_id, f"/steps/{held['step_id']}/reject"), json={"reason": "use add first"}
    ).json()

    [done] = [s for s in view["steps"] if s["step_id"] == held["step_id"]]
    assert "use add first" in done["output"]
    assert done["additional_output"]["tool_calls"] == [] or all(
        call.get("rejected") for call in done["additional_output"]["tool_calls"]
    )


def test_feedback_edit_run_until_finalize_abandon_and_the_graph(client):
    task_id = _task(client)
    _step(client, task_id)  # multiply(121, 3)
    view = client.post(_ext(task_id, "/feedback"), json={"text": "Check your arithmetic."}).json()
    assert view["steps"][1]["additional_output"]["kind"] == "human"

    upcoming = view["steps"][-1]
    edited = client.patch(
        _ext(task_id, f"/steps/{upcoming['step_id']}"), json={"input": "Observation: 363"}
    ).json()
    assert edited["steps"][-1]["input"] == "Observation: 363"

    stopped = client.post(_ext(task_id, "/run_until"), json={"at_step": 3}).json()
    assert stopped["reason"] == "breakpoint" and len(stopped["ran"]) == 1
    finished = client.post(_ext(task_id, "/run_until"), json={}).json()
    assert finished["reason"] == "last_step"
    final = client.post(_ext(task_id, "/finalize"), json={}).json()
    assert "405" in final["response"] and final["status"] == "completed"

    graph = client.get(_ext(task_id, "/dag")).json()
    assert len(graph["nodes"]) == 4 and graph["edges"]

    other = _task(client)
    assert client.post(_ext(other, "/abandon"), json={}).json()["status"] == "abandoned"
    refused = client.post(f"/ap/v1/agent/tasks/{other}/steps", json={})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "task_not_active"


def test_a_change_made_against_an_old_version_is_refused_with_409(client):
    task_id = _task(client)
    _step(client, task_id)
    seen = client.get(_ext(task_id)).json()["version"]
    client.post(_ext(task_id, "/feedback"), json={"text": "From another client."})

    by_field = client.post(_ext(task_id, "/undo"), json={"steps": 1, "expected_version": seen})
    by_header = client.post(
        _ext(task_id, "/undo"), json={"steps": 1}, headers={"If-Match": str(seen)}
    )

    for refused in (by_field, by_header):
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "task_changed"
        assert "reload" in refused.json()["error"]["message"]
    current = client.get(_ext(task_id)).json()
    assert len(current["steps"]) == 3  # Nothing was undone.
    ok = client.post(
        _ext(task_id, "/undo"), json={"steps": 1, "expected_version": current["version"]}
    )
    assert ok.status_code == 200


def test_a_running_step_is_cancelled_and_can_run_again(serve, monkeypatch):
    with OpenAIServer(policy=lambda body: Reply(text="slow answer", delay_s=30)) as model:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
        spec = AgentSpec(provider="openai", model="m", base_url=f"{model.url}/v1", tools=())
        with httpx.Client(base_url=serve(default_agent=spec), timeout=60) as client:
            task_id = _task(client, "Tell me something.")
            step_id = client.get(_ext(task_id)).json()["steps"][0]["step_id"]
            running = threading.Thread(
                target=lambda: client.post(f"/ap/v1/agent/tasks/{task_id}/steps")
            )
            running.start()
            assert model.wait_until(lambda: len(model.model_requests) == 1, timeout=20)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                cancelled = client.post(_ext(task_id, f"/steps/{step_id}/cancel"))
                if cancelled.status_code == 200:
                    break
                time.sleep(0.05)
            running.join(30)

    assert cancelled.status_code == 200, cancelled.text
    [step] = cancelled.json()["steps"]
    assert step["status"] == "created"  # Failed, and it can run again.
    assert "stopped" in step["additional_output"]["error"]


def _finished(client: httpx.Client, text: str = SEED) -> str:
    task_id = _task(client, text)
    assert client.post(_ext(task_id, "/run_until"), json={}).json()["reason"] == "last_step"
    client.post(_ext(task_id, "/finalize"), json={})
    return task_id


def test_a_task_continues_a_finalized_tasks_thread_and_no_other(client):
    first = _finished(client, "What is (121 * 3) + 42? The password is swordfish.")
    alone = _task(client)
    assert client.get(_ext(alone)).json()["thread_id"] == alone
    said = client.get(_ext(alone, "/conversation")).json()["messages"]
    assert "swordfish" not in str(said)  # Each task starts a conversation of its own.

    response = client.post(
        "/ap/v1/agent/tasks",
        json={"input": "And then?", "additional_input": {"continue_from": first}},
    )

    assert response.status_code == 200, response.text
    follow = response.json()["task_id"]
    assert client.get(_ext(follow)).json()["thread_id"] == first
    said = client.get(_ext(follow, "/conversation")).json()["messages"]
    assert "swordfish" in str(said)
    refused = client.post(
        "/ap/v1/agent/tasks", json={"input": "x", "additional_input": {"continue_from": alone}}
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["reason"] == "thread_not_finished"


def test_a_fork_the_conversation_and_the_limits_over_http(client):
    task_id = _task(client)
    _step(client, task_id)
    _step(client, task_id)
    first = client.get(_ext(task_id)).json()["steps"][0]["step_id"]

    fork = client.post(_ext(task_id, f"/steps/{first}/fork")).json()
    assert fork["task_id"] != task_id and fork["forked_from"]["step_id"] == first
    assert [s["status"] for s in fork["steps"]] == ["completed", "created"]
    assert len(client.get(_ext(task_id)).json()["steps"]) == 3  # The original is untouched.

    messages = client.get(_ext(task_id, "/conversation")).json()["messages"]
    edited = client.put(
        _ext(task_id, "/conversation"),
        json={"messages": [*messages, {"role": "user", "content": "Use 4, not 3."}]},
    )
    assert edited.status_code == 200, edited.text
    human = edited.json()["steps"][2]
    assert human["additional_output"]["kind"] == "human"
    assert "Use 4, not 3." in str(client.get(_ext(task_id, "/conversation")).json())

    limits = client.patch(_ext(task_id, "/limits"), json={"max_iterations": 40}).json()
    assert limits["limits"]["max_iterations"] == 40
    bad = client.patch(_ext(task_id, "/limits"), json={"max_steps": 4})
    assert bad.status_code == 422


def test_if_match_star_matches_any_version_and_a_number_must_be_current(client):
    """`If-Match: *` was refused as not a version (issue 23, item 12); RFC 9110 says any."""
    task_id = _task(client)
    _step(client, task_id)

    stale = client.post(_ext(task_id, "/undo"), json={}, headers={"If-Match": '"1"'})
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "task_changed"
    any_version = client.post(_ext(task_id, "/undo"), json={}, headers={"If-Match": "*"})
    assert any_version.status_code == 200, any_version.text
