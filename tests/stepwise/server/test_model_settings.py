"""The server's providers come from the catalog: `STEPWISE_MODEL` and the request's schema."""

from __future__ import annotations

from typing import get_args

import pytest

from agent_core.errors import UserError
from agent_core.llms.catalog import PROVIDERS
from agent_core.spec import AgentSpec
from stepwise.server.execute import ModelChoice
from stepwise.server.settings import (
    MAX_TOKENS_ENV,
    MODEL_ENV,
    ModelDefault,
    ServedProvider,
    ServerSettings,
)

SERVED = [name for name, entry in PROVIDERS.items() if not entry.needs_person]


def test_the_served_providers_are_the_catalogs_headless_ones() -> None:
    assert sorted(get_args(ServedProvider)) == sorted(SERVED)
    schema = ModelChoice.model_json_schema()["properties"]["provider"]
    assert sorted(schema["enum"]) == sorted(SERVED)


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("openai:gpt-4o-mini", ModelDefault(provider="openai", name="gpt-4o-mini")),
        ("anthropic", ModelDefault(provider="anthropic")),
        ("openai:llama3.2:1b", ModelDefault(provider="openai", name="llama3.2:1b")),
    ],
)
def test_stepwise_model_is_read_through_the_catalog(
    setting: str, expected: ModelDefault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODEL_ENV, setting)
    assert ServerSettings().default_model == expected


def test_the_default_model_is_the_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)
    assert ServerSettings().default_model == ModelDefault(provider="demo")


@pytest.mark.parametrize("setting", ["gpt-4o", "human", "mistral:large"])
def test_a_provider_the_server_cannot_run_is_refused(
    setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODEL_ENV, setting)
    with pytest.raises(UserError, match="names no provider the server runs") as caught:
        ServerSettings()
    assert all(name in str(caught.value) for name in SERVED)


@pytest.mark.parametrize(
    ("base_url", "shown"),
    [
        ("http://user:pa55word@10.0.0.5:8080/v1?key=k3y", "10.0.0.5:8080"),
        ("https://models.example.test/v1", "models.example.test:443"),
        ("llama.cpp", "localhost:8080"),  # A preset's name: the server it stands for.
    ],
)
def test_the_server_model_shows_its_base_url_as_host_and_port_only(
    base_url: str, shown: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODEL_ENV, "openai:smollm2")
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    model = ServerSettings().default_model
    assert model.describe() == {
        "provider": "openai",
        "name": "smollm2",
        "base_url": shown,
        "scripted": False,
    }
    assert model.summary() == f"model openai:smollm2 at {shown}"
    assert "pa55word" not in model.summary() and "k3y" not in str(model.describe())


def test_the_default_agent_runs_on_the_server_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODEL_ENV, "openai:smollm2")
    spec = ServerSettings().agent_spec()
    assert (spec.provider, spec.model) == ("openai", "smollm2")


def test_stepwise_max_tokens_caps_the_served_agent_unless_it_caps_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MAX_TOKENS_ENV, raising=False)
    assert ServerSettings().agent_spec().max_tokens is None
    monkeypatch.setenv(MAX_TOKENS_ENV, "200")
    assert ServerSettings().agent_spec().max_tokens == 200
    own = AgentSpec(max_tokens=50)
    assert ServerSettings(default_agent=own).agent_spec().max_tokens == 50


@pytest.mark.parametrize("setting", ["0", "-5", "lots", "1.5"])
def test_a_max_tokens_that_is_no_cap_is_refused_with_its_code(
    setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_TOKENS_ENV, setting)
    with pytest.raises(UserError, match="is not a reply cap") as caught:
        ServerSettings()
    assert caught.value.code == "max_tokens_invalid"
