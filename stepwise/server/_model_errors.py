"""Execute Agent's errors in a stateless call's words, naming the model server as configured.

The adapters word a failed model call for a task's step ("run the step again", "undo the
step") and name the provider ("Anthropic") even when its address is another server; the HTTP
envelope then adds a task route. A stateless call has no task and no step, and its caller
should read which server failed as this server is configured (`ANTHROPIC_BASE_URL`, ...). So
the message and hint of a model's failure are worded here from its code, status and params,
never from its text; other errors keep their own (stateless) hints.
"""

from __future__ import annotations

import logging
import os

from agent_core.errors import (
    AgentCoreError,
    LLMConnectionError,
    LLMError,
    LLMStatusError,
    MissingKeyError,
)
from agent_core.execute import ContextTooLongError
from agent_core.llms.catalog import PROVIDERS
from stepwise.http.errors import ApiError, runtime_error
from stepwise.server.settings import host_port

__all__ = ["server_label", "stateless_error"]

log = logging.getLogger("stepwise.server")

_AGAIN = "send the request again"


def server_label(provider: str) -> str:
    """Who answers for `provider`, as this server is configured.

    "the server at host:port" when an address is set (never the URL's path, user or
    password), else the provider's name ("Anthropic").
    """
    entry = PROVIDERS[provider]
    url = os.environ.get(entry.base_url_env) if entry.base_url_env else None
    if not url:
        return entry.label
    return f"the server at {host_port(entry.presets.get(url, url))}"


def stateless_error(exc: AgentCoreError, *, provider: str, model: str) -> ApiError:
    """The API error for `exc` raised by an Execute Agent call to `provider`'s `model`."""
    error = runtime_error(exc)
    if isinstance(exc, MissingKeyError):  # The envelope's hint: set it on the server.
        return error
    if isinstance(exc, LLMError) and not isinstance(exc, ContextTooLongError):
        server = server_label(provider)
        words = _model_failure(exc, server=server, provider=provider, model=model)
        if words is not None:
            log.warning("Execute Agent: the model call failed: %s", exc.message)
            error.message, error.hint = words
            if "params" in error.extra:
                error.extra["params"] = {**error.extra["params"], "server": server}
            return error
    error.hint = _AGAIN if exc.remedy == "retry" else exc.hint
    return error


def _model_failure(
    exc: LLMError, *, server: str, provider: str, model: str
) -> tuple[str, str] | None:
    """(message, hint) for a failure the adapters word; None for the others."""
    if isinstance(exc, LLMStatusError) and exc.status is not None:
        return _status_words(exc, server=server, provider=provider, model=model)
    if exc.timed_out:
        if exc.code == "model_busy":
            return (
                f"{server} did not answer in time (model {model!r}); it may still be "
                "generating that reply",
                f"wait until the model server is idle, then {_AGAIN}",
            )
        return f"{server} did not answer in time (model {model!r})", f"{_AGAIN} in a moment"
    if isinstance(exc, LLMConnectionError):
        where = PROVIDERS[provider].base_url_env
        check = f" and that {where} on this server names it" if where else ""
        return f"could not connect to {server}", f"check that it is running{check}; then {_AGAIN}"
    return None


def _status_words(
    exc: LLMStatusError, *, server: str, provider: str, model: str
) -> tuple[str, str]:
    status, detail = exc.status, str(exc.params.get("detail") or "no detail")
    if exc.code == "model_request_refused":
        return (
            f"{server} failed this request twice with a server error ({status}): {detail}",
            "it fails this request every time, so sending it again will not help: read its "
            "error (and its log); try another model or server, or change the conversation",
        )
    message, hint = _BY_STATUS.get(status or 0, _OTHER if (status or 0) < 500 else _FAILED)
    key = PROVIDERS[provider].key_env or "the provider's key"
    wait = f" (it asked to wait {exc.retry_after:g}s)" if exc.retry_after is not None else ""
    text = message.format(server=server, model=model, status=status, detail=detail)
    return text + wait, hint.format(key=key)


_FAILED = ("{server} failed ({status}: {detail})", f"{_AGAIN} in a moment")
_OTHER = (
    "{server} refused the request ({status}: {detail})",
    f"change the conversation or the tools, or pick another model; then {_AGAIN}",
)
_BY_STATUS = {
    401: (
        "{server} rejected this server's API key (401: {detail})",
        "set a valid key ({key}) in this server's environment and restart it",
    ),
    403: (
        "{server} refused access to model {model!r} (403: {detail})",
        "pick another model (`model.name`), or give this server a key that may use it",
    ),
    404: (
        "{server} has no model {model!r} (404: {detail})",
        "check the model's name (`model.name`) and the address this server is configured with",
    ),
    429: ("{server} rate-limited the call (429: {detail})", f"wait a moment; then {_AGAIN}"),
    503: ("{server} is unavailable (503: {detail})", f"{_AGAIN} in a moment"),
    529: ("{server} is overloaded (529: {detail})", f"{_AGAIN} in a moment"),
    400: _OTHER,
}
