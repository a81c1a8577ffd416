"""The runtime the app shares across sessions: the app's `Host`, one runner per spec and key.

The host (`database.shared_host`) lives for the server's life and keeps a runner
per spec, key, prices and, for "you are the model", session; the store keeps everything else,
so reloading the page or restarting the server loses nothing. Two tabs on one task share the
store; the runner's version check stops them from overwriting each other.
"""

from __future__ import annotations

import hashlib
import json

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from agent_core import ParallelAgentRunner
from agent_core.llms.base import LLM
from agent_core.llms.catalog import PROVIDERS
from agent_core.llms.pricing import ModelPrice, PriceTable
from agent_core.spec import AgentSpec
from stepwise.app.components import state
from stepwise.app.components.database import DB_ENV, DEFAULT_DB, shared_host, shared_store

__all__ = [  # The database's names stay importable from here, where they used to live.
    "DB_ENV",
    "DEFAULT_DB",
    "model_for",
    "reader",
    "runner_for",
    "shared_host",
    "shared_store",
    "spec_of",
]


@st.cache_resource(max_entries=16, show_spinner=False)
def _model(spec_json: str, key_id: str, _api_key: str | None) -> LLM:
    return AgentSpec.model_validate_json(spec_json).build_llm(api_key=_api_key)


def model_for(spec: AgentSpec) -> LLM:
    """The chat model of `spec` alone, with this session's key for its provider."""
    key = _session_key(spec)
    return _model(spec.model_dump_json(), _key_id(key), key)


def _key_id(key: str | None) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16] if key else ""


def runner_for(spec: AgentSpec) -> ParallelAgentRunner:
    """The runner for `spec`, with this session's key and prices for its provider."""
    overrides = {
        name: ModelPrice(input_per_mtok=pair[0], output_per_mtok=pair[1])
        for name, pair in state.price_overrides().items()
    }
    # "You are the model" queues typed replies in the runner's model: one runner per session.
    owner = _session_id() if PROVIDERS[spec.provider].needs_person else ""
    return shared_host().runner_for(
        spec, api_key=_session_key(spec), prices=PriceTable(overrides), owner=owner
    )


def _session_key(spec: AgentSpec) -> str | None:
    # A server gets only the key typed for that server; a key typed for OpenAI (or Anthropic)
    # goes to that provider's own API only, never to a local or custom server.
    if spec.base_url:
        return state.api_key(state.server_provider(spec.base_url))
    return state.api_key(spec.provider)


def _session_id() -> str:
    context = get_script_run_ctx()
    return context.session_id if context is not None else ""


def reader() -> ParallelAgentRunner:
    """A runner for reading any task (the demo spec: it needs no key)."""
    return runner_for(AgentSpec())


@st.cache_data(max_entries=1024, show_spinner=False)
def _spec_json_of(task_id: str) -> str:
    # A task's spec never changes, so it is read once per process, not on every rerun.
    recorded = reader().get_task(task_id).spec
    return json.dumps(recorded) if recorded else AgentSpec().model_dump_json()


def spec_of(task_id: str) -> AgentSpec:
    """The spec a stored task runs with (the default demo spec when it has none)."""
    return AgentSpec.model_validate_json(_spec_json_of(task_id))
