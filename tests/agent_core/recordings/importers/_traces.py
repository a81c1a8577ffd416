"""Real traces for the importer tests: made here by the real instrumentations, as OTLP JSON.

Spans are captured with the OpenTelemetry SDK's in-memory exporter and encoded by the OTLP
exporter's own encoder (`encode_spans`, the protobuf body an OTLP/HTTP exporter sends), then
written as OTLP JSON with protobuf's `json_format`. OTLP JSON spells trace and span ids in hex
where protobuf's JSON mapping uses base64, so the ids are re-spelled, as a Collector writes them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["capture", "openinference_trace", "otlp_json", "otlp_lines", "pydantic_ai_trace"]

_IDS = ("traceId", "spanId", "parentSpanId")


@contextmanager
def capture() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A tracer provider whose finished spans land in the exporter it yields beside it."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        yield provider, exporter
    finally:
        provider.shutdown()


def otlp_json(spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> dict[str, Any]:
    """The spans as one OTLP JSON `ExportTraceServiceRequest`."""
    message = encode_spans(list(spans))
    document = json_format.MessageToDict(message, use_integers_for_enums=True)
    _hex_ids(document)
    return document


def otlp_lines(spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> bytes:
    """The spans as JSON lines, one request per span, as the Collector's file exporter writes."""
    return b"".join(json.dumps(otlp_json([span])).encode() + b"\n" for span in spans)


def _hex_ids(node: Any) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _IDS and isinstance(value, str) and value:
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)


def pydantic_ai_trace() -> tuple[ReadableSpan, ...]:
    """A pydantic-ai agent's run, instrumented by pydantic-ai, on a `FunctionModel`.

    The model calls `multiply(6, 7)`, then answers "The answer is 42.".
    """
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            call = ToolCallPart("multiply", {"a": 6, "b": 7}, tool_call_id="call-1")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("The answer is 42.")])

    with capture() as (provider, exporter):
        agent = Agent(FunctionModel(model), system_prompt="Use the tools.", name="calculator")
        # Per agent, not `Agent.instrument_all`: that would instrument every later test's agents.
        agent.instrument = InstrumentationSettings(tracer_provider=provider)

        @agent.tool_plain
        def multiply(a: int, b: int) -> int:
            """Multiply two numbers."""
            return a * b

        assert agent.run_sync("What is 6 times 7?").output == "The answer is 42."
        spans = exporter.get_finished_spans()
    assert [s.name for s in spans][-1] == "invoke_agent calculator", [s.name for s in spans]
    return spans


def openinference_trace(base_url: str) -> tuple[ReadableSpan, ...]:
    """An app's run traced with OpenInference: its OpenAI instrumentor on the OpenAI SDK.

    The app's own agent span (`AGENT`) and tool span (`TOOL`) are written with OpenInference's
    attribute names, as an app does by hand; the two model calls are the instrumentor's. The
    loopback server at `base_url` must answer a `multiply` call, then "The answer is 42.".
    """
    import openai
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes

    kind = SpanAttributes.OPENINFERENCE_SPAN_KIND
    tools = [_multiply_schema()]
    with capture() as (provider, exporter):
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        tracer = provider.get_tracer("my-app")
        try:
            client = openai.OpenAI(base_url=base_url, api_key="sk-loopback")
            with tracer.start_as_current_span("calculator") as agent:
                agent.set_attribute(kind, OpenInferenceSpanKindValues.AGENT.value)
                agent.set_attribute(SpanAttributes.INPUT_VALUE, "What is 6 times 7?")
                messages: list[dict[str, Any]] = [
                    {"role": "system", "content": "Use the tools."},
                    {"role": "user", "content": "What is 6 times 7?"},
                ]
                first = (
                    client.chat.completions.create(
                        model="loopback-model", messages=messages, tools=tools
                    )
                    .choices[0]
                    .message
                )
                call = first.tool_calls[0]
                with tracer.start_as_current_span("multiply") as tool:
                    tool.set_attribute(kind, OpenInferenceSpanKindValues.TOOL.value)
                    tool.set_attribute(SpanAttributes.TOOL_NAME, call.function.name)
                    tool.set_attribute(SpanAttributes.INPUT_VALUE, call.function.arguments)
                    tool.set_attribute(SpanAttributes.OUTPUT_VALUE, "42")
                messages += [
                    first.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": call.id, "content": "42"},
                ]
                answer = (
                    client.chat.completions.create(
                        model="loopback-model", messages=messages, tools=tools
                    )
                    .choices[0]
                    .message.content
                )
                agent.set_attribute(SpanAttributes.OUTPUT_VALUE, answer or "")
        finally:
            instrumentor.uninstrument()
        spans = exporter.get_finished_spans()
    assert [s.name for s in spans].count("ChatCompletion") == 2, [s.name for s in spans]
    return spans


def _multiply_schema() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": "multiply",
            "description": "Multiply two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    }
