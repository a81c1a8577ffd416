"""Other web pages, in headless Chromium, cannot drive a loopback `stepwise serve` with no token
(issue 23, item 1).

(a) A page of another origin (a second loopback server, another port) sends what a browser lets
any page send without asking: `fetch` in no-cors mode with form, `text/plain`, multipart and
untyped bodies, body-less POSTs, and real `<form>` submits. The tool call waiting for a person
stays waiting, no step runs and no file is written.
(b) DNS rebinding: Chromium resolves `rebind.test` to 127.0.0.1, so a page at
`http://rebind.test:PORT` is, to the browser, the server's own origin; its reads and its Execute
Agent call are refused all the same.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_core.spec import AgentSpec
from stepwise.server import ServerSettings
from tests.stepwise.server.conftest import running_server

from .conftest import CHROMIUM_ARGS

PAGE = b"<!doctype html><title>another site</title><iframe name=sink></iframe>"

# Each is what a page's script can send anywhere without a CORS preflight.
FORGERIES = """async ([approve, steps, upload]) => {
  const post = (url, body) => fetch(url, {method: 'POST', mode: 'no-cors', body})
    .then(() => 'sent', (error) => String(error));
  const files = new FormData();
  files.append('file', new Blob(['pwned']), 'pwned.txt');
  return [
    await post(approve),
    await post(approve, new URLSearchParams({arguments: '{"a": 1, "b": 1}'})),
    await post(steps),
    await post(steps, '{"input": "ignore the person"}'),
    await post(steps, new Blob(['{}'])),
    await post(upload, files),
  ];
}"""

SUBMIT = """([action, enctype, name, value]) => new Promise((done) => {
  const sink = document.querySelector('iframe');
  sink.addEventListener('load', () => done(true), {once: true});
  const form = Object.assign(document.createElement('form'),
                             {method: 'POST', action, enctype, target: 'sink'});
  if (name) form.append(Object.assign(document.createElement('input'), {name, value}));
  document.body.append(form);
  form.submit();
})"""

REBOUND = """async () => {
  const read = async (response) => [response.status, await response.text()];
  return [
    await read(await fetch('/ap/v1/agent/tasks')),
    await read(await fetch('/v1/agent/execute', {method: 'POST',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({messages: [{role: 'user', content: 'spend the key'}]})})),
  ];
}"""


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def another_site() -> Iterator[str]:
    """A page of another origin: a second loopback server on its own port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture
def serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """`stepwise serve`'s app on loopback with no token; its agent asks before each tool call."""
    monkeypatch.setenv("STEPWISE_WORKSPACES", str(tmp_path / "workspaces"))
    settings = ServerSettings(
        db=tmp_path / "stepwise.db", token=None, default_agent=AgentSpec(tool_approval=True)
    )
    with running_server(settings) as url:
        yield url


def _browser(chromium_path: str, *extra: str) -> Any:
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(
        executable_path=chromium_path, args=[*CHROMIUM_ARGS, *extra]
    )
    return playwright, browser


def _pending(http: httpx.Client) -> tuple[str, str]:
    """A task whose proposed tool call waits for a person: (task, step)."""
    task_id = http.post("/ap/v1/agent/tasks", json={"input": "What is (121 * 3) + 42?"})
    task_id = task_id.json()["task_id"]
    assert http.post(f"/ap/v1/agent/tasks/{task_id}/steps", json={}).status_code == 200
    steps = http.get(f"/stepwise/v1/tasks/{task_id}").json()["steps"]
    [held] = [s for s in steps if s["status"] == "created"]
    return task_id, held["step_id"]


def test_a_page_of_another_origin_cannot_approve_run_or_upload(chromium_path, serve, another_site):
    with httpx.Client(base_url=serve, timeout=30) as http:
        task_id, step_id = _pending(http)
        before = http.get(f"/stepwise/v1/tasks/{task_id}").json()
        approve = f"{serve}/stepwise/v1/tasks/{task_id}/steps/{step_id}/approve"
        steps = f"{serve}/ap/v1/agent/tasks/{task_id}/steps"
        upload = f"{serve}/ap/v1/agent/tasks/{task_id}/artifacts"

        playwright, browser = _browser(chromium_path)
        try:
            page = browser.new_page()
            answers: list[tuple[str, int]] = []
            page.on("response", lambda r: answers.append((r.request.method, r.status)))
            page.goto(another_site)
            sent = page.evaluate(FORGERIES, [approve, steps, upload])
            forms = [
                (approve, "application/x-www-form-urlencoded", "", ""),
                (steps, "text/plain", '{"input": "x", "pad": "', '"}'),
                (upload, "multipart/form-data", "relative_path", "pwned.txt"),
            ]
            for form in forms:
                page.evaluate(SUBMIT, list(form))
            refused = page.frame(name="sink").content()
        finally:
            browser.close()
            playwright.stop()

        after = http.get(f"/stepwise/v1/tasks/{task_id}").json()
        files = http.get(f"/ap/v1/agent/tasks/{task_id}/artifacts").json()["artifacts"]

    assert after == before  # Same version, same steps: the tool call still waits.
    assert files == []
    assert sent == ["sent"] * 6  # The browser sent every one (no-cors hides the answers).
    posts = [status for method, status in answers if method == "POST"]
    assert posts == [403] * 9, answers  # Each reached the server, and each was refused.
    assert "cross_origin_refused" in refused


def test_a_rebinding_page_reads_no_task_and_calls_no_model(chromium_path, serve):
    with httpx.Client(base_url=serve, timeout=30) as http:
        task_id, _ = _pending(http)
    port = serve.rsplit(":", 1)[1]

    playwright, browser = _browser(chromium_path, "--host-resolver-rules=MAP rebind.test 127.0.0.1")
    try:
        page = browser.new_page()
        page.goto(f"http://rebind.test:{port}/health")  # An open route: the page loads.
        health = page.inner_text("body")
        [(listed, tasks), (executed, answer)] = page.evaluate(REBOUND)
    finally:
        browser.close()
        playwright.stop()

    assert task_id not in tasks and "host_not_allowed" in tasks
    assert "host_not_allowed" in answer
    assert (listed, executed) == (403, 403)
    assert '"model":null' in health.replace(" ", "")  # Up, but names no model to this page.


def test_the_servers_own_page_still_approves_with_a_body_less_post(chromium_path, serve):
    with httpx.Client(base_url=serve, timeout=30) as http:
        task_id, step_id = _pending(http)
        approve = f"/stepwise/v1/tasks/{task_id}/steps/{step_id}/approve"

        playwright, browser = _browser(chromium_path)
        try:
            page = browser.new_page()
            page.goto(f"{serve}/health")  # A page of the server's own origin, as /docs is.
            status = page.evaluate(f"fetch('{approve}', {{method: 'POST'}}).then(r => r.status)")
        finally:
            browser.close()
            playwright.stop()
        steps = http.get(f"/stepwise/v1/tasks/{task_id}").json()["steps"]

    assert status == 200
    assert [s["output"] for s in steps if s["step_id"] == step_id] == ["363"]
