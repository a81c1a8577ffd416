"""`stepwise serve` sends its last spans before a clean stop, SIGTERM as well as Ctrl+C.

Tracing is closed by an exit hook; on SIGTERM uvicorn re-raises the signal after shutdown and
its default action ends the process before any exit hook runs, so the spans of the last steps
were lost. The server's shutdown now flushes them.
"""

from __future__ import annotations

import gzip
import http.server
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests._serve_process import wait_healthy

from .conftest import free_port


def _writer(sink: Path) -> type[http.server.BaseHTTPRequestHandler]:
    """An OTLP/HTTP receiver appending each request's spans to `sink`, one line per span."""
    lock = threading.Lock()

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            request = ExportTraceServiceRequest.FromString(body)
            lines = [
                f"{span.name}\t{_step_id(span)}\n"
                for resource in request.resource_spans
                for scope in resource.scope_spans
                for span in scope.spans
            ]
            with lock, sink.open("a", encoding="utf-8") as file:
                file.writelines(lines)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    return Receiver


def _step_id(span: object) -> str:
    for attribute in span.attributes:  # type: ignore[attr-defined]
        if attribute.key == "stepwise.step.id":
            return attribute.value.string_value
    return ""


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A collector on loopback writing to a file: its URL and the file."""
    sink = tmp_path / "spans.tsv"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _writer(sink))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", sink
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_the_last_steps_span_reaches_the_collector_on_a_clean_stop(
    tmp_path: Path, collector: tuple[str, Path], stop: signal.Signals
) -> None:
    endpoint, sink = collector
    port = free_port()
    env = {
        **os.environ,
        "STEPWISE_WORKSPACES": str(tmp_path / "ws"),
        "STEPWISE_OTLP_ENDPOINT": endpoint,
    }
    env.pop("STEPWISE_API_TOKEN", None)
    command = [sys.executable, "-m", "stepwise.cli", "serve", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--db", str(tmp_path / "runs.db")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, process, output=lambda: process.stderr.read() if process.stderr else "")
        task_id = httpx.post(f"{url}/ap/v1/agent/tasks", json={"input": "hi"}).json()["task_id"]
        step = httpx.post(f"{url}/ap/v1/agent/tasks/{task_id}/steps", timeout=30).json()
    finally:
        process.send_signal(stop)
        _, stderr = process.communicate(timeout=30)
    assert "Application shutdown complete" in stderr  # A clean stop, not a kill.
    spans = sink.read_text(encoding="utf-8").splitlines() if sink.exists() else []
    step_spans = [line for line in spans if line.endswith(f"\t{step['step_id']}")]
    assert any(line.startswith("step 1") for line in step_spans), spans
