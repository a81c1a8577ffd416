"""The app against a real OpenAI-compatible server on loopback, in headless Chromium.

The server (tests/llm_servers.py) speaks the wire format over real sockets with HTTP/1.1
keep-alive and SSE, as every provider does. This is the path that failed last round at the
second step: every Streamlit rerun runs on a new thread, and the model client's pooled
connection was bound to the first one's event loop.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.llm_servers import OpenAIServer, Reply, ReplyToolCall, last_tool_result, offered_tools

from .conftest import ARTIFACTS, CHROMIUM_ARGS, idle

KEY = "sk-loopback-e2e-7f3a9c"
MODEL = "loopback-model"
STORY = " ".join(f"word{n}" for n in range(40))


def slow_story_policy(body: dict[str, Any]) -> Reply:
    """Call `add`, then answer with a long reply streamed slowly (to reload or stop it)."""
    if last_tool_result(body) is None and "add" in offered_tools(body):
        return Reply(tool_calls=[ReplyToolCall("add", {"a": 2, "b": 3})])
    return Reply(text=f"The sum is 5. {STORY}", delay_s=0.15)


def choose(page: Page, label: str, option: str) -> None:
    """Pick `option` in the Streamlit selectbox labelled `label`.

    A rerun landing as the list opens closes it again: open it until the option shows.
    """
    wanted = page.get_by_role("option", name=option, exact=True)
    for _ in range(3):
        page.get_by_test_id("stSelectbox").filter(has_text=label).first.click()
        try:
            wanted.wait_for(state="visible", timeout=5_000)
            break
        except PlaywrightTimeout:
            continue
    wanted.click()


def type_into(page: Page, label: str, text: str) -> None:
    field = page.locator(f'input[aria-label="{label}"]:not([disabled])').first
    field.fill(text)
    field.press("Enter")
    page.wait_for_timeout(300)


def click(page: Page, name: str) -> None:
    page.get_by_role("button", name=name, exact=True).first.click()


def use_server(page: Page, server: OpenAIServer, *, key: str | None = None) -> None:
    """Settings: the custom OpenAI-compatible server, its model, and a key for it."""
    page.get_by_role("link", name="Settings").click()
    choose(page, "Provider", "Local server: another OpenAI-compatible URL")
    type_into(page, "Base URL", f"{server.url}/v1")
    type_into(page, "Model", MODEL)
    click(page, "Save model")
    page.get_by_text("Saved: new tasks use this model.").wait_for(timeout=15_000)
    if key is not None:
        field = page.locator("input[type=password]").first
        field.fill(key)
        page.get_by_role("button", name="Use this key for this session").first.click()
        page.get_by_text("set for this session only").first.wait_for(timeout=15_000)
    page.get_by_role("link", name="Stepper").click()  # In-app: the session (and key) stays.


def create_task(page: Page, text: str, *, worker: str = "Function calling") -> None:
    page.get_by_text("Demo scenarios").wait_for(timeout=30_000)
    choose(page, "Worker", worker)
    task = page.get_by_placeholder("What should the agent do?")
    task.fill(text)
    task.press("Control+Enter")
    page.wait_for_timeout(300)
    click(page, "Create task")
    page.get_by_role("button", name="Run step", exact=True).first.wait_for(timeout=15_000)


def steps_done(page: Page) -> int:
    """The number of completed steps the task header shows."""
    header = page.get_by_text(re.compile(r"\d+ steps? done")).first.inner_text()
    match = re.search(r"(\d+) steps? done", header)
    assert match is not None, header
    return int(match.group(1))


def run_one_step(page: Page) -> None:
    """Click Run step once and wait until the step has completed and the page settled."""
    before = steps_done(page)
    click(page, "Run step")
    done = f"{before + 1} step{'' if before == 0 else 's'} done"
    expect(page.get_by_text(done, exact=False)).to_be_visible(timeout=30_000)
    expect(page.get_by_text("Running step")).to_have_count(0, timeout=30_000)
    idle(page)


def run_to_the_answer(page: Page, *, max_clicks: int = 6) -> int:
    """Click Run step, one click per step, until Finalize is enabled; returns the clicks."""
    finalize = page.get_by_role("button", name="Finalize", exact=True)
    for clicks in range(1, max_clicks + 1):
        run_one_step(page)
        if finalize.is_enabled():
            return clicks
    page.screenshot(path=ARTIFACTS / "real-model-stuck.png", full_page=True)
    raise AssertionError("the task never reached its last step")


def test_a_function_calling_task_runs_to_its_answer_on_a_real_server(page: Page) -> None:
    with OpenAIServer(api_key=KEY) as server:
        use_server(page, server, key=KEY)
        create_task(page, "What is 1 + 2?")

        clicks = run_to_the_answer(page)
        click(page, "Finalize")

        page.get_by_text("The answer is 3").first.wait_for(timeout=15_000)
        page.screenshot(path=ARTIFACTS / "real-model-answer.png", full_page=True)
        server.check()
        calls = server.model_requests
        assert clicks >= 2 and len(calls) >= 2
        assert {request.headers.get("authorization") for request in calls} == {f"Bearer {KEY}"}
        assert server.connections_accepted < len(calls)  # The pool was reused across reruns.
        assert page.get_by_text("failed").count() == 0


def test_two_browser_sessions_step_at_once(chromium_path: str, app_url: str) -> None:
    from playwright.sync_api import sync_playwright

    with OpenAIServer() as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        pages = [browser.new_context().new_page() for _ in range(2)]
        for tab in pages:
            tab.goto(app_url)
        use_server(pages[0], server)  # Saved settings reach the second session too.
        for n, tab in enumerate(pages):
            if n:
                tab.reload()
            create_task(tab, f"Task of session {n}: what is 1 + 2?")
        for _ in range(3):  # Interleaved clicks: both sessions' steps run on one runtime.
            for tab in pages:
                click(tab, "Run step")
            for tab in pages:
                tab.wait_for_timeout(500)
                expect(tab.get_by_text("Running step")).to_have_count(0, timeout=20_000)
        for tab in pages:
            expect(tab.get_by_text("3 steps done", exact=False)).to_be_visible(timeout=20_000)
            expect(tab.get_by_role("button", name="Finalize", exact=True)).to_be_enabled()
            assert tab.get_by_text("failed").count() == 0
        pages[1].screenshot(path=ARTIFACTS / "real-model-second-session.png", full_page=True)
        browser.close()
        server.check()


def test_a_reload_mid_stream_shows_the_step_running_then_its_result(page: Page) -> None:
    with OpenAIServer(policy=slow_story_policy) as server:
        use_server(page, server)
        create_task(page, "Add 2 and 3, then tell a story.")
        run_one_step(page)  # The model asks for add.
        run_one_step(page)  # add runs.
        click(page, "Run step")  # The slow streamed answer.
        page.get_by_text("word3").first.wait_for(timeout=20_000)

        page.reload()

        page.get_by_text("Running step").first.wait_for(timeout=20_000)
        page.get_by_text("The sum is 5.").first.wait_for(timeout=20_000)  # Its text so far.
        page.screenshot(path=ARTIFACTS / "real-model-after-reload.png", full_page=True)
        expect(page.get_by_role("button", name="Finalize", exact=True)).to_be_enabled(
            timeout=30_000
        )
        expect(page.get_by_text("Running step")).to_have_count(0)
        page.get_by_text("word39").first.wait_for(timeout=10_000)


def test_stop_ends_a_streaming_step_and_it_can_run_again(page: Page) -> None:
    with OpenAIServer(policy=slow_story_policy) as server:
        use_server(page, server)
        create_task(page, "Add 2 and 3, then tell a story.")
        run_one_step(page)
        run_one_step(page)
        click(page, "Run step")
        page.get_by_text("word2").first.wait_for(timeout=20_000)

        click(page, "Stop")

        page.get_by_text("stopped by you").first.wait_for(timeout=15_000)
        page.screenshot(path=ARTIFACTS / "real-model-stopped.png", full_page=True)
        assert server.wait_until(lambda: server.disconnects >= 1)
        clicks = run_to_the_answer(page)
        assert clicks == 1


@pytest.fixture(autouse=True)
def _artifacts() -> None:
    Path(ARTIFACTS).mkdir(exist_ok=True)


def endless_adding_policy(body: dict[str, Any]) -> Reply:
    """An agent that never stops calling `add`, slowly: Run until must be stoppable."""
    return Reply(tool_calls=[ReplyToolCall("add", {"a": 1, "b": 1})], delay_s=1.0)


def test_run_until_goes_on_after_a_reload_and_stop_ends_it(page: Page) -> None:
    with OpenAIServer(policy=endless_adding_policy) as server:
        use_server(page, server)
        create_task(page, "Keep adding.")
        click(page, "Run until")
        page.get_by_text("Run until is running").first.wait_for(timeout=20_000)
        assert server.wait_until(lambda: len(server.model_requests) >= 2, timeout=20)

        page.reload()

        page.get_by_text("Run until is running").first.wait_for(timeout=20_000)
        before = len(server.model_requests)
        assert server.wait_until(lambda: len(server.model_requests) > before, timeout=10)
        page.screenshot(path=ARTIFACTS / "run-until-after-reload.png", full_page=True)
        click(page, "Stop run until")

        page.get_by_text("Stopped Run until").first.wait_for(timeout=20_000)
        expect(page.get_by_text("Run until is running")).to_have_count(0)
        stopped_at = len(server.model_requests)
        page.wait_for_timeout(1_500)
        assert len(server.model_requests) == stopped_at  # Nothing runs on after Stop.
        assert page.get_by_text("failed").count() == 0
