"""A tool breakpoint stops before the call, in Chromium, against a real model server.

The model speaks over loopback HTTP (tests/llm_servers.py). The old app stopped *after* the
tool had run (its observation already in memory); now the call waits, proposed, and runs
only when the user approves it.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.llm_servers import OpenAIServer, default_policy, react_policy

from .conftest import ARTIFACTS
from .test_real_model_in_browser import KEY, click, create_task, steps_done, use_server


def _set_tool_breakpoint(page: Page) -> None:
    page.get_by_role("button", name="Breakpoints").first.click()
    page.get_by_text("Before any tool call").click()
    page.keyboard.press("Escape")
    expect(page.get_by_role("button", name="Breakpoints: before any tool")).to_be_visible(
        timeout=10_000
    )


@pytest.mark.parametrize(
    ("worker", "policy"), [("ReAct", react_policy), ("Function calling", default_policy)]
)
def test_run_until_stops_before_the_tool_runs_and_approve_runs_it(
    page: Page, worker: str, policy
) -> None:
    with OpenAIServer(api_key=KEY, policy=policy) as server:
        use_server(page, server, key=KEY)
        create_task(page, "What is 1 + 2?", worker=worker)
        _set_tool_breakpoint(page)

        click(page, "Run until")
        expect(page.get_by_text("held at a breakpoint").first).to_be_visible(timeout=30_000)
        page.screenshot(path=ARTIFACTS / f"breakpoint-held-{worker[:5]}.png", full_page=True)
        assert steps_done(page) == 1  # The reasoning step only: add has not run.
        assert len(server.model_requests) == 1
        assert page.get_by_text("Observation").count() == 0

        click(page, "Approve and run step")  # The held call, proposed and not run yet.
        expect(page.get_by_text("2 steps done")).to_be_visible(timeout=30_000)
        assert len(server.model_requests) == 1  # The tool ran; the model was not asked.

        page.get_by_role("button", name="Breakpoints").first.click()
        click(page, "Clear breakpoints")
        page.keyboard.press("Escape")
        click(page, "Run until")
        finalize = page.get_by_role("button", name="Finalize", exact=True).first
        expect(finalize).to_be_enabled(timeout=30_000)
        server.check()
        assert len(server.model_requests) == 2
