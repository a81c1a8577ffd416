"""The server's gate and errors: token, body size, loopback default, JSON errors."""

from __future__ import annotations

import httpx
import pytest

from agent_core.errors import UserError
from stepwise.server.settings import check_exposure


def test_health_answers_without_a_token(serve):
    url = serve(token="s3cret-token")
    health = httpx.get(f"{url}/health")
    assert health.json()["status"] == "ok"
    assert "s3cret-token" not in health.text


def test_health_names_the_model_only_to_token_holders_when_there_is_a_token(serve):
    url = serve(token="s3cret-token")
    anyone = httpx.get(f"{url}/health").json()
    wrong = httpx.get(f"{url}/health", headers={"Authorization": "Bearer nope"}).json()
    holder = httpx.get(f"{url}/health", headers={"Authorization": "Bearer s3cret-token"}).json()
    assert anyone == wrong == {"status": "ok", "model": None}
    assert holder["model"]["scripted"] is True


def test_a_token_is_required_when_set_and_never_echoed(serve):
    url = serve(token="s3cret-token")
    missing = httpx.get(f"{url}/openapi.json")
    wrong = httpx.get(f"{url}/openapi.json", headers={"Authorization": "Bearer nope"})
    right = httpx.get(f"{url}/openapi.json", headers={"Authorization": "Bearer s3cret-token"})

    assert missing.status_code == wrong.status_code == 401
    assert missing.json()["error"]["code"] == "unauthorized"
    assert "Authorization: Bearer" in missing.json()["error"]["message"]
    assert "s3cret-token" not in missing.text + wrong.text
    assert right.status_code == 200


def test_a_body_over_the_limit_is_refused_with_413(serve):
    url = serve(max_body_bytes=1_000_000)
    big = b"x" * 10_000_000
    declared = httpx.post(f"{url}/v1/agent/execute", content=big)

    def chunks():
        for _ in range(100):
            yield b"y" * 100_000

    streamed = httpx.post(f"{url}/v1/agent/execute", content=chunks())

    for response in (declared, streamed):
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "body_too_large"


def test_unknown_routes_are_json_errors(client):
    response = client.get("/nope")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_loopback_needs_no_token(host):
    check_exposure(host, None)


def test_a_public_address_without_a_token_is_refused_with_the_reason():
    with pytest.raises(UserError, match="STEPWISE_API_TOKEN"):
        check_exposure("0.0.0.0", None)
    check_exposure("0.0.0.0", "a-long-random-secret")
