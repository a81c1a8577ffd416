"""The Settings page's sections: the model new tasks use, keys for this session, prices.

The model and the prices are saved in the app's database (`state` writes them
through), so a reload or a restart keeps them. Keys go only into `state` (this
browser session): the key field is emptied as soon as the key is taken, and no key is ever
shown, logged, saved or put in a spec. A key typed for a local or custom server is sent to
that server only; one typed for OpenAI, to OpenAI only. The pure helpers (`build_spec`,
`parse_prices`, ...) hold the rules; the `render_*` functions draw.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import streamlit as st

from agent_core.errors import AgentCoreError, UserError
from agent_core.llms.catalog import PROVIDERS, ProviderName
from agent_core.llms.pricing import DEFAULT_PRICES
from agent_core.spec import AgentSpec
from stepwise.app.components import runtime, state
from stepwise.app.components.messages import plural
from stepwise.app.components.model_choice import (
    check_base_url,
    max_tokens_input,
    max_tokens_text,
    model_label,
    provider_title,
)

__all__ = [
    "CHOICES",
    "CUSTOM",
    "KEY_ENV",
    "build_spec",
    "check_base_url",
    "choice_of",
    "default_model",
    "key_source",
    "load_secret_keys",
    "parse_prices",
    "price_rows",
    "render_key_section",
    "render_model_section",
    "render_price_section",
]

CUSTOM = "custom"
"""The choice of an OpenAI-compatible server at a base URL the user types."""

_SERVER_API = next(entry for entry in PROVIDERS.values() if entry.presets)
"""The provider whose API the local servers speak (OpenAI's): the one with server presets."""
_PRESETS = _SERVER_API.presets

_SERVER_TITLES = {
    "ollama": "Ollama",
    "vllm": "vLLM",
    "llama.cpp": "llama.cpp",
    "lm-studio": "LM Studio",
}

CHOICES: dict[str, str] = {
    **{name: provider_title(entry) for name, entry in PROVIDERS.items()},
    **{name: f"Local server: {_SERVER_TITLES.get(name, name)}" for name in _PRESETS},
    CUSTOM: f"Local server: another {_SERVER_API.label}-compatible URL",
}
"""What the provider picker offers: providers, then local-server presets by name."""

KEY_ENV: dict[str, str] = {
    name: entry.key_env for name, entry in PROVIDERS.items() if entry.key_env is not None
}
"""The providers that take a key, and the variable (or secret) their SDK reads it from."""

KeySource = Literal["session", "secrets", "environment"]
_MODEL_COLUMN, _INPUT_COLUMN, _OUTPUT_COLUMN = "model", "input $/Mtok", "output $/Mtok"
# Messages say "input price", not the column's name: st.error reads "$...$" as math.
_PRICE_NAMES = {_INPUT_COLUMN: "the input price", _OUTPUT_COLUMN: "the output price"}


# --- the model ------------------------------------------------------------------------------


def _provider_of(choice: str) -> ProviderName:
    # A choice is a provider, or a local server: those speak the presets' provider's API.
    return choice if choice in PROVIDERS else _SERVER_API.name  # type: ignore[return-value]


def _has_fixed_model(choice: str) -> bool:
    return choice in PROVIDERS and not PROVIDERS[choice].takes_model


def _is_local(choice: str) -> bool:
    return choice in _PRESETS or choice == CUSTOM


def choice_of(spec: AgentSpec) -> str:
    """The picker entry that shows `spec` (a preset when its base_url is one)."""
    presets = PROVIDERS[spec.provider].presets
    if not presets or not spec.base_url:
        return spec.provider
    if spec.base_url in presets:  # OpenAILLM also takes a preset's name.
        return spec.base_url
    by_url = {url: name for name, url in presets.items()}
    return by_url.get(spec.base_url.rstrip("/"), CUSTOM)


def default_model(choice: str, saved: AgentSpec) -> str:
    """The model field's first value: the saved model for the saved choice, else the default.

    Local servers have no default: their model is whatever the server has loaded.
    """
    if choice == choice_of(saved) and saved.model:
        return saved.model
    if _is_local(choice):
        return ""
    return PROVIDERS[_provider_of(choice)].model_label


def build_spec(saved: AgentSpec, choice: str, *, model: str, base_url: str = "") -> AgentSpec:
    """`saved` with the provider, model and base URL chosen on the page.

    Args:
        saved: The spec in use; its worker, tools and options are kept.
        choice: A key of `CHOICES`.
        model: The model name typed (empty: the provider's default).
        base_url: The URL typed for the `CUSTOM` choice.

    Raises:
        UserError: The custom URL is not an http(s) URL, or a local server has no model name.
    """
    if choice not in CHOICES:
        raise UserError(f"unknown provider choice {choice!r}: pick one of the listed providers")
    url: str | None = None
    if choice == CUSTOM:
        url = check_base_url(base_url)
    elif choice in _PRESETS:
        url = _PRESETS[choice]
    # The demo and you-as-the-model have no model to name; the stepper's form drops one too.
    model = "" if _has_fixed_model(choice) else model.strip()
    if url is not None and not model:
        raise UserError(
            "Type the model name your server serves (for Ollama e.g. llama3.2, as `ollama list` "
            "shows it), then save again."
        )
    update: dict[str, Any] = {"provider": _provider_of(choice), "model": model, "base_url": url}
    if choice in PROVIDERS and PROVIDERS[choice].needs_person:
        update["worker"] = "react"  # Typed replies are text: only ReAct reads tool calls in text.
    return saved.model_copy(update=update)


_SCRIPTED_ABOUT = "Plays the built-in demo scenarios' replies: no key, no network."
_PERSON_ABOUT = (
    "You type each model reply and see the exact prompt it answers. "
    "This works with the **ReAct worker only**: saving it also picks the ReAct worker."
)

_SERVER_KEY_HINT = (
    " No key is needed; if the server asks for one, save this choice, then enter the server's "
    "key under API keys below: it is sent to this server only (your OpenAI key is never sent "
    "there)."
)


def _about(choice: str) -> str:
    if choice in _PRESETS:
        return (
            f"An {_SERVER_API.label}-compatible server on this machine at `{_PRESETS[choice]}` "
            "(its default port)." + _SERVER_KEY_HINT
        )
    if choice == CUSTOM:
        return (
            f"Any server that speaks {_SERVER_API.label}'s chat completions API." + _SERVER_KEY_HINT
        )
    entry = PROVIDERS[choice]
    if entry.scripted:
        return _SCRIPTED_ABOUT
    if entry.needs_person:
        return _PERSON_ABOUT
    return f"{entry.label}'s API. Needs your {entry.label} key (below)."


def render_model_section() -> None:
    """Pick the provider and model new tasks use, and save them with `state.set_agent_spec`."""
    saved = state.agent_spec()
    st.subheader("Model")
    choice = st.selectbox(
        "Provider",
        list(CHOICES),
        index=list(CHOICES).index(choice_of(saved)),
        format_func=CHOICES.__getitem__,
        key="settings-provider",
    )
    st.caption(_about(choice))
    base_url = ""
    if choice == CUSTOM:
        base_url = st.text_input(
            "Base URL",
            value=(saved.base_url or "") if choice_of(saved) == CUSTOM else "",
            placeholder="http://localhost:8000/v1",
            key="settings-base-url",
        )
    # One field per choice, so switching provider shows that provider's default model.
    model = st.text_input(
        "Model",
        value=default_model(choice, saved),
        placeholder="the model name the server serves, e.g. llama3.2",
        key=f"settings-model-{choice}",
        disabled=_has_fixed_model(choice),
    )
    max_tokens = max_tokens_input(
        "Max tokens per reply", saved.max_tokens, key="settings-max-tokens"
    )
    if st.button("Save model", type="primary", key="settings-save-model"):
        try:
            spec = build_spec(saved, choice, model=model, base_url=base_url)
        except UserError as error:
            st.error(str(error))  # Our own sentence: it never repeats what was typed.
        else:
            spec = spec.model_copy(update={"max_tokens": max_tokens})
            if state.set_agent_spec(spec):
                state.push_notice("success", "Saved: new tasks use this model.")
            st.rerun()
    st.caption(
        "Saved in the app's database, so it stays after a reload or a restart (keys are never "
        "saved). "
        "New tasks start from this (the stepper's form can still change it per task):"
    )
    st.code(model_label(saved), language=None, wrap_lines=True)
    if saved.max_tokens is not None:
        st.caption(f"New tasks' {max_tokens_text(saved)} (each task's form can change it).")


# --- keys -----------------------------------------------------------------------------------

_SESSION_ONLY = (
    "Kept in this browser session only: never saved to disk or to the database, and gone when "
    "the session ends."
)


def _secret_key(provider: str) -> str | None:
    try:
        value = st.secrets.get(KEY_ENV[provider])
    except FileNotFoundError:  # Streamlit raises, rather than answer None, with no secrets file.
        return None
    return value if isinstance(value, str) and value.strip() else None


def load_secret_keys() -> None:
    """Put keys from `st.secrets` into this session, where the runtime looks for keys.

    Only when the session has no key of its own, so a typed key wins. A key forgotten on this
    page comes back from the secrets file on the next run: the file, not the page, owns it.
    """
    for provider in KEY_ENV:
        secret = _secret_key(provider)
        if secret and state.api_key(provider) is None:
            state.set_api_key(provider, secret)


def key_source(provider: str) -> KeySource | None:
    """Where `provider`'s key comes from: typed here, the secrets file, the environment, none."""
    session, secret = state.api_key(provider), _secret_key(provider)
    if session and session != secret:
        return "session"
    if secret:
        return "secrets"
    if os.environ.get(KEY_ENV[provider]):
        return "environment"
    return None


def _code_span(text: str) -> str:
    """`text` as inline code, whatever backticks it holds (markdown shows it verbatim)."""
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def _take_key(provider: str, field: str, title: str) -> None:
    # A callback, so the field can be emptied before it is drawn again: the key then lives
    # only under the session accessor, not also in the field's widget state.
    typed = str(st.session_state.get(field) or "").strip()
    st.session_state[field] = ""
    if not typed:
        state.push_notice("warning", "Paste a key into the field first, then press the button.")
        return
    state.set_api_key(provider, typed)
    state.push_notice("success", f"{title[:1].upper()}{title[1:]} set for this session only.")


def _forget_key(provider: str, title: str) -> None:
    state.set_api_key(provider, None)
    state.push_notice("info", f"Forgot the {title} typed here.")


def _key_form(
    provider: str, *, slug: str, label: str, title: str, note: str, can_forget: bool
) -> None:
    """The key field (emptied once the key is taken), the note beside it, and Forget key."""
    field = f"settings-key-{slug}"
    with st.form(f"settings-key-form-{slug}", border=False):
        st.text_input(label, type="password", key=field, autocomplete="off")
        st.caption(note)
        st.form_submit_button(
            "Use this key for this session",
            key=f"settings-use-key-{slug}",
            on_click=_take_key,
            args=(provider, field, title),
        )
    st.button(
        "Forget key",
        key=f"settings-forget-{slug}",
        on_click=_forget_key,
        args=(provider, title),
        disabled=not can_forget,
        help="Only a key typed here can be forgotten here; others live in secrets or the env.",
    )


def _show_key_status(provider: str, source: KeySource | None) -> None:
    variable = KEY_ENV[provider]
    if source == "session":
        st.success("A key typed here is set for this session.")
    elif source == "secrets":
        st.info(f"Using `{variable}` from Streamlit secrets (`.streamlit/secrets.toml`).")
    elif source == "environment":
        st.info(f"Using the `{variable}` environment variable.")
    else:
        st.warning(f"No key yet: paste one below, or set `{variable}` before starting the app.")


def _key_note(provider: str) -> str:
    entry = PROVIDERS[provider]
    # A provider with server presets is the one whose key a local server could be sent.
    elsewhere = "a local or custom server" if entry.presets else "another server"
    return f"Sent to {entry.label}'s API only, never to {elsewhere}. " + _SESSION_ONLY


def _render_key(provider: str) -> None:
    title = PROVIDERS[provider].label
    st.markdown(f"**{title}**")
    source = key_source(provider)
    _show_key_status(provider, source)
    _key_form(
        provider,
        slug=provider,
        label=f"{title} API key",
        title=f"{title} key",
        note=_key_note(provider),
        can_forget=source == "session",
    )


def _open_task_server() -> str | None:
    task_id = state.current_task_id()
    try:
        return runtime.spec_of(task_id).base_url if task_id else None
    except (AgentCoreError, ValueError):  # Deleted, or a spec this version cannot read.
        return None


def _servers() -> dict[str, str]:
    """The servers whose key this page offers, each with what uses it.

    The saved default's server, and the servers the open task and the New task form's last
    choice use (a per-task choice of server needs its key here too).
    """
    found: dict[str, str] = {}
    candidates = [
        (state.agent_spec().base_url, "The server new tasks use"),
        (_open_task_server(), "The open task's server"),
        (state.form_spec().base_url, "The server of the New task form's last choice"),
    ]
    for base_url, what in candidates:
        if base_url:
            found.setdefault(state.server_provider(base_url), what)
    return found


def _render_server_key(provider: str, what: str, slug: str) -> None:
    """The key for one server: sent to that server, and to no other."""
    address = _code_span(provider.removeprefix("server:"))
    has_key = state.api_key(provider) is not None
    st.markdown(f"**{what}**: {address}")
    if has_key:
        st.success("A key typed here is set for this server, for this session.")
    else:
        st.info("No key: requests go without one. Enter one if the server asks for it.")
    _key_form(
        provider,
        slug=slug,
        label=f"API key for {address}",
        title="key for this server",
        note=f"Sent to this server ({address}) only, with each request of tasks that use it. "
        + _SESSION_ONLY,
        can_forget=has_key,
    )


def render_key_section() -> None:
    """Key entry per provider, and for the server new tasks use, for this browser session only."""
    st.subheader("API keys")
    st.caption(
        "A key typed here is kept in this browser session only: it is never written to disk, "
        "the database, a task, the logs or this page, and it is gone when the session ends "
        "(a reload starts a new session). A typed key takes precedence over the environment "
        "and the secrets file. Each key is sent only to the service it was typed for."
    )
    for number, (provider, what) in enumerate(_servers().items()):
        _render_server_key(provider, what, "server" if number == 0 else f"server-{number + 1}")
    for column, provider in zip(st.columns(len(KEY_ENV)), KEY_ENV, strict=True):
        with column:
            _render_key(provider)


# --- prices ---------------------------------------------------------------------------------


def price_rows(overrides: Mapping[str, tuple[float, float]]) -> list[dict[str, Any]]:
    """The price table shown: the defaults, with the session's overrides on top."""
    merged = {
        name: (price.input_per_mtok, price.output_per_mtok)
        for name, price in DEFAULT_PRICES.items()
    }
    merged.update(overrides)
    return [
        {_MODEL_COLUMN: name, _INPUT_COLUMN: pair[0], _OUTPUT_COLUMN: pair[1]}
        for name, pair in merged.items()
    ]


def _is_blank(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def _dollars(value: Any, *, row: int, column: str) -> float:
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise UserError(
            f"Row {row}: {_PRICE_NAMES[column]} must be a number of dollars per million "
            "tokens, e.g. 0.15. Nothing was saved."
        )
    if number < 0:
        raise UserError(f"Row {row}: {_PRICE_NAMES[column]} cannot be negative. Nothing was saved.")
    return number


def parse_prices(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[float, float]]:
    """The overrides the edited table asks for: rows that are new or differ from the defaults.

    Rows left wholly empty are skipped. A default row that was deleted has no override, so
    its default price applies again.

    Raises:
        UserError: A price is missing, not a number or negative; a row has no model name; or
            a model appears twice. Messages name rows by number, never repeat what was typed.
    """
    overrides: dict[str, tuple[float, float]] = {}
    first_row: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        name = str(row.get(_MODEL_COLUMN) or "").strip()
        cells = (row.get(_INPUT_COLUMN), row.get(_OUTPUT_COLUMN))
        if not name and all(_is_blank(cell) for cell in cells):
            continue
        if not name:
            raise UserError(f"Row {number} has no model name: name the model or delete the row.")
        if name in first_row:
            raise UserError(
                f"Row {number} repeats the model in row {first_row[name]}: keep one of them."
            )
        first_row[name] = number
        pair = (
            _dollars(cells[0], row=number, column=_INPUT_COLUMN),
            _dollars(cells[1], row=number, column=_OUTPUT_COLUMN),
        )
        default = DEFAULT_PRICES.get(name)
        if default is None or pair != (default.input_per_mtok, default.output_per_mtok):
            overrides[name] = pair
    return overrides


def _editor_key(overrides: Mapping[str, tuple[float, float]]) -> str:
    # A new key once the overrides change, so edits already saved are not applied again on top
    # of the table that now includes them; a rejected edit keeps its key and stays to be fixed.
    digest = hashlib.sha256(json.dumps(sorted(overrides.items())).encode()).hexdigest()[:12]
    return f"settings-prices-{digest}"


def _reset_prices() -> None:
    if state.set_price_overrides({}):
        state.push_notice("info", "Prices reset to the built-in table.")


def render_price_section() -> None:
    """The price table: built-in prices plus this session's overrides, editable."""
    st.subheader("Prices")
    st.caption(
        "US dollars per million tokens, used for each step's cost. A model matches its exact "
        "name, else the longest name it starts with. Add a row for a model that is missing; "
        "delete a built-in row to restore its default. Prices are saved in the app's database: "
        "they stay after a reload or a restart."
    )
    overrides = state.price_overrides()
    money = {"min_value": 0.0, "format": "%.3f"}
    with st.form("settings-prices", border=False):
        rows = st.data_editor(
            price_rows(overrides),
            key=_editor_key(overrides),
            num_rows="dynamic",
            hide_index=True,
            column_config={
                _MODEL_COLUMN: st.column_config.TextColumn(_MODEL_COLUMN, required=True),
                _INPUT_COLUMN: st.column_config.NumberColumn(_INPUT_COLUMN, **money),
                _OUTPUT_COLUMN: st.column_config.NumberColumn(_OUTPUT_COLUMN, **money),
            },
        )
        submitted = st.form_submit_button("Save prices", type="primary", key="settings-save-prices")
    st.button(
        "Reset to built-in prices",
        key="settings-reset-prices",
        on_click=_reset_prices,
        disabled=not overrides,
    )
    if not submitted:
        return
    try:
        new = parse_prices(rows)
    except UserError as error:
        st.error(str(error))
        return
    if state.set_price_overrides(new):
        differ = "differs" if len(new) == 1 else "differ"
        saved = f"Prices saved ({plural(len(new), 'model')} {differ} from the built-in table)."
        state.push_notice("success", saved)
    st.rerun()
