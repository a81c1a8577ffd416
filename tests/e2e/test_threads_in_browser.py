"""Threads across two browser sessions, against the loopback OpenAI-compatible server (issue 22,
item 1).

Session A finalizes a function-calling task whose question holds a secret word; session B,
a new browser context, starts a ReAct task on another model. B's "What the model sees next"
and every request B's task sends must be free of the secret: each task starts a
conversation of its own. Then "Continue this conversation" on A's finished task starts a
task whose request does carry A's question: the thread goes on only when asked.

Before the runtime's fix (b70850a) this failed at B: every runner a spec built for a real
model kept one stored conversation, `conversation_id=f"spec:{name}"`, and both sessions'
specs have the default name, so Finalize in A appended A's question, call, result and answer
to the conversation B's task started from; the preview and B's first request held the
secret. "Continue this conversation" did not exist either.
"""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page, expect, sync_playwright

from tests.llm_servers import OpenAIServer, Reply, default_policy, offered_tools, react_policy

from .conftest import ARTIFACTS, CHROMIUM_ARGS, idle
from .test_real_model_in_browser import (
    MODEL,
    choose,
    click,
    create_task,
    run_one_step,
    run_to_the_answer,
    type_into,
)

SECRET = "PLATYPUS-7731"
OTHER_MODEL = "loopback-other-model"


def policy(body: dict[str, Any]) -> Reply:
    """Native tool calls when tools are offered (function calling), else ReAct text."""
    return default_policy(body) if offered_tools(body) else react_policy(body)


def use_model(page: Page, server: OpenAIServer, model: str) -> None:
    """Settings: the loopback server and `model` for new tasks."""
    page.get_by_role("link", name="Settings").click()
    choose(page, "Provider", "Local server: another OpenAI-compatible URL")
    type_into(page, "Base URL", f"{server.url}/v1")
    type_into(page, "Model", model)
    click(page, "Save model")
    page.get_by_text("Saved: new tasks use this model.").wait_for(timeout=15_000)
    page.get_by_role("link", name="Stepper").click()


def sent(server: OpenAIServer, model: str) -> list[str]:
    """Every chat request's body sent for `model`, as JSON text."""
    return [
        json.dumps(request.json)
        for request in server.model_requests
        if isinstance(request.json, dict) and request.json.get("model") == model
    ]


def preview_text(page: Page) -> str:
    """The text of "What the model sees next", opened."""
    page.get_by_text("What the model sees next").first.click()
    idle(page)
    box = page.get_by_test_id("stExpander").filter(has_text="What the model sees next").first
    box.scroll_into_view_if_needed()
    return box.inner_text()


def test_a_new_session_never_sees_another_tasks_conversation_unless_it_continues_it(
    chromium_path: str, app_url: str
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    with OpenAIServer(policy=policy) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        size = {"width": 1500, "height": 1000}
        a = browser.new_context(viewport=size).new_page()
        a.goto(app_url)
        use_model(a, server, MODEL)
        create_task(a, f"The secret word is {SECRET}. What is 1 + 2?")
        run_to_the_answer(a)
        click(a, "Finalize")
        a.get_by_text("The answer is 3").first.wait_for(timeout=15_000)
        assert any(SECRET in body for body in sent(server, MODEL))

        b = browser.new_context(viewport=size).new_page()  # Another person, another session.
        b.goto(app_url)
        use_model(b, server, OTHER_MODEL)
        create_task(b, "What is 1 + 2?", worker="ReAct")
        seen = preview_text(b)
        b.screenshot(path=ARTIFACTS / "threads-session-b-preview.png")
        assert "What is 1 + 2?" in seen and SECRET not in seen
        run_one_step(b)
        bodies = sent(server, OTHER_MODEL)
        assert bodies and not any(SECRET in body for body in bodies)

        click(a, "Continue this conversation")
        a.get_by_text("Continues the conversation of task").first.wait_for(timeout=15_000)
        follow_up = a.get_by_placeholder("Your follow-up: what should the agent do?")
        follow_up.fill("And what was the secret word?")
        follow_up.press("Control+Enter")
        a.wait_for_timeout(300)
        a.screenshot(path=ARTIFACTS / "threads-continue-form.png", full_page=True)
        click(a, "Create task")
        a.get_by_role("button", name="Run step", exact=True).first.wait_for(timeout=15_000)
        expect(a.get_by_text("Continues the conversation of task").first).to_be_visible()
        before = len(sent(server, MODEL))
        run_one_step(a)
        a.screenshot(path=ARTIFACTS / "threads-continued-task.png", full_page=True)
        (request,) = sent(server, MODEL)[before:]
        assert SECRET in request and "And what was the secret word?" in request
        browser.close()
        server.check()
