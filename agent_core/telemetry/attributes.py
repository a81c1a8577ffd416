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

from openinference.semconv.trace import ImageAttributes as IA
from openinference.semconv.trace import MessageAttributes as MA
from openinference.semconv.trace import MessageContentAttributes as MCA
from openinference.semconv.trace import OpenInferenceMimeTypeValues as Mime
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kinds
from openinference.semconv.trace import SpanAttributes as SA
from openinference.semconv.trace import ToolAttributes as TA
from openinference.semconv.trace import ToolCallAttributes as TCA

from agent_core.effects import current_step
from agent_core.llms.catalog import provider_of
from agent_core.llms.content import ImagePart
from agent_core.redaction import safe_url
from agent_core.telemetry import session
from agent_core.types import StepKind, StepStatus

if TYPE_CHECKING:
    from agent_core.llms.base import ChatMessage, ChatResponse, ToolSpec, Usage
    from agent_core.types import Task, TaskState, TaskStep, TaskStepOutput, ToolOutput

__all__ = [
    "GEN_AI_OPERATION",
    "MAX_IMAGE_URL_CHARS",
    "PROPOSED_INPUT",
    "TASK_ID",
    "agent_name",
    "chat_request",
    "chat_response",
    "delegated_agent",
    "error_attributes",
    "step_end",
    "step_fields",
    "step_label",
    "step_span_name",
    "step_start",
    "task_end",
    "task_fields",
    "task_start",
    "tool_request",
    "tool_result",
]

TASK_ID = "stepwise.task.id"
PROPOSED_INPUT = "stepwise.step.proposed_input"
"""The input the agent proposed for a step a person edited (content: captured only)."""
GEN_AI_OPERATION = "gen_ai.operation.name"
MAX_IMAGE_URL_CHARS = 256 * 1024
"""An image larger than this (as base64) is named in a span, not shipped in it."""
_DEFAULT_SPEC_NAME = "agent"
_INVOCATION_PARAMETERS = ("temperature", "max_tokens", "top_p")
"""The LLM settings exported, by name: an allow-list, so no credential can slip in."""


def task_fields(task: Task) -> dict[str, Any]:
    """What every span of a task carries: its id, and the session (its conversation thread)."""
    attributes: dict[str, Any] = {
        SA.SESSION_ID: getattr(task, "thread_id", "") or task.task_id,
        TASK_ID: task.task_id,
    }
    fields = session.current()
    if fields is not None:
        if fields.session_id is not None:
            attributes[SA.SESSION_ID] = fields.session_id
        if fields.user_id is not None:
            attributes[SA.USER_ID] = fields.user_id
        if fields.metadata is not None:
            attributes[SA.METADATA] = fields.metadata
        if fields.tags:
            attributes[SA.TAG_TAGS] = list(fields.tags)
    return attributes


def task_start(
    state: TaskState, runner: Any, *, capture: bool, within: TaskStep | None = None
) -> tuple[dict[str, Any], str]:
    """The attributes and the name of a task's AGENT span; `within`: the step it runs inside."""
    task = state.task
    agent = agent_name(task.spec, runner, within)
    attributes: dict[str, Any] = {
        SA.OPENINFERENCE_SPAN_KIND: Kinds.AGENT.value,
        **task_fields(task),
        SA.AGENT_NAME: agent,
        GEN_AI_OPERATION: "invoke_agent",
        "gen_ai.agent.name": agent,
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
    """The attributes a step's CHAIN span starts with: what ran, and what a person changed.

    An edited step carries the input the agent proposed beside the one that ran; a refused
    tool call carries the refusal (their text is content).
    """
    attributes: dict[str, Any] = {
        SA.OPENINFERENCE_SPAN_KIND: Kinds.CHAIN.value,
        **task_fields(state.task),
        **step_fields(step),
        "stepwise.step.attempt": step.attempts,
        "stepwise.step.edited": step.edited,
        "stepwise.step.rejected": step.rejection is not None,
    }
    if capture and step.input is not None:
        attributes.update(text_value(SA.INPUT_VALUE, step.input))
    if capture and step.edited and step.proposed_input is not None:
        attributes[PROPOSED_INPUT] = _as_text(step.proposed_input)
    if capture and step.rejection is not None:
        attributes["stepwise.step.rejection"] = step.rejection
    return attributes


def step_fields(step: TaskStep) -> dict[str, Any]:
    """Which step a span is about: id, kind, what it does, branch and number."""
    attributes: dict[str, Any] = {
        "stepwise.step.id": step.step_id,
        "stepwise.step.kind": step.kind.value,
        "stepwise.step.label": step_label(step),
        "stepwise.step.branch": step.branch_id,
    }
    if step.number is not None:
        attributes["stepwise.step.number"] = step.number
    return attributes


def step_label(step: TaskStep) -> str:
    """What a step does, in a few words: `llm`, `tool add`, `delegate code`, `llm agent`."""
    kind = step.kind.value
    if step.name:
        return f"{kind} {step.name}"
    if step.kind is StepKind.TOOL:
        tool = _called_tool(step.input)
        return f"{kind} {tool}" if tool else kind
    if step.kind is StepKind.DELEGATE:
        agent = delegated_agent(step)
        return f"{kind} {agent}" if agent else kind
    return kind


def step_span_name(
    step: TaskStep,
    number: int | None,
    *,
    rerun: bool = False,
    output: TaskStepOutput | None = None,
) -> str:
    """`step 3 · tool add`, `step 1 · llm → multiply`, with what sets the row apart.

    The marks: re-run (of an undone step), edited, rejected, skipped. With `output`, a model
    step says what it led to: the tools it called, or its answer.
    """
    marks = [
        mark
        for mark, on in (
            ("re-run", rerun),
            ("edited", step.edited),
            ("rejected", step.rejection is not None),
            ("skipped", step.status is StepStatus.SKIPPED),
        )
        if on
    ]
    head = f"step {number}" if number is not None else "step"
    label = step_label(step)
    outcome = _outcome(output) if output is not None and step.kind is not StepKind.TOOL else ""
    return " · ".join((head, f"{label} → {outcome}" if outcome else label, *marks))


def _outcome(output: TaskStepOutput) -> str:
    """The tools a step called, or queued to be approved, or `answer` for a last step."""
    called = [call.tool_name for call in output.tool_calls]
    queued = [_called_tool(step.input) for step in output.next_steps if step.kind is StepKind.TOOL]
    names = list(dict.fromkeys(name for name in (*called, *queued) if name))
    if names:
        return ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
    return "answer" if output.is_last else ""


def delegated_agent(step: TaskStep) -> str | None:
    """The sub-agent a planner's delegate step hands its work to, as a person may have edited."""
    agent = step.input.get("agent") if isinstance(step.input, Mapping) else None
    agent = agent or step.step_state.get("agent")
    return agent.strip() or None if isinstance(agent, str) else None


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
        GEN_AI_OPERATION: "chat",
        "gen_ai.request.model": str(llm.model),
        "gen_ai.provider.name": provider,
    }
    for name, value in parameters.items():
        attributes[f"gen_ai.request.{name}"] = value
    base_url = getattr(llm, "base_url", None)
    if isinstance(base_url, str) and base_url:
        attributes["stepwise.llm.base_url"] = safe_url(base_url)
    if capture:
        attributes.update(text_value(SA.INPUT_VALUE, [_brief(m) for m in messages]))
        for index, message in enumerate(messages):
            attributes.update(_message(f"{SA.LLM_INPUT_MESSAGES}.{index}", message))
        for index, spec in enumerate(tools or ()):
            attributes[f"{SA.LLM_TOOLS}.{index}.{TA.TOOL_JSON_SCHEMA}"] = json.dumps(
                {"type": "function", "function": spec.model_dump()}, default=str
            )
    return attributes


def chat_response(response: ChatResponse, *, capture: bool) -> dict[str, Any]:
    """What an LLM span learns from the reply: the model that answered, tokens, the reply.

    The finish reason and the cached and reasoning token counts are added when the model's
    adapter reports them (`finish_reason` on the reply, `cached_tokens` and
    `reasoning_tokens` on its usage).
    """
    usage = response.usage
    attributes: dict[str, Any] = {
        SA.LLM_TOKEN_COUNT_PROMPT: usage.prompt_tokens,
        SA.LLM_TOKEN_COUNT_COMPLETION: usage.completion_tokens,
        SA.LLM_TOKEN_COUNT_TOTAL: usage.total_tokens,
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "stepwise.llm.tool_calls": len(response.tool_calls),
        "stepwise.llm.tokens_estimated": usage.estimated,
    }
    attributes.update(_reported_details(response))
    if response.model:
        attributes[SA.LLM_MODEL_NAME] = response.model
        attributes[SA.LLM_RESPONSE_MODEL_NAME] = response.model
        attributes["gen_ai.response.model"] = response.model
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
        GEN_AI_OPERATION: "execute_tool",
        "gen_ai.tool.name": tool.name,
        "stepwise.step.id": call.get("step_id", ""),
    }
    step = current_step()  # The call itself does not carry its task.
    if step is not None:
        attributes[SA.SESSION_ID] = attributes[TASK_ID] = step.task_id
    metadata = getattr(tool, "metadata", None)
    description = getattr(metadata, "description", "")
    if description:
        attributes[SA.TOOL_DESCRIPTION] = attributes["gen_ai.tool.description"] = description
    if call.get("call_id"):
        attributes[TCA.TOOL_CALL_ID] = attributes["gen_ai.tool.call.id"] = call["call_id"]
    if capture:
        attributes.update(text_value(SA.INPUT_VALUE, dict(args)))
        attributes["gen_ai.tool.call.arguments"] = json.dumps(dict(args), default=str)
        schema = _tool_parameters(tool)
        if schema is not None:
            attributes[SA.TOOL_PARAMETERS] = schema
    return attributes


def tool_result(result: ToolOutput, *, capture: bool) -> dict[str, Any]:
    """What a TOOL span learns from the result: whether it failed or was refused, the output."""
    attributes: dict[str, Any] = {
        "stepwise.tool.is_error": result.is_error,
        "stepwise.tool.rejected": result.rejected,
    }
    if capture:
        attributes.update(text_value(SA.OUTPUT_VALUE, result.content))
        attributes["gen_ai.tool.call.result"] = result.content
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


def _message(prefix: str, message: ChatMessage) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        f"{prefix}.{MA.MESSAGE_ROLE}": message.role,
        f"{prefix}.{MA.MESSAGE_CONTENT}": message.content,
    }
    if message.parts:
        attributes.update(_contents(f"{prefix}.{MA.MESSAGE_CONTENTS}", message))
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


def _contents(prefix: str, message: ChatMessage) -> dict[str, Any]:
    """A message's parts in order, OpenInference's way: text, or an image as a data URL."""
    attributes: dict[str, Any] = {}
    for index, part in enumerate(message.parts):
        at = f"{prefix}.{index}"
        if isinstance(part, ImagePart) and len(part.data) <= MAX_IMAGE_URL_CHARS:
            attributes[f"{at}.{MCA.MESSAGE_CONTENT_TYPE}"] = "image"
            url = f"data:{part.mime_type};base64,{part.data}"
            attributes[f"{at}.{MCA.MESSAGE_CONTENT_IMAGE}.{IA.IMAGE_URL}"] = url
        elif isinstance(part, ImagePart):  # Too large to ship in every span that shows it.
            attributes[f"{at}.{MCA.MESSAGE_CONTENT_TYPE}"] = "text"
            attributes[f"{at}.{MCA.MESSAGE_CONTENT_TEXT}"] = (
                f"[{part.mime_type} image of {part.size:,} bytes, over the span's bound]"
            )
        else:
            attributes[f"{at}.{MCA.MESSAGE_CONTENT_TYPE}"] = "text"
            attributes[f"{at}.{MCA.MESSAGE_CONTENT_TEXT}"] = str(part)
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


def agent_name(spec: Mapping[str, Any] | None, runner: Any, within: TaskStep | None = None) -> str:
    """The agent's name: a planner's sub-agent by its role, else the spec's, else the worker's.

    The form's spec keeps the default name `agent`, which tells tasks apart from nothing: then
    the user's own agent by its registered name, else the worker kind and the model.
    """
    if within is not None and within.kind is StepKind.DELEGATE:
        delegated = delegated_agent(within)
        if delegated:
            return delegated
    if spec:
        name = spec.get("name")
        if isinstance(name, str) and name and name != _DEFAULT_SPEC_NAME:
            return name
        if isinstance(spec.get("agent"), str) and spec["agent"]:
            return spec["agent"]
        worker, model = spec.get("worker"), spec.get("model") or spec.get("provider")
        if isinstance(worker, str) and worker:
            return f"{worker} · {model}" if isinstance(model, str) and model else worker
    worker = getattr(runner, "agent_worker", None)
    return type(worker).__name__ if worker is not None else _DEFAULT_SPEC_NAME


def _called_tool(value: Any) -> str | None:
    """The tool a tool step's input calls (`{"tool": name, "args": {...}}`), if well formed."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    tool = value.get("tool") if isinstance(value, Mapping) else None
    return tool if isinstance(tool, str) and tool else None


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _brief(message: ChatMessage) -> dict[str, Any]:
    """A message as `input.value` shows it: role, text, tool calls; images by type only."""
    brief: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        brief["tool_calls"] = [{"name": c.name, "arguments": c.args} for c in message.tool_calls]
    if message.images:
        brief["images"] = [image.mime_type for image in message.images]
    return brief


def _reported_details(response: ChatResponse) -> dict[str, Any]:
    """Finish reason, cached and reasoning tokens: each only when the adapter reported it."""
    attributes: dict[str, Any] = {}
    reason = getattr(response, "finish_reason", None)
    if isinstance(reason, str) and reason:
        attributes[SA.LLM_FINISH_REASON] = reason
        attributes["gen_ai.response.finish_reasons"] = [reason]
    usage = response.usage
    cached = getattr(usage, "cached_tokens", None)
    if isinstance(cached, int):
        attributes[SA.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_READ] = cached
        attributes["gen_ai.usage.cache_read.input_tokens"] = cached
    reasoning = getattr(usage, "reasoning_tokens", None)
    if isinstance(reasoning, int):
        attributes[SA.LLM_TOKEN_COUNT_COMPLETION_DETAILS_REASONING] = reasoning
        attributes["gen_ai.usage.reasoning.output_tokens"] = reasoning
    return attributes


def _tool_parameters(tool: Any) -> str | None:
    """The JSON schema of a tool's arguments (OpenInference `tool.parameters`)."""
    metadata = getattr(tool, "metadata", None)
    to_spec = getattr(metadata, "to_spec", None)
    if to_spec is None:
        return None
    try:
        return json.dumps(to_spec().parameters, default=str)
    except Exception:  # A schema that cannot be built costs the span one attribute, no more.
        return None
