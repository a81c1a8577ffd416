"""The Tests page in real headless Chromium (issue 29): Run all shows a diverged case's step and
diff, opens its replayed task in the Stepper, and Save as test writes a case from there."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import expect

from agent_core.recordings import load_case
from tests.app.test_tests_page import write_cases

from .conftest import ARTIFACTS, idle


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    """Cases in the served folder; made before the browser, whose sync API holds an event loop."""
    folder = tmp_path / "stepwise_cases"
    write_cases(tmp_path / "e2e.db", folder)
    return folder


def test_run_all_shows_the_divergence_and_opens_the_replayed_task(cases, app_url, page):
    page.goto(f"{app_url}/tests")
    page.get_by_text("changed.case.json").wait_for(timeout=30_000)
    idle(page)
    page.get_by_role("button", name="Run all").click()
    page.get_by_text("Diverged at step 1 (llm step)").first.wait_for(timeout=30_000)
    idle(page)
    expect(page.get_by_text("-364").first).to_be_visible()
    expect(page.get_by_text("+363").first).to_be_visible()
    expect(page.get_by_text("This case file cannot be read.").first).to_be_visible()
    expect(page.get_by_text("3 cases, 1 passed in this session.")).to_be_visible()
    page.screenshot(path=ARTIFACTS / "tests-page-run-all.png", full_page=True)

    page.get_by_role("button", name="Open the replayed task in the Stepper").first.click()
    page.get_by_text("Replay on current code").first.wait_for(timeout=30_000)
    idle(page)
    assert "task=" in urlparse(page.url).query  # The Stepper (the default page) on the task.

    page.get_by_role("button", name="Save as test").first.click()
    name = page.get_by_label("Test name")
    name.wait_for(timeout=10_000)
    name.fill("from the browser")
    page.get_by_role("button", name="Save test").click()  # Sends the form's typed values.
    page.get_by_text("Saved.").first.wait_for(timeout=20_000)
    page.screenshot(path=ARTIFACTS / "stepper-save-as-test.png", full_page=True)
    saved = load_case(cases / "from_the_browser.case.json")
    assert saved.name == "from the browser" and len(saved.steps) == 1  # Up to the divergence.
    assert page.dialogs == []
    outside = [u for u in page.requests if urlparse(u).hostname not in (None, "localhost")]
    assert [u for u in outside if not u.startswith(("data:", "blob:", "about:"))] == []
