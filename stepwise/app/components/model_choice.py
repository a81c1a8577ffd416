"""How the app names a provider and a model, and the rule for a typed server address.

Both the stepper's create form (`task_form`) and the Settings page
(`settings_form`) use these; they live apart from both so that neither form imports
the other. The providers themselves come from `agent_core.llms.catalog`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import streamlit as st

from agent_core.errors import UserError
from agent_core.llms.catalog import PROVIDERS, Provider
from agent_core.spec import AgentSpec

__all__ = [
    "MAX_TOKENS_HELP",
    "PROVIDER_LABELS",
    "check_base_url",
    "max_tokens_input",
    "max_tokens_text",
    "model_label",
    "provider_title",
]


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


MAX_TOKENS_HELP = (
    "The most tokens one model reply may have (sent as max_tokens, or max_completion_tokens "
    "where the server takes that). Empty: no cap. A small local model may otherwise write "
    "until its context is full, and a server keeps generating after a timed-out request."
)


def max_tokens_input(label: str, value: int | None, *, key: str) -> int | None:
    """A whole-number field for the reply cap; None when left empty (no cap)."""
    typed = st.number_input(
        label,
        min_value=1,
        max_value=1_000_000,
        value=value,
        step=256,
        placeholder="no cap",
        key=key,
        help=MAX_TOKENS_HELP,
    )
    return None if typed is None else int(typed)


def max_tokens_text(spec: AgentSpec) -> str:
    """The reply cap in words: "replies up to 512 tokens", or "" with no cap."""
    return "" if spec.max_tokens is None else f"replies up to {spec.max_tokens:,} tokens"


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
