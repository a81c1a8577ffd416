"""Optional dependencies: each integration is an extra, and a missing one says how to add it.

The core (`pip install stepwise`) needs only pydantic, networkx, httpx and the OpenAI SDK.
Everything else is an extra of the `stepwise` distribution (pyproject.toml): the app
(`stepwise[app]`), the HTTP server (`[server]`), multi-agent services (`[services]`),
tracing (`[otel]`), Claude (`[anthropic]`), ... `require` is the one check every face and
adapter makes before it imports an extra's packages, so a missing one is a `MissingExtraError`
that names the `pip install` line, never a bare `ModuleNotFoundError` from deep inside.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from agent_core.errors import UserError

__all__ = ["DISTRIBUTION", "EXTRAS", "MissingExtraError", "install_line", "missing", "require"]

DISTRIBUTION = "stepwise"
"""The distribution whose extras these are."""

EXTRAS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        # The Services page runs a local demo control plane (FastAPI on uvicorn, the services
        # package, which loads redis): the app's extra holds the services' packages too.
        "app": ("streamlit", "pyvis", "fastapi", "uvicorn", "redis"),
        "server": ("fastapi", "uvicorn"),
        "services": ("redis", "fastapi", "uvicorn"),
        "otel": (
            "opentelemetry.trace",
            "opentelemetry.sdk.trace",
            "opentelemetry.exporter.otlp.proto.http",
            "openinference.semconv",
        ),
        "anthropic": ("anthropic",),
        "postgres": ("psycopg",),
        "pydantic-ai": ("pydantic_ai",),
        "openai-agents": ("agents",),
        "langgraph": ("langgraph",),
        "llama-index": ("llama_index.core",),
        "mcp": ("mcp",),
    }
)
"""Each extra, and the modules it installs that the code imports (import names, not pip's)."""


class MissingExtraError(UserError):
    """A feature needs an extra of the `stepwise` distribution that is not installed.

    Attributes:
        extra: The extra to install ("app").
        module: The first of its modules that could not be found ("streamlit").
        feature: What needed it, in a user's words ("stepwise ui").
    """

    default_code = "missing_extra"

    def __init__(self, *, extra: str, module: str, feature: str) -> None:
        super().__init__(
            f"{feature} needs the {module} package, which is not installed",
            hint=f"install Stepwise with the {extra!r} extra: {install_line(extra)}",
            params={"extra": extra, "module": module, "feature": feature},
        )
        self.extra = extra
        self.module = module
        self.feature = feature


def install_line(extra: str) -> str:
    """The command that installs `extra`: `pip install "stepwise[app]"`."""
    return f'pip install "{DISTRIBUTION}[{extra}]"'


def _found(module: str) -> bool:
    """Whether `module` can be imported, found without running it (its parents are imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # A parent package is missing, or is None in sys.modules.
        return False


def missing(extra: str, *, modules: Sequence[str] | None = None) -> str | None:
    """The first module of `extra` (or of `modules`) that is not installed; None when all are.

    Raises:
        KeyError: `extra` is not one of `EXTRAS`.
    """
    wanted = EXTRAS[extra] if modules is None else modules
    return next((module for module in wanted if not _found(module)), None)


def require(extra: str, *, feature: str, modules: Sequence[str] | None = None) -> None:
    """Check that `extra` is installed before `feature` imports it; nothing is imported here.

    Args:
        extra: The extra the feature needs ("app").
        feature: What needs it, as the error names it ("stepwise ui", "AnthropicLLM").
        modules: The modules to look for, when the feature needs fewer than the whole extra.

    Raises:
        MissingExtraError: One of its modules is not installed; the message names the
            `pip install` line.
    """
    absent = missing(extra, modules=modules)
    if absent is not None:
        raise MissingExtraError(extra=extra, module=absent, feature=feature)
