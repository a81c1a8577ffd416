"""Traces as a collector receives them: the real OTLP/HTTP exporter, a receiver on loopback.

The receiver decodes each `ExportTraceServiceRequest` with opentelemetry-proto, as Phoenix
does; the tests assert the tree a person debugging a task sees there (issue 22, item 9).
"""

from __future__ import annotations

import base64
import gzip
import http.server
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from agent_core import AgentRunner, telemetry
from agent_core.llms import ChatMessage, ChatResponse, FunctionLLM, OpenAILLM, ScriptedLLM
from agent_core.llms.base import Usage
from agent_core.store import SQLiteStore
from agent_core.telemetry import attributes
from agent_core.telemetry import hooks as telemetry_hooks
from agent_core.tools import FunctionTool
from agent_core.workers import FunctionCallingAgentWorker, ReActAgentWorker
from agent_core.workers.multimodal_react import MultimodalReActAgentWorker

from .conftest import SEED_REPLIES, action, add, answer, multiply

SEED = "What is (121 * 3) + 42?"
PNG = b"\x89PNG\r\n\x1a\n"


# --- the collector -----------------------------------------------------------------------------


@dataclass
class Span:
    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    attributes: dict[str, Any]
    links: list[tuple[int, int]]


@dataclass
class Collector:
    url: str
    bodies: list[bytes] = field(default_factory=list)

    def spans(self) -> list[Span]:
        """Every span received so far, in the order they were sent."""
        found = []
        for body in list(self.bodies):
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    found.extend(_span(s) for s in scope.spans)
        return found

    def named(self, prefix: str) -> list[Span]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def raw(self) -> bytes:
        return b"".join(self.bodies)


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def _span(span: Any) -> Span:
    return Span(
        name=span.name,
        trace_id=int.from_bytes(span.trace_id),
        span_id=int.from_bytes(span.span_id),
        parent_id=int.from_bytes(span.parent_span_id) if span.parent_span_id else None,
        attributes={a.key: _value(a.value) for a in span.attributes},
        links=[(int.from_bytes(k.trace_id), int.from_bytes(k.span_id)) for k in span.links],
    )


def _handler(bodies: list[bytes]) -> type[http.server.BaseHTTPRequestHandler]:
    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            assert self.path == "/v1/traces"
            bodies.append(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    return Receiver


@pytest.fixture
def collector() -> Iterator[Collector]:
    bodies: list[bytes] = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(bodies))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Collector(f"http://127.0.0.1:{server.server_address[1]}", bodies)
    telemetry.uninstrument()
    server.shutdown()
    server.server_close()


def traced(collector: Collector, *, capture: bool = False) -> None:
    """Send spans to the collector through the real OTLP exporter, as the endpoint setting does."""
    telemetry.instrument(endpoint=collector.url, capture_content=capture)


def flush() -> None:
    tracing = telemetry_hooks.tracing
    assert tracing is not None and not isinstance(tracing, telemetry_hooks._Unresolved)
    assert tracing.provider.force_flush(10_000)  # type: ignore[attr-defined]


def seed_agent(replies=SEED_REPLIES, **kwargs: Any) -> AgentRunner:
    tools = [FunctionTool.from_defaults(fn=multiply), FunctionTool.from_defaults(fn=add)]
    worker = ReActAgentWorker.from_tools(tools, llm=ScriptedLLM(list(replies)), **kwargs)
    return AgentRunner(worker)


# --- one trace per task, while it is open ------------------------------------------------------


def test_an_open_task_is_one_trace_under_its_root_and_a_restart_continues_it(collector, tmp_path):
    traced(collector)
    tools = [FunctionTool.from_defaults(fn=multiply), FunctionTool.from_defaults(fn=add)]
    store = SQLiteStore(tmp_path / "tasks.db")
    first = AgentRunner(
        ReActAgentWorker.from_tools(tools, llm=ScriptedLLM(SEED_REPLIES[:2])), store=store
    )
    task_id = first.create_task(SEED).task_id
    first.run_step(task_id)
    first.run_step(task_id)
    flush()  # The task is still open: no finalize, no abandon, no exit.

    [root] = collector.named("invoke_agent")
    assert root.parent_id is None and root.trace_id == int(task_id, 16)
    steps = collector.named("step ")
    assert [s.name for s in steps] == ["step 1 · llm → multiply", "step 2 · llm → add"]
    assert {s.parent_id for s in steps} == {root.span_id}
    step_ids = {s.span_id for s in steps}
    for child in (*collector.named("chat "), *collector.named("execute_tool ")):
        assert child.parent_id in step_ids
    assert {s.trace_id for s in collector.spans()} == {root.trace_id}
    assert not collector.named("task ")

    # Another process (a restart): new tracing, a new runner reading the task from the store.
    telemetry.uninstrument()
    collector.bodies.clear()
    traced(collector)
    again = AgentRunner(
        ReActAgentWorker.from_tools(tools, llm=ScriptedLLM(SEED_REPLIES[2:])),
        store=SQLiteStore(tmp_path / "tasks.db"),
    )
    assert again.run_step(task_id).is_last
    again.finalize_response(task_id)
    flush()
    [resent] = collector.named("invoke_agent")
    assert (resent.trace_id, resent.span_id) == (root.trace_id, root.span_id)
    [step3] = collector.named("step ")
    [summary] = collector.named("task finalized")
    assert step3.name == "step 3 · llm → answer"
    assert step3.parent_id == summary.parent_id == root.span_id
    assert step3.trace_id == summary.trace_id == root.trace_id
    assert summary.attributes["stepwise.task.status"] == "completed"


def test_a_task_asked_for_inside_your_own_span_is_its_own_trace_linked_to_it(collector):
    from opentelemetry import trace

    traced(collector)
    agent = seed_agent()
    yours = trace.SpanContext(7, 9, is_remote=True, trace_flags=trace.TraceFlags(1))
    with trace.use_span(trace.NonRecordingSpan(yours)):  # An HTTP request's span, say.
        task_id = agent.create_task(SEED).task_id
        agent.run_step(task_id)
    flush()
    [root] = collector.named("invoke_agent")
    [step] = collector.named("step ")
    assert root.parent_id is None and root.trace_id == int(task_id, 16)
    assert root.links == [(7, 9)] and step.links == [(7, 9)]


def test_spans_arrive_after_the_batch_delay_which_the_environment_shortens(collector, monkeypatch):
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    traced(collector)
    agent = seed_agent()
    agent.run_step(agent.create_task(SEED).task_id)
    deadline = time.monotonic() + 3  # The default delay is 5 s: only the setting is this quick.
    while not collector.named("step ") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [s.name for s in collector.named("step ")] == ["step 1 · llm → multiply"]


# --- undone, re-run, edited, rejected, skipped --------------------------------------------------


def test_undo_is_a_span_marking_the_step_and_its_rerun_is_told_apart(collector):
    traced(collector)
    agent = seed_agent([*SEED_REPLIES[:2], *SEED_REPLIES])
    task_id = agent.create_task(SEED).task_id
    agent.run_step(task_id)
    agent.run_step(task_id)
    agent.undo_step(task_id, steps=2)  # Both steps, in one undo.
    agent.run_step(task_id)
    flush()

    names = [s.name for s in collector.spans() if s.name.startswith(("step", "undo"))]
    assert names == [
        "step 1 · llm → multiply",
        "step 2 · llm → add",
        "undo step 2 · llm → add",
        "undo step 1 · llm → multiply",
        "step 1 · llm → multiply · re-run",
    ]
    first, second, undo2, undo1, rerun = (
        s for s in collector.spans() if s.name.startswith(("step", "undo"))
    )
    assert undo1.attributes["stepwise.step.undone"] is True
    assert undo2.attributes["stepwise.step.undone"] is True
    assert undo1.links == [(first.trace_id, first.span_id)]
    assert undo2.links == [(second.trace_id, second.span_id)]
    assert rerun.attributes["stepwise.step.rerun_of"] == first.attributes["stepwise.step.id"]
    assert rerun.attributes["stepwise.step.id"] != first.attributes["stepwise.step.id"]
    assert rerun.links == [(first.trace_id, first.span_id)]  # The step it runs again.


def test_edited_rejected_and_skipped_tool_calls_each_say_so(collector):
    traced(collector, capture=True)
    replies = [
        action("multiply", '{"a": 121, "b": 3}'),
        action("add", '{"a": 363, "b": 42}'),
        action("add", '{"a": 1, "b": 2}'),
        answer("405"),
    ]
    agent = seed_agent(replies, tool_approval=True)
    task_id = agent.create_task(SEED).task_id
    agent.run_step(task_id)
    held = agent.get_upcoming_steps(task_id)[0]
    agent.run_step(task_id, {**held.input, "args": {"a": 121, "b": 4}}, step_id=held.step_id)
    agent.run_step(task_id)
    agent.reject_step(task_id, message="not add")
    agent.run_step(task_id)
    agent.skip_step(task_id, agent.get_upcoming_steps(task_id)[0].step_id)
    flush()

    by_name = {s.name: s for s in collector.named("step ")}
    assert list(by_name) == [
        "step 1 · llm → multiply",
        "step 2 · tool multiply · edited",
        "step 3 · llm → add",
        "step 4 · tool add · rejected",
        "step 5 · llm → add",
        "step 6 · tool add · skipped",
    ]
    edited = by_name["step 2 · tool multiply · edited"].attributes
    assert edited["stepwise.step.edited"] is True
    assert json.loads(edited["input.value"])["args"] == {"a": 121, "b": 4}
    assert json.loads(edited["stepwise.step.proposed_input"])["args"] == {"a": 121, "b": 3}
    rejected = by_name["step 4 · tool add · rejected"].attributes
    assert rejected["stepwise.step.rejected"] is True
    assert rejected["stepwise.step.rejection"] == "not add"
    skipped = by_name["step 6 · tool add · skipped"].attributes
    assert skipped["stepwise.event"] == "step_skipped"
    assert skipped["stepwise.step.kind"] == "tool"


# --- names of agents ----------------------------------------------------------------------------


def test_planner_sub_agents_are_named_by_role_inside_the_delegate_step(collector, tmp_path):
    from agent_core.demos import SCENARIOS

    traced(collector)
    spec = SCENARIOS["haiku"].spec.model_copy(update={"workspace": str(tmp_path / "ws")})
    agent = spec.build_runner()
    task_id = agent.create_task(SCENARIOS["haiku"].task).task_id
    for _ in range(4):
        if agent.run_step(task_id).is_last:
            break
    flush()
    spans = collector.spans()
    [root] = [s for s in spans if s.name == "invoke_agent demo-planner"]
    delegates = {s.span_id: s for s in spans if " · delegate " in s.name}
    assert delegates
    subs = [s for s in spans if s.name.startswith("invoke_agent") and s is not root]
    assert subs and {s.name for s in subs} <= {
        "invoke_agent code",
        "invoke_agent file",
        "invoke_agent image",
    }
    for sub in subs:
        assert sub.parent_id in delegates and sub.trace_id == root.trace_id
        step_name = delegates[sub.parent_id].name
        assert step_name.split(" · delegate ")[1].split(" ")[0] == sub.name.split(" ")[1]


def test_a_form_task_names_the_worker_and_model_when_the_spec_keeps_the_default_name():
    spec = {"name": "agent", "worker": "react", "provider": "openai", "model": "gpt-4o-mini"}
    assert attributes.agent_name(spec, None) == "react · gpt-4o-mini"
    assert attributes.agent_name({**spec, "model": ""}, None) == "react · openai"
    assert attributes.agent_name({**spec, "agent": "support_bot"}, None) == "support_bot"
    assert attributes.agent_name({**spec, "name": "triage"}, None) == "triage"


# --- attributes Phoenix and the gen_ai conventions read ----------------------------------------


def test_model_and_tool_spans_carry_openinference_and_gen_ai_attributes(collector):
    traced(collector, capture=True)
    agent = seed_agent()
    task_id = agent.create_task(SEED).task_id
    agent.run_step(task_id)
    flush()
    [chat] = collector.named("chat ")
    [tool] = collector.named("execute_tool ")

    c = chat.attributes
    assert c["gen_ai.operation.name"] == "chat"
    assert c["gen_ai.request.model"] == c["llm.model_name"] == "scripted"
    assert c["gen_ai.provider.name"] == "scripted"
    assert c["gen_ai.usage.input_tokens"] == c["llm.token_count.prompt"] > 0
    assert c["gen_ai.usage.output_tokens"] == c["llm.token_count.completion"] > 0
    sent = json.loads(c["input.value"])
    assert c["input.mime_type"] == "application/json"
    assert sent[0]["role"] == "system" and sent[-1] == {"role": "user", "content": SEED}

    t = tool.attributes
    assert t["gen_ai.operation.name"] == "execute_tool"
    assert t["gen_ai.tool.name"] == t["tool.name"] == "multiply"
    assert json.loads(t["gen_ai.tool.call.arguments"]) == {"a": 121, "b": 3}
    schema = json.loads(t["tool.parameters"])
    assert set(schema["properties"]) == {"a", "b"} and schema["required"] == ["a", "b"]
    assert t["gen_ai.tool.call.result"] == "363"


def test_finish_reason_cached_and_reasoning_tokens_are_exported_when_reported():
    class Reported(ChatResponse):
        finish_reason: str = "length"

    class ReportedUsage(Usage):
        cached_tokens: int = 64
        reasoning_tokens: int = 12

    plain = attributes.chat_response(
        ChatResponse(message=ChatMessage(role="assistant", content="hi")), capture=False
    )
    assert not {k for k in plain if "finish" in k or "cache" in k or "reasoning" in k}
    reported = attributes.chat_response(
        Reported(
            message=ChatMessage(role="assistant", content="hi"),
            usage=ReportedUsage(prompt_tokens=100, completion_tokens=20),
        ),
        capture=False,
    )
    assert reported["llm.finish_reason"] == "length"
    assert reported["gen_ai.response.finish_reasons"] == ["length"]
    assert reported["llm.token_count.prompt_details.cache_read"] == 64
    assert reported["gen_ai.usage.cache_read.input_tokens"] == 64
    assert reported["llm.token_count.completion_details.reasoning"] == 12
    assert reported["gen_ai.usage.reasoning.output_tokens"] == 12


def test_using_session_puts_session_user_and_metadata_on_the_task_spans(collector):
    traced(collector)
    agent = seed_agent()
    with telemetry.using_session(
        session_id="support-chat-9", user_id="user-7", metadata={"ticket": 42}, tags=["beta"]
    ):
        task_id = agent.create_task(SEED).task_id
        agent.run_step(task_id)
    agent.run_step(task_id)  # Outside the block: the task's own thread again.
    flush()
    first, second = collector.named("step ")
    later = {second.span_id}
    inside = [s for s in collector.spans() if s.span_id not in later and s.parent_id not in later]
    assert len(inside) == 4  # The root, the first step, its model call and its tool call.
    for span in inside:
        assert span.attributes["session.id"] == "support-chat-9", span.name
        assert span.attributes["user.id"] == "user-7", span.name
        assert json.loads(span.attributes["metadata"]) == {"ticket": 42}, span.name
        assert span.attributes["tag.tags"] == ["beta"]
    assert first.attributes["stepwise.task.id"] == task_id
    assert second.attributes["session.id"] == task_id and "user.id" not in second.attributes


def test_an_image_the_model_is_shown_is_in_its_span_as_a_data_url_and_a_huge_one_is_named(
    collector,
):
    traced(collector, capture=True)
    small = PNG + b"\x00" * 100
    huge = PNG + b"\x01" * 300_000

    def reply(messages: list[ChatMessage], tools: Any) -> str:
        return answer("a llama")

    worker = MultimodalReActAgentWorker([], FunctionLLM(reply))
    agent = AgentRunner(worker)
    task_id = agent.create_task("What is in these pictures?", images=[small, huge]).task_id
    agent.run_step(task_id)
    flush()
    [chat] = collector.named("chat ")
    a = chat.attributes
    [user] = [k for k, v in a.items() if k.endswith("message.role") and v == "user"]
    contents = user.replace("message.role", "message.contents")
    kinds = [a[f"{contents}.{i}.message_content.type"] for i in range(3)]
    assert kinds == ["text", "image", "text"]
    assert a[f"{contents}.0.message_content.text"] == "What is in these pictures?"
    url = a[f"{contents}.1.message_content.image.image.url"]
    assert url == "data:image/png;base64," + base64.b64encode(small).decode()
    assert a[f"{contents}.2.message_content.text"].startswith("[image/png image of 300,008 bytes")
    assert base64.b64encode(huge)[:4000] not in collector.raw()


# --- keys --------------------------------------------------------------------------------------

KEY = "sk-live-Zq8wX3vB7nM2kL9pR4tYcollector"


def _reply(request: httpx.Request) -> httpx.Response:
    body = {
        "id": "c1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "5"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
    }
    return httpx.Response(200, json=body)


def test_no_key_reaches_the_collector_even_with_content_captured(collector, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    traced(collector, capture=True)
    client = openai.AsyncOpenAI(
        api_key=KEY,
        base_url=f"http://user:{KEY}@127.0.0.1:9/v1?key={KEY}",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(_reply)),  # pyright: ignore[reportArgumentType]
    )
    agent = AgentRunner(FunctionCallingAgentWorker([], OpenAILLM(client=client)))
    with telemetry.using_session(user_id="user-1"):
        assert str(agent.chat("2 + 3?")) == "5"
    flush()
    assert collector.named("chat ") and collector.named("task finalized")
    assert KEY.encode() not in collector.raw()
