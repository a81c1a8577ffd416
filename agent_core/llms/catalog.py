"""The providers as data: who they are, what builds their model, and `infer_model`.

Every face (the app, `stepwise serve`, the services, the command) reads the provider set from
here instead of spelling it. This module imports no provider SDK: a provider's model class is
named by a string (`"agent_core.llms.openai:OpenAILLM"`) and imported only when a model is built,
as pydantic-ai's `infer_model` does, so reading a label or a preset costs no SDK import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from agent_core.errors import UserError
from agent_core.extras import require

if TYPE_CHECKING:
    from agent_core.llms.base import LLM

__all__ = [
    "OPENAI_COMPATIBLE_PRESETS",
    "PROVIDERS",
    "Provider",
    "ProviderName",
    "busy_after_timeout",
    "infer_model",
    "provider",
    "provider_of",
    "reply_cap_field",
    "split_model",
]

ProviderName = Literal["demo", "human", "openai", "anthropic"]
"""The names of `PROVIDERS`, spelled for type checkers and JSON schemas (a test holds them
equal)."""

OPENAI_COMPATIBLE_PRESETS: Mapping[str, str] = MappingProxyType(
    {
        "ollama": "http://localhost:11434/v1",
        "vllm": "http://localhost:8000/v1",
        "llama.cpp": "http://localhost:8080/v1",
        "lm-studio": "http://localhost:1234/v1",
    }
)
"""Base URLs of OpenAI-compatible local servers on their default ports, by preset name."""


@dataclass(frozen=True)
class Provider:
    """One provider of chat models, as data.

    Attributes:
        name: The name in a model string ("openai" in "openai:gpt-4o-mini") and in a spec.
        label: How people call it ("OpenAI").
        note: What to know before picking it, when its label does not say ("no key").
        factory: `module:attribute` of what builds its model, imported only when used.
        key_env: The environment variable (or app secret) its key is read from; None: no key.
        default_model: The model used when none is named; None: it takes no model name.
        model_label: The model's name on screen: what plays it when it takes no model name,
            else (and by default) the default model.
        options: Keyword arguments of `factory` beyond the model name (`api_key`, ...).
        presets: Servers that speak this provider's API, by preset name -> base URL.
        sdk_module: The SDK it imports, for a clear error when that is not installed.
        extra: The extra of the `stepwise` distribution that installs the SDK ("anthropic").
        base_url_env: The variable naming another server, read when no base URL is given.
        needs_person: A person types its replies (it runs in the app only, never headless).
    """

    name: str
    label: str
    factory: str
    note: str | None = None
    key_env: str | None = None
    default_model: str | None = None
    model_label: str = ""
    options: frozenset[str] = frozenset()
    presets: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    sdk_module: str | None = None
    extra: str | None = None
    base_url_env: str | None = None
    needs_person: bool = False

    def __post_init__(self) -> None:
        if not self.model_label:  # frozen: set through object, once, at construction
            object.__setattr__(self, "model_label", self.default_model or self.label)

    @property
    def takes_model(self) -> bool:
        """Whether a model can be named ("openai:gpt-4o"); the demo plays fixed replies."""
        return self.default_model is not None

    @property
    def scripted(self) -> bool:
        """Whether its replies are scripted: no model, no person, no network (the demo)."""
        return not self.takes_model and not self.needs_person

    @property
    def factory_name(self) -> str:
        """The name `factory` imports: the adapter class ("OpenAILLM"), or a function."""
        return self.factory.rpartition(":")[2]

    def model_ref(self, model: str | None = None) -> str:
        """The model string for `model` (default: the provider's), e.g. "openai:gpt-4o-mini"."""
        if not self.takes_model:
            return self.name
        return f"{self.name}:{model or self.default_model}"

    def load_factory(self) -> Callable[..., LLM]:
        """What builds this provider's model, imported now.

        Raises:
            MissingExtraError: The provider's SDK is not installed (the message names the
                `pip install` line of its extra).
        """
        if self.sdk_module is not None and self.extra is not None:
            require(self.extra, feature=f"the {self.label} provider", modules=(self.sdk_module,))
        module_name, _, attribute = self.factory.partition(":")
        module = importlib.import_module(module_name)
        return getattr(module, attribute)


_SDK_OPTIONS = frozenset({"api_key", "base_url", "prices", "max_tokens"})

_OPENAI_API_HOST = "api.openai.com"


def reply_cap_field(provider_name: str, base_url: str | None) -> str:
    """The request field that caps a reply's tokens on this provider's server.

    OpenAI's own API takes `max_completion_tokens` (it deprecated `max_tokens`, and its
    reasoning models refuse it); OpenAI-compatible servers (llama.cpp, vLLM, Ollama, LM Studio)
    know `max_tokens`, and some silently ignore the newer name, so a cap would not hold.
    Anthropic's API has only `max_tokens`.
    """
    if provider_name == "openai" and (not base_url or _OPENAI_API_HOST in base_url):
        return "max_completion_tokens"
    return "max_tokens"


def busy_after_timeout(provider_name: str, base_url: str | None) -> bool:
    """Whether a server may still be generating a reply whose call timed out.

    True for OpenAI-compatible servers other than OpenAI's: a local server (llama.cpp's) keeps
    generating an abandoned reply in its one slot, so a retry would queue behind it and time
    out too. Such timeouts are not retried, and say so; the hosted APIs' are.
    """
    return provider_name == "openai" and bool(base_url) and _OPENAI_API_HOST not in str(base_url)


PROVIDERS: Mapping[str, Provider] = MappingProxyType(
    {
        "demo": Provider(
            name="demo",
            label="Demo model",
            # Read at each build, so a test that patches `agent_core.llms.demo.demo_llm` reaches it.
            factory="agent_core.llms.demo:demo_llm",
            note="scripted replies, no key",
            model_label="demo (scripted)",
        ),
        "human": Provider(
            name="human",
            label="You are the model",
            factory="agent_core.llms.scripted:HumanLLM",
            note="you type each reply",
            model_label="you (typed replies)",
            needs_person=True,
        ),
        "openai": Provider(
            name="openai",
            label="OpenAI",
            factory="agent_core.llms.openai:OpenAILLM",
            key_env="OPENAI_API_KEY",
            default_model="gpt-4o-mini",
            options=_SDK_OPTIONS,
            presets=OPENAI_COMPATIBLE_PRESETS,
            sdk_module="openai",
            base_url_env="OPENAI_BASE_URL",
        ),
        "anthropic": Provider(
            name="anthropic",
            label="Anthropic",
            factory="agent_core.llms.anthropic:AnthropicLLM",
            key_env="ANTHROPIC_API_KEY",
            default_model="claude-sonnet-5",
            options=_SDK_OPTIONS,
            sdk_module="anthropic",
            extra="anthropic",
            base_url_env="ANTHROPIC_BASE_URL",
        ),
    }
)
"""Every provider, by name, in the order pickers show them."""


def provider(name: str) -> Provider:
    """The provider called `name`.

    Raises:
        UserError: No provider has that name (the message lists those that do).
    """
    found = PROVIDERS.get(name)
    if found is None:
        raise UserError(
            f"unknown provider {name!r}: use one of {', '.join(PROVIDERS)}, optionally with "
            '":model-name" (e.g. "openai:gpt-4o-mini")'
        )
    return found


def split_model(text: str) -> tuple[str, str | None]:
    """A model string's provider and model name: "openai:gpt-4o-mini" -> ("openai", "gpt-4o-mini").

    Only the first colon splits, so a local server's "openai:llama3.2:1b" keeps its tag; a
    bare provider ("demo") has no model name (None). The provider is checked, not the model.

    Raises:
        UserError: The provider is not in `PROVIDERS`.
    """
    name, _, model = text.strip().partition(":")
    provider(name)
    return name, model.strip() or None


def infer_model(model: str | LLM, **options: Any) -> LLM:
    """The chat model a model string names, built; an `LLM` given is returned as it is.

    Args:
        model: "provider:model" ("openai:gpt-4o-mini"), a bare provider ("anthropic": its
            default model; "demo"), or a model already built.
        **options: Passed to the provider's model (`api_key`, `base_url`, `prices`,
            `max_tokens`); those it does not take are dropped, as the demo model takes no key,
            and so are None values: the model's own default holds (Anthropic's required cap).

    Raises:
        UserError: The provider is unknown, takes no model name but got one, or its SDK is
            not installed; or its model cannot be set up (e.g. `MissingKeyError`).
    """
    if not isinstance(model, str):
        return model
    name, model_name = split_model(model)
    found = PROVIDERS[name]
    if model_name is not None and not found.takes_model:
        raise UserError(
            f"the {name} provider plays fixed replies and takes no model name: write {name!r}, "
            f"not {model!r}"
        )
    kwargs = {
        key: value for key, value in options.items() if key in found.options and value is not None
    }
    factory = found.load_factory()
    if not found.takes_model:
        return factory(**kwargs)
    return factory(model_name or found.default_model, **kwargs)


def provider_of(llm: object) -> str | None:
    """The provider whose model `llm` is (by its class), e.g. "openai" for an `OpenAILLM`."""
    class_name = type(llm).__name__
    for entry in PROVIDERS.values():
        if entry.takes_model and entry.factory_name == class_name:
            return entry.name
    return None
