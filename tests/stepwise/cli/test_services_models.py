"""A services file names its models as model strings, read through the provider catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_core.errors import UserError
from stepwise.cli.services_config import load_config
from stepwise.services import SimpleMessageQueue


def _config(tmp_path: Path, *, orchestrator: str, service: str) -> Path:
    path = tmp_path / "services.toml"
    path.write_text(
        'queue = "simple"\n'
        f'[orchestrator]\nmodel = "{orchestrator}"\n'
        f'[[services]]\nname = "a"\nagent = "agent.py:build"\nmodel = "{service}"\n',
        encoding="utf-8",
    )
    return path


def test_the_orchestrator_model_is_built_from_its_string(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    config = load_config(_config(tmp_path, orchestrator="openai:gpt-4.1", service="demo"))
    plane = config.build_control_plane(SimpleMessageQueue())
    llm = plane.orchestrator.llm  # type: ignore[attr-defined]
    assert (type(llm).__name__, llm.model) == ("OpenAILLM", "gpt-4.1")


def test_a_misspelt_orchestrator_provider_names_the_table(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, orchestrator="gemini:pro", service="demo"))
    with pytest.raises(
        UserError, match=r"\[orchestrator\]: model = 'gemini:pro': unknown provider"
    ):
        config.build_control_plane(SimpleMessageQueue())


def test_a_misspelt_service_provider_names_the_service(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, orchestrator="demo", service="gpt-4o"))
    with pytest.raises(UserError, match=r"service 'a': model = 'gpt-4o': unknown provider"):
        config.build_service(config.services[0], SimpleMessageQueue())
