"""Errors as JSON: a stable `code`, a message a person can act on, never a traceback.

Every error response of both HTTP APIs has the body `{"error": {"code", "message", "hint",
...}}`. A runtime error (`AgentCoreError`) answers with its class's code (see
`agent_core.errors.ERROR_CODES`), and with the finer code its raise site gave, if any, as
`reason`; its message, hint, ids and `params`; the HTTP status comes from its type. Anything
unexpected is a 500 with a generic message; its details go to the log.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from agent_core.errors import (
    AgentCoreError,
    ConflictError,
    InputTooLargeError,
    InvalidTextError,
    LLMError,
    LLMStatusError,
    MissingKeyError,
    NothingToRunError,
    NotReadyError,
    StepError,
    StepNotFoundError,
    StoreError,
    SubscriberLimitError,
    TaskNotActiveError,
    TaskNotFoundError,
    ToolError,
    UserCodeError,
    UserError,
)
from agent_core.execute import ContextTooLongError, ConversationError

__all__ = ["STATUS_BY_TYPE", "ApiError", "error_body", "install_error_handlers", "runtime_error"]

log = logging.getLogger("stepwise.server")

STATUS_BY_TYPE: list[tuple[type[AgentCoreError], int]] = [
    (ConversationError, 422),
    (ContextTooLongError, 413),
    (TaskNotFoundError, 404),
    (StepNotFoundError, 404),
    (ConflictError, 409),
    (NotReadyError, 409),
    (NothingToRunError, 409),
    (TaskNotActiveError, 409),
    (InputTooLargeError, 413),
    (InvalidTextError, 422),
    (MissingKeyError, 503),
    (StepError, 422),
    (LLMError, 502),
    (ToolError, 422),
    (UserCodeError, 500),
    (StoreError, 503),
    (SubscriberLimitError, 503),
    (UserError, 400),
]
"""A runtime error's HTTP status, by type: the first type the error is an instance of
(most specific first); 500 for none."""


_HTTP_CODES = {
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
}


class ApiError(Exception):
    """An error the server answers with: HTTP status, stable code, message and hint."""

    def __init__(
        self, status: int, code: str, message: str, *, hint: str = "", **extra: Any
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.hint = status, code, message, hint
        self.extra = extra


def error_body(code: str, message: str, hint: str = "", **extra: Any) -> dict[str, Any]:
    """The JSON body of an error response."""
    return {"error": {"code": code, "message": message, "hint": hint, **extra}}


def runtime_error(exc: AgentCoreError) -> ApiError:
    """The API's view of a runtime error: status, its code, message, hint, ids and params.

    `code` is the error's class code, which these APIs have answered with since they began;
    where the raise site gave a finer one (`task_finished` for a `nothing_to_run`), it is the
    `reason`, so a client that matches the class code keeps working.
    """
    status = next((s for t, s in STATUS_BY_TYPE if isinstance(exc, t)), 500)
    code = type(exc).default_code
    extra: dict[str, Any] = {} if exc.code == code else {"reason": exc.code}
    for name in ("task_id", "step_id", "remedy", "params"):
        if getattr(exc, name, None):
            extra[name] = getattr(exc, name)
    if isinstance(exc, LLMStatusError) and exc.status is not None:
        extra["provider_status"] = exc.status
    hint = _http_hint(exc) or exc.hint
    return ApiError(status, code, exc.message, hint=hint, **extra)


# The runtime's hints name Python methods; over HTTP the remedy is a route.
_HTTP_HINTS = {
    "finalize": "POST /stepwise/v1/tasks/{task}/finalize gives the final response, or "
    "POST /stepwise/v1/tasks/{task}/undo goes back",
    "undo": "POST /stepwise/v1/tasks/{task}/undo goes back a step",
    "new_task": "POST /ap/v1/agent/tasks starts a new task; GET /ap/v1/agent/tasks lists them",
    "edit_step": "PATCH /stepwise/v1/tasks/{task}/steps/{step} changes its input; then run it",
    "retry": "run the step again: POST /ap/v1/agent/tasks/{task}/steps",
    "wait": "wait for the running step to finish, then try again",
    "configure_model": "set the provider's key (OPENAI_API_KEY, ANTHROPIC_API_KEY) in the "
    "server's environment and restart it",
    "raise_limits": "PATCH /stepwise/v1/tasks/{task}/limits raises the task's bounds; then run "
    "the step again",
}


def _http_hint(exc: AgentCoreError) -> str:
    template = _HTTP_HINTS.get(exc.remedy or "")
    if template is None:
        return ""
    return template.format(task=exc.task_id or "{task_id}", step=exc.step_id or "{step_id}")


def _respond(error: ApiError) -> JSONResponse:
    body = error_body(error.code, error.message, error.hint, **error.extra)
    return JSONResponse(body, status_code=error.status)


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error as JSON with a stable code."""

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> JSONResponse:
        return _respond(exc)

    @app.exception_handler(AgentCoreError)
    async def _runtime(request: Request, exc: AgentCoreError) -> JSONResponse:
        return _respond(runtime_error(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [_problem(e) for e in exc.errors()[:20]]
        message = "the request body is not valid: " + "; ".join(problems)
        hint = "see /docs for the expected shape of this route"
        return _respond(ApiError(422, "invalid_request", message, hint=hint))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        return _respond(ApiError(exc.status_code, code, str(exc.detail)))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        message = "the server failed unexpectedly; its log has the details"
        return _respond(ApiError(500, "internal_error", message))


def _problem(error: Any) -> str:
    where = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body"
    return f"{where}: {error.get('msg', 'invalid')}"
