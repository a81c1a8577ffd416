"""A missing extra is a `MissingExtraError` that names the pip install line.

Absence is simulated by putting None in `sys.modules` for a module, which makes Python's
import system (and `importlib.util.find_spec`) treat it as not installed; each test asserts
the error names the very module it blocked, so a check that stopped looking would fail.
"""

from __future__ import annotations

import sys

import pytest

from agent_core import extras
from agent_core.errors import ERROR_CODES, UserError
from agent_core.extras import EXTRAS, MissingExtraError, install_line, require


def block(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make `modules` look uninstalled for the rest of the test."""
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)
    for module in modules:
        with pytest.raises(ImportError):  # The simulation holds: the import itself fails.
            __import__(module)


def test_require_passes_when_the_extra_is_installed() -> None:
    for extra in ("app", "server", "services", "otel", "anthropic"):
        require(extra, feature="a test")  # `make test` installs every extra.


def test_a_missing_module_names_the_extra_and_its_install_line(monkeypatch) -> None:
    block(monkeypatch, "pyvis")

    with pytest.raises(MissingExtraError) as raised:
        require("app", feature="stepwise ui")

    error = raised.value
    assert isinstance(error, UserError) and error.code == "missing_extra"
    assert (error.extra, error.module, error.feature) == ("app", "pyvis", "stepwise ui")
    assert error.params == {"extra": "app", "module": "pyvis", "feature": "stepwise ui"}
    assert error.code in ERROR_CODES
    assert str(error) == (
        "stepwise ui needs the pyvis package, which is not installed; install Stepwise with "
        """the 'app' extra: pip install "stepwise[app]\""""
    )
    assert install_line("otel") == 'pip install "stepwise[otel]"'


def test_a_missing_parent_package_counts_as_missing(monkeypatch) -> None:
    block(monkeypatch, "opentelemetry")
    monkeypatch.delitem(sys.modules, "opentelemetry.sdk", raising=False)
    monkeypatch.delitem(sys.modules, "opentelemetry.sdk.trace", raising=False)

    assert extras.missing("otel", modules=["opentelemetry.sdk.trace"]) == "opentelemetry.sdk.trace"


def test_every_extra_of_the_distribution_is_known() -> None:
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert set(declared) - {"all", "dev"} == set(EXTRAS)
    assert declared["all"] == [f"stepwise[{','.join(EXTRAS)}]"]


def test_anthropic_llm_without_the_sdk_names_the_anthropic_extra(monkeypatch) -> None:
    block(monkeypatch, "anthropic")
    monkeypatch.delitem(sys.modules, "agent_core.llms.anthropic", raising=False)

    with pytest.raises(MissingExtraError) as raised:
        from agent_core.llms import AnthropicLLM  # noqa: F401

    assert raised.value.module == "anthropic"
    assert 'pip install "stepwise[anthropic]"' in str(raised.value)
    assert "agent_core.llms.anthropic" not in sys.modules  # Refused before importing it.


def test_turning_tracing_on_without_opentelemetry_names_the_otel_extra(monkeypatch) -> None:
    from agent_core import telemetry
    from agent_core.telemetry import hooks

    block(monkeypatch, "opentelemetry.trace")

    with pytest.raises(MissingExtraError) as raised:
        telemetry.instrument(endpoint="http://127.0.0.1:6006")
    assert raised.value.module == "opentelemetry.trace"
    assert 'pip install "stepwise[otel]"' in str(raised.value)

    # Turned on by the environment variable: the first step that would be traced says so.
    monkeypatch.setenv(hooks.ENDPOINT_ENV, "http://127.0.0.1:6006")
    monkeypatch.setattr(hooks, "tracing", hooks.UNRESOLVED)
    with pytest.raises(MissingExtraError, match=r"STEPWISE_OTLP_ENDPOINT is set"):
        hooks.active()
    assert isinstance(hooks.tracing, type(hooks.UNRESOLVED))  # Still off, not half on.
