"""Sample N in real headless Chromium: on the demo's upcoming model step, three samples, one
group with its share, and Continue with this completes the step with that reply."""

from __future__ import annotations

from urllib.parse import urlparse

from playwright.sync_api import expect

from .conftest import ARTIFACTS, idle
from .test_stepper_in_browser import click, groups, wait_for_dag

SAMPLE_EXPANDER = "Sample N: how else could the model answer?"


def test_sample_n_on_the_demo_then_continue_with_the_group(page):
    page.get_by_text("Demo scenarios").wait_for(timeout=30_000)
    page.get_by_role("button", name="Start").first.click()
    wait_for_dag(page, lambda n: groups(n) == ["upcoming"])
    idle(page)

    page.get_by_text(SAMPLE_EXPANDER).first.click()
    count = page.get_by_label("N", exact=True)
    count.fill("3")
    count.press("Enter")
    idle(page)
    click(page, "Sample N")

    # The demo model answers alike each time: one group holds all three replies.
    share = page.get_by_text("100% (3 of 3)", exact=False)
    expect(share.first).to_be_visible(timeout=20_000)
    page.get_by_text("3 replies, 1 different:").first.wait_for(timeout=10_000)
    page.mouse.move(5, 5)  # The button's tooltip off the picture.
    continue_button = page.get_by_role("button", name="Continue with this", exact=True)
    continue_button.scroll_into_view_if_needed()
    idle(page)
    page.screenshot(path=ARTIFACTS / "sample-n-groups.png")
    assert groups(wait_for_dag(page, lambda n: True)) == ["upcoming"]  # A sample commits none.

    click(page, "Continue with this")
    wait_for_dag(page, lambda n: groups(n) == ["completed", "upcoming"])
    page.get_by_text("Continued with the chosen reply.").first.wait_for(timeout=10_000)
    page.get_by_text('multiply({"a": 121, "b": 3})').first.wait_for(timeout=10_000)  # Its card.
    idle(page)
    page.screenshot(path=ARTIFACTS / "sample-n-continued.png")

    outside = [u for u in page.requests if urlparse(u).hostname not in (None, "localhost")]
    assert [u for u in outside if not u.startswith(("data:", "blob:", "about:"))] == []
