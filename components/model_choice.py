"""How the app names a provider and a model, and the rule for a typed server address.

Both the stepper's create form (`components.task_form`) and the Settings page
(`components.settings_form`) use these; they live apart from both so that neither form imports
the other. The providers themselves come from `agent_core.llms.catalog`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from agent_core.errors import UserError
from agent_core.llms.catalog import PROVIDERS, Provider
from agent_core.spec import AgentSpec

__all__ = ["PROVIDER_LABELS", "check_base_url", "model_label", "provider_title"]


def provider_title(entry: Provider) -> str:
    """A provider as a picker names it: its label, and what to know when there is something."""
    return f"{entry.label} ({entry.note})" if entry.note else entry.label


PROVIDER_LABELS: dict[str, str] = {
    # A provider with server presets also drives any server that speaks its API.
    name: provider_title(entry) + (" / compatible" if entry.presets else "")
    for name, entry in PROVIDERS.items()
}
"""The providers as the stepper's create form names them."""


def model_label(spec: AgentSpec) -> str:
    """How the model is named on screen; the scripted demo always says so."""
    entry = PROVIDERS[spec.provider]
    if entry.scripted:
        return f"{entry.label} — scripted replies, not a real LLM"
    if entry.needs_person:
        return f"{entry.label} — you type each reply"
    where = f" at {spec.base_url}" if spec.base_url else ""
    return f"{PROVIDER_LABELS[spec.provider]} · {spec.model_name}{where}"


def check_base_url(url: str) -> str:
    """`url` stripped, if it is an http(s) URL naming a server; else a `UserError` saying why."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError:  # e.g. an unclosed "[" of an IPv6 address
        parts, hostname = None, None
    if parts is None or parts.scheme not in ("http", "https") or not hostname:
        raise UserError(
            "The base URL must start with http:// or https:// and name a server, "
            "e.g. http://localhost:8000/v1. Fix it, then save again."
        )
    if parts.username or parts.password:
        # The base URL is stored with every task; a key hidden in it would be written to disk.
        raise UserError(
            "The base URL must not hold a user name or password: it is saved with each task. "
            "Remove it and enter the key under API keys instead."
        )
    return url
