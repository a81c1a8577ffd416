"""The Services page words a control plane's refusal from its code, never from its English."""

from __future__ import annotations

import pytest

from stepwise.app.components.services_connection import Connection, explain_error
from stepwise.services.errors import ControlPlaneError

REMOTE = Connection(client=None, url="http://127.0.0.1:8100", local=False)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "button"),
    [("queue_unavailable", "Create task"), ("invalid_service_name", "Send edited hop")],
)
def test_a_refusal_names_the_button_that_fixes_it(code: str, button: str) -> None:
    refused = ControlPlaneError("words the page never matches", status=503, code=code)

    said = explain_error(refused, REMOTE)

    assert button in said and "words the page never matches" not in said


def test_an_unknown_code_shows_the_servers_message() -> None:
    refused = ControlPlaneError("task x is not running", status=409, code="task_not_running")

    assert explain_error(refused, REMOTE) == "task x is not running"
