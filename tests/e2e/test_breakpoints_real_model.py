"""A tool breakpoint stops before the call, in Chromium, against a real model server.

The model speaks over loopback HTTP (tests/llm_servers.py). The old app stopped *after* the
tool had run (its observation already in memory); now the call waits, proposed, and runs
only when the user approves it.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.llm_servers import OpenAIServer, default_policy, react_policy

from .conftest import ARTIFACTS
from .test_real_model_in_browser import KEY, click, create_task, steps_done, use_server


def _open_breakpoints(page: Page) -> None:
    """Open the Breakpoints popover (a rerun landing as it opens may close it: try again)."""
    # A toast ("Key set", "Saved") sits over the popover's corner until it fades.
    expect(page.get_by_test_id("stToast")).to_have_count(0, timeout=15_000)
    for _ in range(3):
        page.get_by_role("button", name="Breakpoints").first.click()
        try:
            body = page.get_by_test_id("stPopoverBody")
            body.get_by_text("Before any tool call").wait_for(state="visible", timeout=3_000)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError("the Breakpoints popover did not open")


def _set_tool_breakpoint(page: Page) -> None:
    _open_breakpoints(page)
    page.get_by_test_id("stPopoverBody").get_by_text("Before any tool call").click()
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
        # No tool result in the conversation. (The ReAct format's own words, "Observation:
        # <the tool's result>", may sit in the page's prompt preview: not a result.)
        assert page.get_by_text(re.compile(r"Observation:\s*3")).count() == 0

        click(page, "Approve and run step")  # The held call, proposed and not run yet.
        expect(page.get_by_text("2 steps done")).to_be_visible(timeout=30_000)
        assert len(server.model_requests) == 1  # The tool ran; the model was not asked.

        _open_breakpoints(page)
        click(page, "Clear breakpoints")
        page.keyboard.press("Escape")
        expect(page.get_by_role("button", name="Breakpoints", exact=True)).to_be_visible()
        click(page, "Run until")
        finalize = page.get_by_role("button", name="Finalize", exact=True).first
        expect(finalize).to_be_enabled(timeout=30_000)
        server.check()
        assert len(server.model_requests) == 2
