"""OpenTelemetry spans: the seed question's span tree, what is and is not exported, and off."""

from __future__ import annotations

import gzip
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import ClassVar

import httpx
import openai
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agent_core import AgentRunner, telemetry
from agent_core.demos import SCENARIOS
from agent_core.errors import LLMError, StepError, UserError
from agent_core.llms import FunctionLLM, OpenAILLM, ScriptedLLM
from agent_core.telemetry import hooks as telemetry_hooks
from agent_core.tools import FunctionTool
from agent_core.workers import FunctionCallingAgentWorker, ReActAgentWorker

from .conftest import SEED_REPLIES, MakeAgent, action, answer

SEED = "What is (121 * 3) + 42?"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Spans of this test, in memory; tracing is off again afterwards."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.instrument(provider)
    yield exporter
    telemetry.uninstrument()


@pytest.fixture
def traced_with(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    """A provider to instrument with options of the test's choosing (content capture)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider


def by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name.startswith(prefix)]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent else None


def run_seed(agent: AgentRunner) -> str:
    task = agent.create_task(SEED)
    while not agent.run_step(task.task_id).is_last:
        pass
    agent.finalize_response(task.task_id)
    return task.task_id


def exported_text(spans: tuple[ReadableSpan, ...]) -> str:
    return "\n".join(span.to_json() for span in spans)


def string_values(spans: tuple[ReadableSpan, ...]) -> list[str]:
    """Every text attribute of every span and event, ids left out (hex can hold any digits)."""
    values = []
    for span in spans:
        for attributes in (span.attributes, *(event.attributes for event in span.events)):
            for key, value in (attributes or {}).items():
                if isinstance(value, str) and not key.endswith(".id"):
                    values.append(value)
    return values


# --- the span tree ---------------------------------------------------------------------------


def test_demo_seed_question_makes_one_task_span_with_steps_model_and_tool_calls(tmp_path, exporter):
    scenario = SCENARIOS["arithmetic"]
    spec = scenario.spec.model_copy(update={"workspace": str(tmp_path / "ws")})
    agent = spec.build_runner()
    task_id = run_seed(agent)
    spans = exporter.get_finished_spans()

    [task] = by_name(spans, "invoke_agent")
    [summary] = by_name(spans, "task finalized")
    steps = by_name(spans, "step ")
    chats = by_name(spans, "chat ")
    tools = by_name(spans, "execute_tool ")
    assert task.name == "invoke_agent demo-react"
    assert [s.name for s in steps] == [
        "step 1 · llm → multiply",
        "step 2 · llm → add",
        "step 3 · llm → answer",
    ]
    assert [s.name for s in tools] == ["execute_tool multiply", "execute_tool add"]
    assert len(chats) == 3 and len(spans) == 1 + 3 + 3 + 2 + 1
    assert {s.context.trace_id for s in spans} == {task.context.trace_id} == {int(task_id, 16)}
    assert task.parent is None
    assert {parent_of(s) for s in (*steps, summary)} == {task.context.span_id}
    step_ids = [s.context.span_id for s in steps]
    assert [parent_of(c) for c in chats] == step_ids
    assert [parent_of(t) for t in tools] == step_ids[:2]

    kinds = {s.name.split(" ")[0]: s.attributes["openinference.span.kind"] for s in spans}
    assert kinds == {
        "invoke_agent": "AGENT",
        "task": "AGENT",
        "step": "CHAIN",
        "chat": "LLM",
        "execute_tool": "TOOL",
    }
    assert {s.attributes["session.id"] for s in spans} == {task_id}
    assert all(s.status.status_code is StatusCode.OK for s in spans)


def test_step_and_model_spans_carry_numbers_status_and_the_token_counts_the_outputs_have(
    make_agent: MakeAgent, exporter
):
    agent, llm = make_agent()
    task_id = run_seed(agent)
    spans = exporter.get_finished_spans()
    outputs = agent.get_completed_steps(task_id)
    steps, chats = by_name(spans, "step "), by_name(spans, "chat ")

    for number, (span, output) in enumerate(zip(steps, outputs, strict=True), start=1):
        attributes = span.attributes
        assert attributes["stepwise.step.id"] == output.task_step.step_id
        assert attributes["stepwise.step.number"] == number
        assert attributes["stepwise.step.kind"] == "llm"
        assert attributes["stepwise.step.branch"] == "main"
        assert attributes["stepwise.step.status"] == "completed"
        assert attributes["stepwise.step.is_last"] is (number == 3)
        assert attributes["stepwise.step.tokens.prompt"] == output.usage.prompt_tokens > 0
        assert attributes["stepwise.step.tokens.completion"] == output.usage.completion_tokens
        assert "llm.token_count.total" not in attributes  # Phoenix would count them twice.
    for chat, output in zip(chats, outputs, strict=True):
        attributes = chat.attributes
        assert attributes["llm.model_name"] == "scripted"
        assert attributes["llm.provider"] == "scripted"
        assert json.loads(attributes["llm.invocation_parameters"]) == {"stream": False}
        assert attributes["llm.token_count.prompt"] == output.usage.prompt_tokens
        assert attributes["llm.token_count.completion"] == output.usage.completion_tokens
        assert attributes["llm.token_count.total"] == output.usage.total_tokens
        assert attributes["stepwise.step.id"] == output.task_step.step_id
    [task] = by_name(spans, "invoke_agent")
    [summary] = by_name(spans, "task finalized")
    total = agent.get_task(task_id).usage.total_tokens
    assert summary.attributes["stepwise.task.tokens.total"] == total > 0
    assert summary.attributes["stepwise.task.status"] == "completed"
    assert task.attributes["agent.name"] == "ReActAgentWorker"
    assert [t.attributes["tool.name"] for t in by_name(spans, "execute_tool")] == [
        "multiply",
        "add",
    ]
    assert llm.exhausted


def test_a_streamed_step_says_so_in_its_model_span(make_agent: MakeAgent, exporter):
    agent, _ = make_agent()
    task = agent.create_task(SEED)
    list(agent.stream_step(task.task_id))
    [chat] = by_name(exporter.get_finished_spans(), "chat ")
    assert json.loads(chat.attributes["llm.invocation_parameters"]) == {"stream": True}


# --- content -------------------------------------------------------------------------------


def test_no_prompt_reply_arguments_or_tool_output_leave_by_default(make_agent: MakeAgent, exporter):
    agent, _ = make_agent()
    run_seed(agent)
    spans = exporter.get_finished_spans()
    keys = {key for span in spans for key in span.attributes}
    assert not {k for k in keys if k.startswith(("input.", "output.", "llm.input_messages"))}
    assert not {k for k in keys if k.startswith("llm.output_messages")}
    text = "\n".join(string_values(spans))
    for content in ("121 * 3", "Thought", "Action", '"a": 121', "363", "405"):
        assert content not in text


def test_content_capture_exports_prompts_replies_arguments_and_outputs(
    make_agent: MakeAgent, exporter, traced_with
):
    telemetry.instrument(traced_with, capture_content=True)
    agent, _ = make_agent()
    run_seed(agent)
    spans = exporter.get_finished_spans()
    [task] = by_name(spans, "invoke_agent")
    [summary] = by_name(spans, "task finalized")
    first_chat = by_name(spans, "chat ")[0].attributes
    multiply = by_name(spans, "execute_tool multiply")[0].attributes

    assert task.attributes["input.value"] == SEED
    assert summary.attributes["output.value"] == "405"
    assert first_chat["llm.input_messages.0.message.role"] == "system"
    user = [k for k, v in first_chat.items() if v == "user" and k.endswith("message.role")]
    assert first_chat[user[0].replace("role", "content")] == SEED
    assert first_chat["llm.output_messages.0.message.content"] == SEED_REPLIES[0]
    assert json.loads(multiply["input.value"]) == {"a": 121, "b": 3}
    assert multiply["input.mime_type"] == "application/json"
    assert multiply["output.value"] == "363"


def test_the_environment_asks_for_content_too(
    make_agent: MakeAgent, exporter, traced_with, monkeypatch
):
    monkeypatch.setenv("STEPWISE_OTLP_CAPTURE_CONTENT", "1")
    telemetry.instrument(traced_with)
    agent, _ = make_agent()
    run_seed(agent)
    assert (
        by_name(exporter.get_finished_spans(), "invoke_agent")[0].attributes["input.value"] == SEED
    )


# --- events and errors -----------------------------------------------------------------------


def test_undo_and_feedback_are_spans_in_the_task_trace_and_the_rerun_is_marked(
    make_agent: MakeAgent, exporter
):
    agent, _ = make_agent([*SEED_REPLIES[:1], *SEED_REPLIES])
    task = agent.create_task(SEED)
    first = agent.run_step(task.task_id)
    agent.undo_step(task.task_id)
    agent.add_feedback(task.task_id, "Use multiply first.")
    while not agent.run_step(task.task_id).is_last:
        pass
    agent.finalize_response(task.task_id)
    spans = exporter.get_finished_spans()
    [task_span] = by_name(spans, "invoke_agent")
    assert {
        parent_of(s)
        for s in spans
        if s is not task_span and not s.name.startswith(("chat", "execute"))
    } == {task_span.context.span_id}

    names = [s.name for s in spans if s.name.startswith(("step", "undo", "task"))]
    assert names == [
        "step 1 · llm → multiply",
        "undo step 1 · llm → multiply",
        "step 1 · feedback",
        "step 2 · llm → multiply · re-run",
        "step 3 · llm → add",
        "step 4 · llm → answer",
        "task finalized",
    ]
    undo = by_name(spans, "undo step")[0]
    assert undo.attributes["stepwise.step.id"] == first.task_step.step_id
    assert undo.attributes["stepwise.step.undone"] is True
    [undone_link] = undo.links
    assert undone_link.context.span_id == by_name(spans, "step 1 · llm")[0].context.span_id
    feedback = by_name(spans, "step 1 · feedback")[0].attributes
    assert "input.value" not in feedback  # The feedback's text is content.
    rerun = by_name(spans, "step 2 · llm")[0]
    assert rerun.attributes["stepwise.step.rerun_of"] == first.task_step.step_id
    assert rerun.attributes["stepwise.step.branch"] != "main"
    assert by_name(spans, "step 1 · llm")[0].attributes["stepwise.step.branch"] == "main"


def test_abandon_ends_the_task_span_with_an_event(make_agent: MakeAgent, exporter):
    agent, _ = make_agent()
    task = agent.create_task(SEED)
    agent.run_step(task.task_id)
    agent.abandon_task(task.task_id)
    spans = exporter.get_finished_spans()
    [task_span] = by_name(spans, "invoke_agent")
    [summary] = by_name(spans, "task abandoned")
    assert parent_of(summary) == task_span.context.span_id
    assert summary.attributes["stepwise.task.status"] == "abandoned"
    assert summary.status.status_code is StatusCode.UNSET


def test_a_failing_tool_gives_its_span_an_error_status_and_the_step_goes_on(exporter):
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    llm = ScriptedLLM([action("divide", '{"a": 1, "b": 0}'), answer("cannot")])
    agent = AgentRunner(
        ReActAgentWorker.from_tools([FunctionTool.from_defaults(fn=divide)], llm=llm)
    )
    agent.chat("What is 1 / 0?")
    spans = exporter.get_finished_spans()
    [tool] = by_name(spans, "execute_tool divide")
    assert tool.status.status_code is StatusCode.ERROR
    assert "ZeroDivision" not in (tool.status.description or "")  # The message is content.
    assert tool.attributes["stepwise.tool.is_error"] is True
    assert by_name(spans, "step ")[0].status.status_code is StatusCode.OK


def test_a_failing_model_call_fails_its_span_and_its_step_span_without_the_message(
    make_agent: MakeAgent, exporter
):
    def refuse(messages, tools):
        raise LLMError("the model says: secret prompt text", status=503)

    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=FunctionLLM(refuse)))
    task = agent.create_task(SEED)
    with pytest.raises(StepError):
        agent.run_step(task.task_id)
    spans = exporter.get_finished_spans()
    [chat] = by_name(spans, "chat ")
    [step] = by_name(spans, "step ")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes["error.type"] == "LLMError"
    assert chat.attributes["http.response.status_code"] == 503
    assert step.status.status_code is StatusCode.ERROR
    assert step.attributes["stepwise.step.status"] == "failed"
    assert "secret prompt text" not in exported_text(spans)
    assert len(by_name(spans, "invoke_agent")) == 1  # The open task is there already.
    agent.abandon_task(task.task_id)
    spans = exporter.get_finished_spans()
    assert len(by_name(spans, "invoke_agent")) == 1 and len(by_name(spans, "task abandoned")) == 1


# --- off ---------------------------------------------------------------------------------------


def test_nothing_is_emitted_when_not_instrumented(make_agent: MakeAgent, exporter):
    telemetry.uninstrument()
    agent, _ = make_agent()
    run_seed(agent)
    assert not telemetry.is_instrumented()
    assert telemetry_hooks.tracing is None
    assert exporter.get_finished_spans() == ()


def test_instrument_refuses_a_provider_and_an_endpoint_together_or_a_bad_endpoint(traced_with):
    with pytest.raises(UserError, match="not both"):
        telemetry.instrument(traced_with, endpoint="http://127.0.0.1:4318")
    with pytest.raises(UserError, match="http"):
        telemetry.instrument(endpoint="localhost:4318")


# --- keys --------------------------------------------------------------------------------------


ENV_KEY = "sk-env-Zq8wX3vB7nM2kL9pR4tY"
GIVEN_KEY = "sk-given-Hj5fD1sA6gK0lP3oI8uT"


def _openai_reply(request: httpx.Request) -> httpx.Response:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "405"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 87, "completion_tokens": 2, "total_tokens": 89},
    }
    return httpx.Response(200, json=body)


@pytest.mark.parametrize("capture", [False, True])
def test_no_key_and_no_url_credentials_reach_any_span(monkeypatch, exporter, traced_with, capture):
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    telemetry.instrument(traced_with, capture_content=capture)
    url = "http://alice:hunter2@127.0.0.1:9/v1?api-key=QueryKey77"
    for key in (ENV_KEY, GIVEN_KEY):
        client = openai.AsyncOpenAI(
            api_key=key,
            base_url=url,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(_openai_reply)),  # pyright: ignore[reportArgumentType]
        )
        llm = OpenAILLM(client=client, temperature=0.2)
        agent = AgentRunner(FunctionCallingAgentWorker([], llm))
        assert str(agent.chat(SEED)) == "405"
    spans = exporter.get_finished_spans()
    text = exported_text(spans)
    for secret in (ENV_KEY, GIVEN_KEY, "hunter2", "alice", "QueryKey77"):
        assert secret not in text
    chat = by_name(spans, "chat ")[0].attributes
    assert chat["stepwise.llm.base_url"] == "http://127.0.0.1:9/v1"
    assert chat["llm.provider"] == "openai"
    assert chat["llm.model_name"] == "gpt-4o-mini-2024-07-18"
    assert json.loads(chat["llm.invocation_parameters"]) == {"temperature": 0.2, "stream": False}
    assert chat["llm.token_count.total"] == 89


# --- threads and the runtime hop -------------------------------------------------------------


def test_steps_from_many_threads_each_nest_under_their_own_task_and_link_to_the_caller(
    make_agent: MakeAgent, exporter
):
    tracer = TracerProvider().get_tracer("caller")
    agents = [make_agent()[0] for _ in range(4)]
    tasks = [agent.create_task(SEED) for agent in agents]
    callers: dict[str, int] = {}
    errors: list[BaseException] = []

    def drive(agent: AgentRunner, task_id: str) -> None:
        try:
            with tracer.start_as_current_span("request") as request:
                callers[task_id] = request.get_span_context().span_id
                while not agent.run_step(task_id).is_last:
                    pass
            agent.finalize_response(task_id)
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=drive, args=(a, t.task_id))
        for a, t in zip(agents, tasks, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    spans = exporter.get_finished_spans()
    task_spans = {s.attributes["session.id"]: s for s in by_name(spans, "invoke_agent")}
    assert len(task_spans) == 4
    step_spans = {s.context.span_id: s for s in by_name(spans, "step ")}
    assert len(step_spans) == 12
    for step in step_spans.values():
        task_span = task_spans[step.attributes["session.id"]]
        assert parent_of(step) == task_span.context.span_id
        [link] = step.links
        assert link.context.span_id == callers[step.attributes["session.id"]]
    for child in (*by_name(spans, "chat "), *by_name(spans, "execute_tool ")):
        step = step_spans[parent_of(child)]
        assert child.attributes["session.id"] == step.attributes["session.id"]
        assert child.attributes["stepwise.step.id"] == step.attributes["stepwise.step.id"]


# --- the environment variable, over real HTTP ------------------------------------------------


class _Collector(http.server.BaseHTTPRequestHandler):
    posts: ClassVar[list[tuple[str, str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.posts.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    posts: list[tuple[str, str, bytes]] = []
    handler = type("Collector", (_Collector,), {"posts": posts})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", posts
    server.shutdown()
    server.server_close()


def test_the_endpoint_variable_sends_the_spans_to_an_otlp_collector(
    make_agent: MakeAgent, monkeypatch, collector
):
    url, posts = collector
    monkeypatch.setenv("STEPWISE_OTLP_ENDPOINT", url)
    monkeypatch.setattr(telemetry_hooks, "tracing", telemetry_hooks.UNRESOLVED)
    try:
        agent, _ = make_agent()
        task_id = run_seed(agent)
        assert telemetry.is_instrumented()
        tracing = telemetry_hooks.tracing
        assert tracing is not None and not isinstance(tracing, telemetry_hooks._Unresolved)
        assert tracing.provider.force_flush(10_000)
    finally:
        telemetry.uninstrument()
    assert posts and {(path, kind) for path, kind, _ in posts} == {
        ("/v1/traces", "application/x-protobuf")
    }
    names, sessions = [], set()
    for _, _, body in posts:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}
            assert service["service.name"] == "stepwise"
            for scope in resource.scope_spans:
                for span in scope.spans:
                    names.append(span.name)
                    attributes = {a.key: a.value.string_value for a in span.attributes}
                    sessions.add(attributes["session.id"])
    assert sorted(names) == sorted(
        [
            "invoke_agent ReActAgentWorker",
            "step 1 · llm → multiply",
            "step 2 · llm → add",
            "step 3 · llm → answer",
            *["chat scripted"] * 3,
            "execute_tool multiply",
            "execute_tool add",
            "task finalized",
        ]
    )
    assert sessions == {task_id}


_OFF_RUN = """
import sys
from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker

def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

replies = ['Thought: t\\nAction: add\\nAction Input: {"a": 1, "b": 2}', 'Thought: t\\nAnswer: 3']
worker = ReActAgentWorker.from_tools([FunctionTool.from_defaults(fn=add)], llm=ScriptedLLM(replies))
assert str(AgentRunner(worker).chat("What is 1 + 2?")) == "3"
print(sorted(m for m in sys.modules if m.startswith(("opentelemetry", "openinference"))))
"""


def test_off_by_default_a_run_does_not_even_import_opentelemetry(monkeypatch):
    monkeypatch.delenv("STEPWISE_OTLP_ENDPOINT", raising=False)
    done = subprocess.run(
        [sys.executable, "-c", _OFF_RUN], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
