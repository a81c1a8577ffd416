"""The Playground in Chromium against a real OpenAI-compatible HTTP server on loopback."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

from tests.llm_servers import OpenAIServer, Reply, ReplyToolCall, last_tool_result, offered_tools

from .conftest import ARTIFACTS, idle
from .test_real_model_in_browser import use_server


def add_then_answer(body: dict[str, Any]) -> Reply:
    result = last_tool_result(body)
    if result is None and "add" in offered_tools(body):
        return Reply(tool_calls=[ReplyToolCall("add", {"a": 2, "b": 3})])
    return Reply(text=f"The sum is {result}.")


def _press(page: Page, name: str) -> None:
    page.get_by_role("button", name=name).first.click()
    idle(page)


def test_a_tool_request_is_run_on_the_page_and_the_model_answers(page: Page) -> None:
    with OpenAIServer(policy=add_then_answer) as server:
        use_server(page, server)
        page.get_by_role("link", name="Playground").click()
        page.get_by_text("The model in Settings").first.click()
        _press(page, "Use the built-in arithmetic tools")
        page.get_by_label("Message").fill("Add 2 and 3.")
        _press(page, "Add the message")
        _press(page, "Execute")
        page.get_by_text("agent asks for").first.wait_for(timeout=20_000)

        _press(page, 'Run add({"a": 2, "b": 3}) here')
        _press(page, "Send the tool outputs")
        _press(page, "Execute")
        page.get_by_text("The sum is 5.").first.wait_for(timeout=20_000)
        page.get_by_text("The last request and response, as JSON").click()
        idle(page)
        page.screenshot(path=ARTIFACTS / "playground.png", full_page=True)

        sent = server.model_requests[-1].json
        assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
        assert sent["messages"][-1]["content"] == "5"
