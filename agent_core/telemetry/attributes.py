"""Span attributes, OpenInference names first, from the runtime's own objects.

Every attribute is chosen from an allow-list of fields: nothing here walks an LLM or a tool
object, so an API key held by an SDK client cannot reach a span. Prompt text, model output,
tool arguments, tool output and error messages are added only with `capture=True`.

Step spans carry their tokens as `stepwise.step.tokens.*`, not `llm.token_count.*`: Phoenix
sums `llm.token_count.*` over a span and its children, and the LLM spans below already count.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from openinference.semconv.trace import MessageAttributes as MA
from openinference.semconv.trace import OpenInferenceMimeTypeValues as Mime
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kinds
from openinference.semconv.trace import SpanAttributes as SA
from openinference.semconv.trace import ToolAttributes as TA
from openinference.semconv.trace import ToolCallAttributes as TCA

from agent_core.effects import current_step
from agent_core.llms.catalog import provider_of

if TYPE_CHECKING:
    from agent_core.llms.base import ChatMessage, ChatResponse, ToolSpec, Usage
    from agent_core.types import TaskState, TaskStep, TaskStepOutput, ToolOutput

__all__ = [
    "TASK_ID",
    "chat_request",
    "chat_response",
    "error_attributes",
    "safe_url",
    "step_end",
    "step_start",
    "task_end",
    "task_start",
    "tool_request",
    "tool_result",
]

TASK_ID = "stepwise.task.id"
_INVOCATION_PARAMETERS = ("temperature", "max_tokens", "top_p")
"""The LLM settings exported, by name: an allow-list, so no credential can slip in."""


def task_start(state: TaskState, runner: Any, *, capture: bool) -> tuple[dict[str, Any], str]:
    """The attributes and the name of a task's AGENT span."""
    task = state.task
    agent = _agent_name(task.spec, runner)
    attributes: dict[str, Any] = {
        SA.OPENINFERENCE_SPAN_KIND: Kinds.AGENT.value,
        SA.SESSION_ID: task.task_id,
        TASK_ID: task.task_id,
        SA.AGENT_NAME: agent,
    }
    if capture:
        attributes.update(text_value(SA.INPUT_VALUE, task.input))
    return attributes, f"invoke_agent {agent}"


def task_end(state: TaskState, *, capture: bool) -> dict[str, Any]:
    """What a task's span learns when the task ends: status, totals, the answer (captured)."""
    task = state.task
    attributes: dict[str, Any] = {
        "stepwise.task.status": task.status.value,
        "stepwise.task.steps": len(state.completed),
        **_usage("stepwise.task.tokens", task.usage),
    }
    last = state.last_output
    if capture and last is not None and last.is_last and last.output is not None:
        attributes.update(text_value(SA.OUTPUT_VALUE, last.output))
    return attributes


def step_start(state: TaskState, step: TaskStep, *, capture: bool) -> dict[str, Any]:
    """The attributes a step's CHAIN span starts with."""
    attributes: dict[str, Any] = {
        SA.OPENINFERENCE_SPAN_KIND: Kinds.CHAIN.value,
        SA.SESSION_ID: state.task_id,
        TASK_ID: state.task_id,
        "stepwise.step.id": step.step_id,
        "stepwise.step.kind": step.kind.value,
        "stepwise.step.branch": step.branch_id,
        "stepwise.step.attempt": step.attempts,
        "stepwise.step.edited": step.edited,
    }
    if capture and step.input is not None:
        attributes.update(text_value(SA.INPUT_VALUE, step.input))
    return attributes


def step_end(step: TaskStep, output: TaskStepOutput, *, capture: bool) -> dict[str, Any]:
    """What a completed step adds to its span: number, tokens, what it queued, its output."""
    attributes: dict[str, Any] = {
        "stepwise.step.status": step.status.value,
        "stepwise.step.is_last": output.is_last,
        "stepwise.step.tool_calls": len(output.tool_calls),
        "stepwise.step.next_steps": len(output.next_steps),
        "stepwise.step.latency_ms": output.latency_ms,
        **_usage("stepwise.step.tokens", output.usage),
    }
    if step.number is not None:
        attributes["stepwise.step.number"] = step.number
    if capture and output.output is not None:
        attributes.update(text_value(SA.OUTPUT_VALUE, output.output))
    return attributes


def chat_request(
    llm: Any,
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec] | None,
    step: TaskStep,
    *,
    stream: bool,
    capture: bool,
) -> dict[str, Any]:
    """The attributes an LLM span starts with: model, provider, settings, messages (captured)."""
    provider = _provider(llm)
    parameters = {name: getattr(llm, name, None) for name in _INVOCATION_PARAMETERS}
    parameters = {name: value for name, value in parameters.items() if value is not None}
    attributes: dict[str, Any] = {
        SA.OPENINFERENCE_SPAN_KIND: Kinds.LLM.value,
        SA.SESSION_ID: step.task_id,
        TASK_ID: step.task_id,
        "stepwise.step.id": step.step_id,
        SA.LLM_MODEL_NAME: str(llm.model),
        SA.LLM_REQUEST_MODEL_NAME: str(llm.model),
        SA.LLM_PROVIDER: provider,
        SA.LLM_SYSTEM: provider,
        SA.LLM_INVOCATION_PARAMETERS: json.dumps({**parameters, "stream": stream}),
        "stepwise.llm.tools": len(tools or ()),
    }
    base_url = getattr(llm, "base_url", None)
    if isinstance(base_url, str) and base_url:
        attributes["stepwise.llm.base_url"] = safe_url(base_url)
    if capture:
        for index, message in enumerate(messages):
            attributes.update(_message(f"{SA.LLM_INPUT_MESSAGES}.{index}", message))
        for index, spec in enumerate(tools or ()):
            attributes[f"{SA.LLM_TOOLS}.{index}.{TA.TOOL_JSON_SCHEMA}"] = json.dumps(
                {"type": "function", "function": spec.model_dump()}, default=str
            )
    return attributes


def chat_response(response: ChatResponse, *, capture: bool) -> dict[str, Any]:
    """What an LLM span learns from the reply: the model that answered, tokens, the reply."""
    usage = response.usage
    attributes: dict[str, Any] = {
        SA.LLM_TOKEN_COUNT_PROMPT: usage.prompt_tokens,
        SA.LLM_TOKEN_COUNT_COMPLETION: usage.completion_tokens,
        SA.LLM_TOKEN_COUNT_TOTAL: usage.total_tokens,
        "stepwise.llm.tool_calls": len(response.tool_calls),
    }
    if response.model:
        attributes[SA.LLM_MODEL_NAME] = response.model
        attributes[SA.LLM_RESPONSE_MODEL_NAME] = response.model
    if usage.cost_usd is not None:
        attributes[SA.LLM_COST_TOTAL] = usage.cost_usd
    if capture:
        attributes.update(_message(f"{SA.LLM_OUTPUT_MESSAGES}.0", response.message))
        attributes.update(text_value(SA.OUTPUT_VALUE, response.message.content))
    return attributes


def tool_request(
    tool: Any, args: Mapping[str, Any], *, capture: bool, **call: Any
) -> dict[str, Any]:
    """The attributes a TOOL span starts with: the tool, the call id, the arguments (captured)."""
    attributes: dict[str, Any] = {
        SA.OPENINFERENCE_SPAN_KIND: Kinds.TOOL.value,
        SA.TOOL_NAME: tool.name,
        "stepwise.step.id": call.get("step_id", ""),
    }
    step = current_step()  # The call itself does not carry its task.
    if step is not None:
        attributes[SA.SESSION_ID] = attributes[TASK_ID] = step.task_id
    metadata = getattr(tool, "metadata", None)
    description = getattr(metadata, "description", "")
    if description:
        attributes[SA.TOOL_DESCRIPTION] = description
    if call.get("call_id"):
        attributes[TCA.TOOL_CALL_ID] = call["call_id"]
    if capture:
        attributes.update(text_value(SA.INPUT_VALUE, dict(args)))
    return attributes


def tool_result(result: ToolOutput, *, capture: bool) -> dict[str, Any]:
    """What a TOOL span learns from the result: whether it failed or was refused, the output."""
    attributes: dict[str, Any] = {
        "stepwise.tool.is_error": result.is_error,
        "stepwise.tool.rejected": result.rejected,
    }
    if capture:
        attributes.update(text_value(SA.OUTPUT_VALUE, result.content))
    return attributes


def error_attributes(exc: BaseException) -> dict[str, Any]:
    """The error's type, the cause's type and an HTTP status: never its message."""
    attributes: dict[str, Any] = {"error.type": type(exc).__name__}
    cause = exc.__cause__
    if cause is not None:
        attributes["stepwise.error.cause_type"] = type(cause).__name__
    for error in (exc, cause):
        status = getattr(error, "status", None)
        if isinstance(status, int):
            attributes["http.response.status_code"] = status
            break
    remedy = getattr(exc, "remedy", None)
    if isinstance(remedy, str):
        attributes["stepwise.error.remedy"] = remedy
    return attributes


def text_value(key: str, value: Any) -> dict[str, Any]:
    """`key` = value as text, and its mime type (JSON for dicts and lists)."""
    mime_key = SA.INPUT_MIME_TYPE if key == SA.INPUT_VALUE else SA.OUTPUT_MIME_TYPE
    if isinstance(value, str):
        return {key: value, mime_key: Mime.TEXT.value}
    if isinstance(value, Mapping | list | tuple):
        return {key: json.dumps(value, default=str), mime_key: Mime.JSON.value}
    return {key: str(value), mime_key: Mime.TEXT.value}


def safe_url(url: str) -> str:
    """`url` without user, password, query or fragment: where credentials hide in a URL."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "[unparsable URL]"
    host = f"[{host}]" if ":" in host else host
    return urlunsplit((parts.scheme, f"{host}{port}", parts.path.rstrip("/"), "", ""))


def _message(prefix: str, message: ChatMessage) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        f"{prefix}.{MA.MESSAGE_ROLE}": message.role,
        f"{prefix}.{MA.MESSAGE_CONTENT}": message.content,
    }
    if message.name:
        attributes[f"{prefix}.{MA.MESSAGE_NAME}"] = message.name
    if message.tool_call_id:
        attributes[f"{prefix}.{MA.MESSAGE_TOOL_CALL_ID}"] = message.tool_call_id
    for index, call in enumerate(message.tool_calls):
        at = f"{prefix}.{MA.MESSAGE_TOOL_CALLS}.{index}"
        attributes[f"{at}.{TCA.TOOL_CALL_ID}"] = call.id
        attributes[f"{at}.{TCA.TOOL_CALL_FUNCTION_NAME}"] = call.name
        attributes[f"{at}.{TCA.TOOL_CALL_FUNCTION_ARGUMENTS_JSON}"] = json.dumps(
            call.args, default=str
        )
    return attributes


def _usage(prefix: str, usage: Usage) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        f"{prefix}.prompt": usage.prompt_tokens,
        f"{prefix}.completion": usage.completion_tokens,
        f"{prefix}.total": usage.total_tokens,
    }
    if usage.cost_usd is not None:
        attributes[f"{prefix.rsplit('.', 1)[0]}.cost_usd"] = usage.cost_usd
    return attributes


def _provider(llm: Any) -> str:
    """The provider: the catalog's name of an adapter, else by class (`ScriptedLLM`: "scripted")."""
    declared = getattr(llm, "provider", None)
    if isinstance(declared, str) and declared:
        return declared
    cataloged = provider_of(llm)
    if cataloged is not None:
        return cataloged
    name = type(llm).__name__
    return (name[:-3] if name.endswith("LLM") and len(name) > 3 else name).lower()


def _agent_name(spec: Mapping[str, Any] | None, runner: Any) -> str:
    if spec and isinstance(spec.get("name"), str) and spec["name"]:
        return spec["name"]
    worker = getattr(runner, "agent_worker", None)
    return type(worker).__name__ if worker is not None else "agent"
