"""Replay for a framework's agent, which calls its model itself: answered at the model client.

A pydantic-ai, Agents SDK or LangGraph agent sends its requests through its provider's SDK
(OpenAI's, Anthropic's, or LangChain's `ChatOpenAI`, which uses OpenAI's), and those SDKs send
through `httpx` (OpenAI's SDK 3.x through its fork `httpx2`: both are routed). While a
replayed step runs, `httpx` clients route the model endpoints
(`/chat/completions`, `/responses`, `/messages`) to `ReplayTransport`, which answers the
step's one recorded call with the recorded reply in the provider's JSON and never opens a
socket; other requests (a tool fetching a page) go out as usual. The routing is scoped to the
step by a context variable, so another task in the same process still reaches its model.

The request is compared where the recording holds it: the adapter turns what the framework
sent into Stepwise's messages (`TaskStepOutput.messages_sent`), and the tools it offered into
the step's state where it sees them (`REQUEST_TOOLS_KEY`: pydantic-ai's function tools), by
the same code at recording and at replay, so `ClientReplayWorker` compares those after the
step, as `RecordedLLM` does for the built-in workers. A pydantic-ai agent whose model is a
`FunctionModel` or `TestModel` (no client at all) gets a `FunctionModel` answering from the
recording instead.
"""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Iterator
from contextvars import ContextVar
from types import ModuleType
from typing import Any

import httpx

from agent_core.recordings._wire_replies import api_of, reply_body, reply_events
from agent_core.recordings.cases import ModelRequest
from agent_core.recordings.errors import ReplayDivergedError
from agent_core.recordings.requests import request_diff, request_tools, same_request
from agent_core.recordings.stand_ins import ReplayLog
from agent_core.types import Task, TaskStep, TaskStepOutput
from agent_core.workers.base import BaseAgentWorker

__all__ = ["ClientReplayWorker", "ReplayTransport", "answer_from_recording", "replaying"]

_ACTIVE: ContextVar[ReplayLog | None] = ContextVar("stepwise_client_replay", default=None)
_ORIGINAL: dict[type, Any] = {}


def answer_from_recording(log: ReplayLog) -> Any:
    """The current step's recorded reply, counting the call; a divergence if there is none.

    Raises:
        ReplayDivergedError: The step has no recorded model call, or this is a second one.
    """
    step = log.current
    log.calls_this_step += 1
    log.client_calls += 1
    if step is None or step.reply is None or log.calls_this_step > 1:
        number = step.number if step else 0
        log.diverge(
            log.here(
                "unrecorded_call",
                f"step {number}: the agent called its model where the recording has no model call",
            )
        )
        raise ReplayDivergedError("no recorded reply", params={"step": number})
    return step.reply


class ReplayTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An `httpx` transport answering model calls from a `ReplayLog`; it opens no socket.

    Args:
        log: The replay's log.
        http: The `httpx` module the client is of (`httpx` or `httpx2`): its `Response`.
    """

    def __init__(self, log: ReplayLog, http: ModuleType = httpx) -> None:
        self.log = log
        self.http = http

    def handle_request(self, request: Any) -> Any:
        """The recorded reply, or a 400 naming the divergence (clients do not retry a 400)."""
        request.read()
        return self._answer(request)

    async def handle_async_request(self, request: Any) -> Any:
        """The recorded reply, or a 400 naming the divergence."""
        await request.aread()
        return self._answer(request)

    def _answer(self, request: Any) -> Any:
        api = api_of(request.url.path) or "chat"
        try:
            body = json.loads(request.content or b"{}")
        except ValueError:
            body = {}
        try:
            reply = answer_from_recording(self.log)
        except ReplayDivergedError as exc:
            error = {"error": {"message": f"stepwise replay: {exc}", "type": "replay_diverged"}}
            return self.http.Response(400, json=error, request=request)
        model = str(body.get("model") or "recorded")
        if body.get("stream"):
            events = b"".join(reply_events(api, reply, model))
            headers = {"content-type": "text/event-stream"}
            return self.http.Response(200, content=events, headers=headers, request=request)
        return self.http.Response(200, json=reply_body(api, reply, model), request=request)


def _routed(client_type: type, http: ModuleType) -> Any:
    original = _ORIGINAL[client_type]

    def transport_for_url(self: Any, url: Any) -> Any:
        log = _ACTIVE.get()
        if log is not None and api_of(url.path) is not None:
            return ReplayTransport(log, http)
        return original(self, url)

    return transport_for_url


def _http_modules() -> list[ModuleType]:
    found = [httpx]
    with contextlib.suppress(ImportError):
        found.append(importlib.import_module("httpx2"))
    return found


def _install() -> None:
    """Route `httpx` clients' model calls through the replay while one is active (once)."""
    for http in _http_modules():
        for client_type in (http.Client, http.AsyncClient):
            _route(client_type, http)


def _route(client_type: type, http: ModuleType) -> None:
    if client_type not in _ORIGINAL:
        # httpx picks each request's transport here (its mounts do the same for proxies):
        # answering there keeps the SDK's own client, headers and parsing in the replay.
        _ORIGINAL[client_type] = client_type._transport_for_url  # type: ignore[attr-defined]
        client_type._transport_for_url = _routed(client_type, http)  # type: ignore[attr-defined]


@contextlib.contextmanager
def replaying(log: ReplayLog) -> Iterator[None]:
    """Within this block (and tasks and threads started in it), model calls replay `log`."""
    _install()
    token = _ACTIVE.set(log)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


class ClientReplayWorker(BaseAgentWorker):
    """A framework's worker whose steps call the model through the recording.

    Args:
        worker: The adapter's worker, built from the current code.
        log: The replay's log.
        model_swap: A context manager factory run around each step, for agents whose model
            is no SDK client (pydantic-ai's `FunctionModel`); None for none.
    """

    def __init__(self, worker: BaseAgentWorker, log: ReplayLog, model_swap: Any = None) -> None:
        self.inner = worker
        self.log = log
        self.model_swap = model_swap

    def __getattr__(self, name: str) -> Any:
        # Everything but running a step is the adapter's own (previews, names, its agent).
        return getattr(self.inner, name)

    @property
    def own_model(self) -> str | None:
        """The model the framework's agent names (answered from the recording)."""
        return self.inner.own_model

    @property
    def keeps_own_conversation(self) -> str | None:
        """As the adapter says."""
        return self.inner.keeps_own_conversation

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        """The adapter's first step."""
        return self.inner.initialize_step(task, **kwargs)

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Run the adapter's step with the model answered from the recording, then compare."""
        before = self.log.client_calls
        swap = self.model_swap() if self.model_swap is not None else contextlib.nullcontext()
        with replaying(self.log), swap:
            output = await self.inner.arun_step(step, task, **kwargs)
        if self.log.client_calls > before:
            self._compare(output)
        return output

    def finalize_task(self, task: Task, **kwargs: Any) -> list[Any]:
        """As the adapter does."""
        return self.inner.finalize_task(task, **kwargs)

    def preview_messages(self, task: Task) -> list[Any]:
        """As the adapter does."""
        return self.inner.preview_messages(task)

    def preview_step(self, step: TaskStep, task: Task) -> list[Any]:
        """As the adapter does."""
        return self.inner.preview_step(step, task)

    def _compare(self, output: TaskStepOutput) -> None:
        """The request the step sent against the recorded one; a divergence when they differ."""
        log, recorded = self.log, self.log.current
        if recorded is None or recorded.request is None:
            return
        sent = ModelRequest(
            messages=list(output.messages_sent), tools=request_tools(output.task_step)
        )
        log.requests.setdefault(recorded.number, sent)
        ignore = log.ignore_system_prompt
        if same_request(recorded.request, sent, ignore_system=ignore):
            return
        log.diverge(
            log.here(
                "request",
                f"step {recorded.number} ({recorded.kind}): the model request differs from "
                "the recording",
                request_diff(recorded.request, sent, ignore_system=ignore, step=recorded.number),
            )
        )
