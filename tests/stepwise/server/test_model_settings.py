"""The server's providers come from the catalog: `STEPWISE_MODEL` and the request's schema."""

from __future__ import annotations

from typing import get_args

import pytest

from agent_core.errors import UserError
from agent_core.llms.catalog import PROVIDERS
from stepwise.server.execute import ModelChoice
from stepwise.server.settings import MODEL_ENV, ModelDefault, ServedProvider, ServerSettings

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
