"""The provider catalog: every provider builds from a model string, without its SDK's network."""

from __future__ import annotations

import inspect
import sys
from typing import get_args

import pytest

from agent_core.errors import UserError
from agent_core.extras import MissingExtraError
from agent_core.llms import LLM, ScriptedLLM
from agent_core.llms.catalog import (
    OPENAI_COMPATIBLE_PRESETS,
    PROVIDERS,
    ProviderName,
    infer_model,
    provider,
    provider_of,
    split_model,
)
from agent_core.spec import DEFAULT_MODELS, AgentSpec

FAKE_KEY = "sk-test-not-a-real-key"


def test_the_provider_name_literal_is_the_catalog() -> None:
    assert list(get_args(ProviderName)) == list(PROVIDERS)
    assert list(DEFAULT_MODELS) == list(PROVIDERS)


@pytest.mark.parametrize("name", list(PROVIDERS))
def test_each_provider_builds_from_its_name(name: str) -> None:
    entry = PROVIDERS[name]
    llm = infer_model(entry.model_ref(), api_key=FAKE_KEY)  # The demo drops the key.
    assert isinstance(llm, LLM)
    assert llm.model == entry.model_label
    if entry.takes_model:  # An adapter class, which names its provider.
        assert type(llm).__name__ == entry.factory_name
        assert provider_of(llm) == name
    else:
        assert provider_of(llm) is None


@pytest.mark.parametrize("name", [name for name, entry in PROVIDERS.items() if entry.takes_model])
def test_a_named_model_and_options_reach_the_adapter(name: str) -> None:
    llm = infer_model(f"{name}:my-model:7b", api_key=FAKE_KEY, base_url="http://127.0.0.1:9/v1")
    assert llm.model == "my-model:7b"  # Only the first colon splits.
    assert str(llm.base_url).rstrip("/") == "http://127.0.0.1:9/v1"


def test_a_preset_name_is_a_base_url_for_openai() -> None:
    llm = infer_model("openai:llama3.2", base_url="ollama")
    assert str(llm.base_url).rstrip("/") == OPENAI_COMPATIBLE_PRESETS["ollama"]


def test_the_presets_keep_their_old_home() -> None:
    from agent_core.llms.openai import OPENAI_COMPATIBLE_PRESETS as old

    assert old is OPENAI_COMPATIBLE_PRESETS
    assert PROVIDERS["openai"].presets is OPENAI_COMPATIBLE_PRESETS


def test_the_adapters_defaults_are_the_catalogs() -> None:
    from agent_core.llms.anthropic import DEFAULT_ANTHROPIC_MODEL
    from agent_core.llms.openai import OpenAILLM

    assert PROVIDERS["anthropic"].default_model == DEFAULT_ANTHROPIC_MODEL
    default = inspect.signature(OpenAILLM).parameters["model"].default
    assert PROVIDERS["openai"].default_model == default


def test_a_built_model_is_returned_as_it_is() -> None:
    llm = ScriptedLLM(["hi"])
    assert infer_model(llm) is llm


def test_an_unknown_provider_names_those_there_are() -> None:
    with pytest.raises(UserError, match="unknown provider 'gpt-4o'") as caught:
        infer_model("gpt-4o")
    assert all(name in str(caught.value) for name in PROVIDERS)
    with pytest.raises(UserError, match="unknown provider 'mistral'"):
        provider("mistral")


def test_a_provider_without_models_refuses_a_model_name() -> None:
    with pytest.raises(UserError, match="takes no model name: write 'demo'"):
        infer_model("demo:gpt-4o")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("openai:gpt-4o-mini", ("openai", "gpt-4o-mini")),
        ("demo", ("demo", None)),
        ("anthropic:", ("anthropic", None)),
        (" openai:llama3.2:1b ", ("openai", "llama3.2:1b")),
    ],
)
def test_split_model(text: str, expected: tuple[str, str | None]) -> None:
    assert split_model(text) == expected


def test_split_model_checks_the_provider() -> None:
    with pytest.raises(UserError, match="unknown provider 'gemini'"):
        split_model("gemini:pro")


def test_a_missing_sdk_names_the_pip_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes `import anthropic` fail as when it is not installed (and
    # find_spec says so); the adapter module is dropped so that nothing stale answers.
    monkeypatch.setitem(sys.modules, "anthropic", None)
    monkeypatch.delitem(sys.modules, "agent_core.llms.anthropic", raising=False)
    with pytest.raises(MissingExtraError, match=r'pip install "stepwise\[anthropic\]"') as caught:
        infer_model("anthropic", api_key=FAKE_KEY)
    assert caught.value.code == "missing_extra"
    assert caught.value.params == {
        "extra": "anthropic",
        "module": "anthropic",
        "feature": "the Anthropic provider",
    }
    assert "agent_core.llms.anthropic" not in sys.modules  # Refused before importing it.


def test_the_spec_builds_through_the_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = infer_model

    def spy(model: str, **options: object) -> object:
        seen.append(model)
        return real(model, **options)

    monkeypatch.setattr("agent_core.spec.infer_model", spy)
    spec = AgentSpec(provider="openai", model="gpt-4.1")
    assert spec.model_ref == "openai:gpt-4.1"
    assert AgentSpec(provider="anthropic").model_ref == "anthropic:claude-sonnet-5"
    assert AgentSpec().model_ref == "demo"
    spec.build_llm(api_key=FAKE_KEY)
    assert seen == ["openai:gpt-4.1"]


def test_telemetry_names_the_provider_from_the_catalog() -> None:
    from agent_core.telemetry.attributes import _provider

    assert _provider(infer_model("anthropic", api_key=FAKE_KEY)) == "anthropic"
    assert _provider(ScriptedLLM(["x"])) == "scripted"
