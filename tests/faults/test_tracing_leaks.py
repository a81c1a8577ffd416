"""Tracing leaks no key and holds no exit (issue 23, item 11).

A model error quoted its base URL, and a base URL can carry the key: with content capture on,
the key went into the span's status and its exception event. The error now names the server
without user, query or fragment, and every text a span exports is scrubbed besides. And a
collector that is down, or that accepts and never answers, held a traced script's exit for
8.7 s and 11.4 s; it is bounded by `telemetry.export.SHUTDOWN_TIMEOUT_S` (1 s) now.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agent_core import AgentRunner, telemetry
from agent_core.errors import StepError
from agent_core.llms import OpenAILLM, ScriptedLLM
from agent_core.redaction import scrub
from agent_core.telemetry import hooks
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker

from ..agent_core.conftest import action, answer

SECRET = "sk-secret"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Spans in memory, with content capture on (error messages exported)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.instrument(provider, capture_content=True)
    yield exporter
    telemetry.uninstrument()


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:{port}/v1?api_key=" + SECRET,
        "http://user:" + SECRET + "@127.0.0.1:{port}/v1",
        "http://127.0.0.1:{port}/v1?model=m&access_token=" + SECRET + "#sig=" + SECRET,
    ],
)
def test_a_key_in_the_base_url_reaches_no_span(exporter: InMemorySpanExporter, base_url: str):
    url = base_url.format(port=closed_port())
    llm = OpenAILLM(model="m", api_key="local", base_url=url, max_retries=0, timeout=5)
    runner = AgentRunner(ReActAgentWorker.from_tools([], llm=llm))
    task = runner.create_task("What is 1 + 2?")

    with pytest.raises(StepError) as failed:
        runner.run_step(task.task_id)

    assert "127.0.0.1" in str(failed.value)  # The error names the server...
    assert SECRET not in str(failed.value)  # ...by an address that carries no key.
    spans = exporter.get_finished_spans()
    failed_spans = [span for span in spans if span.status.status_code is StatusCode.ERROR]
    assert {span.name.split(" ")[0] for span in failed_spans} == {"chat", "step"}
    events = [event for span in failed_spans for event in span.events]
    assert events and {event.name for event in events} == {"exception"}
    for event in events:
        attributes = dict(event.attributes or {})
        assert "127.0.0.1" in str(attributes["exception.message"])
        assert "Traceback" in str(attributes["exception.stacktrace"])
    exported = "\n".join(span.to_json() for span in spans)  # Statuses, events, attributes.
    assert SECRET not in exported


def test_a_tool_error_quoting_a_signed_url_reaches_no_span(exporter: InMemorySpanExporter):
    signed = f"https://bucket.test/report.csv?X-Amz-Signature={SECRET}&X-Amz-Expires=60"

    def fetch(name: str) -> str:
        """Fetch a report."""
        raise PermissionError(f"403 from {signed}")

    llm = ScriptedLLM([action("fetch", '{"name": "q3"}'), answer("no access")])
    tool = FunctionTool.from_defaults(fn=fetch)
    AgentRunner(ReActAgentWorker.from_tools([tool], llm=llm)).chat("Fetch q3")

    [span] = [s for s in exporter.get_finished_spans() if s.name == "execute_tool fetch"]
    assert span.status.status_code is StatusCode.ERROR
    assert "X-Amz-Signature=[redacted]" in (span.status.description or "")
    assert "X-Amz-Signature=[redacted]" in str(dict(span.attributes or {})["output.value"])
    assert SECRET not in span.to_json()


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("at http://h:1/v1?api_key=k1 (refused)", "at http://h:1/v1?api_key=[redacted] (refused)"),
        ("'https://u:p@h/x?a=1#t=2'", "'https://[redacted]@h/x?a=[redacted]#t=[redacted]'"),
        ("no scheme: h:1/v1?key=k1&model=m", "no scheme: h:1/v1?key=[redacted]&model=m"),
        ("token=k1, sig=k2; x-key=k3", "token=[redacted], sig=[redacted]; x-key=[redacted]"),
        ("2 + 2 = 4, a=b", "2 + 2 = 4, a=b"),
    ],
)
def test_the_scrubber(text: str, scrubbed: str):
    assert scrub(text) == scrubbed


# --- a collector that is down or silent -------------------------------------------------------

_TRACED_SCRIPT = """
import time
from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.workers import ReActAgentWorker

runner = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM(["Thought: t\\nAnswer: 3"])))
assert str(runner.chat("What is 1 + 2?")) == "3"
print(time.monotonic(), flush=True)
"""
EXIT_BOUND_S = 4.0
"""Generous: the exit waits about 1 s; it took 8.7 s (port closed) and 11.4 s (silent) before."""


def exit_seconds(endpoint: str) -> tuple[float, str]:
    """How long a traced script takes to exit after its last line, and what it logged."""
    env = {**os.environ, hooks.ENDPOINT_ENV: endpoint}
    done = subprocess.run(
        [sys.executable, "-c", _TRACED_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    ended = time.monotonic()  # CLOCK_MONOTONIC: one clock for both processes.
    return ended - float(done.stdout.strip()), done.stderr


def test_a_collector_that_never_answers_does_not_hold_the_exit():
    with socket.socket() as silent:  # Listens: the kernel accepts; nobody ever reads.
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        seconds, _ = exit_seconds(f"http://127.0.0.1:{silent.getsockname()[1]}")
        silent.settimeout(5)
        connection, _ = silent.accept()
        with connection:
            assert connection.recv(64).startswith(b"POST /v1/traces")  # The spans went there.
    assert seconds < EXIT_BOUND_S


def test_a_collector_that_is_down_does_not_hold_the_exit():
    seconds, logged = exit_seconds(f"http://127.0.0.1:{closed_port()}")
    assert "/v1/traces" in logged  # The exporter tried, and was refused.
    assert seconds < EXIT_BOUND_S
