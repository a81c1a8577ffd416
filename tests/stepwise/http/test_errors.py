"""The JSON error envelope both HTTP APIs share: the code is the error's own, the status by type."""

from __future__ import annotations

import importlib
import sys

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from agent_core.errors import (
    AgentCoreError,
    LLMStatusError,
    NothingToRunError,
    StepError,
    TaskNotFoundError,
    UserCodeError,
)
from stepwise.http.errors import ApiError, install_error_handlers, runtime_error


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (TaskNotFoundError("gone", task_id="t1"), 404, "task_not_found"),
        (NothingToRunError("no step"), 409, "nothing_to_run"),
        # A finer code keeps its class's status.
        (
            NothingToRunError("done", code="task_finished", params={"finished_at": 2}),
            409,
            "nothing_to_run",
        ),
        (StepError("failed", params={"cause_code": "max_iterations"}), 422, "step_failed"),
        (UserCodeError("broken", target="a.py:b"), 500, "user_code_error"),
        (AgentCoreError("odd"), 500, "error"),
    ],
)
def test_a_runtime_error_answers_with_its_class_code_and_the_status_of_its_type(
    error: AgentCoreError, status: int, code: str
) -> None:
    api = runtime_error(error)
    assert (api.status, api.code, api.message) == (status, code, error.message)
    # The finer code a raise site gave is the reason; the class code stays what clients match.
    assert api.extra.get("reason") == (error.code if error.code != code else None)


def test_the_envelope_carries_the_ids_and_params_beside_the_code() -> None:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/finished")
    def _finished() -> None:
        raise NothingToRunError(
            "task t1 has no upcoming step",
            hint="call finalize_response()",
            remedy="finalize",
            task_id="t1",
            code="task_finished",
            params={"finished_at": 2},
        )

    @app.get("/model")
    def _model() -> None:
        raise LLMStatusError("rate-limited", status=429, request_id="req_1")

    client = TestClient(app)
    finished = client.get("/finished")
    assert finished.status_code == 409
    assert finished.json() == {
        "error": {
            "code": "nothing_to_run",
            "reason": "task_finished",
            "message": "task t1 has no upcoming step",
            "hint": "POST /stepwise/v1/tasks/t1/finalize gives the final response, or "
            "POST /stepwise/v1/tasks/t1/undo goes back",
            "task_id": "t1",
            "remedy": "finalize",
            "params": {"finished_at": 2},
        }
    }
    model = client.get("/model").json()["error"]
    assert model["code"] == "model_error" and model["provider_status"] == 429
    assert model["params"] == {"status": 429, "request_id": "req_1"}


def test_the_servers_old_import_path_warns_and_is_the_same_envelope() -> None:
    sys.modules.pop("stepwise.server.errors", None)  # Imported earlier: import it afresh.
    with pytest.warns(DeprecationWarning, match="stepwise.http.errors"):
        old = importlib.import_module("stepwise.server.errors")
    assert old.ApiError is ApiError and old.runtime_error is runtime_error
