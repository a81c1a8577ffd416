"""Travel and edit a task in Chromium (issue 22, items 5 and 6), on the offline demo model.

A completed card's "Undo to here" asks before undoing more than one step, "Fork from here"
opens a new task whose header links back to the original, and "Edit the conversation" saves
an edit as a step whose card shows the message before and after; Undo reverts it.
Screenshots of each screen are kept in tests/e2e/artifacts.
"""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect

from .conftest import ARTIFACTS, idle
from .test_real_model_in_browser import click, run_one_step

CHANGED = "What is (121 * 4) + 42?"


def card(page: Page, number: int) -> Locator:
    return page.get_by_test_id("stExpander").filter(has_text=f"Step {number} ·").first


def open_card(page: Page, number: int) -> Locator:
    found = card(page, number)
    found.get_by_text(f"Step {number} ·").first.click()
    idle(page)
    return found


def test_undo_to_here_fork_from_here_and_an_edit_of_the_conversation(page: Page) -> None:
    page.get_by_text("Demo scenarios").wait_for(timeout=30_000)
    page.get_by_role("button", name="Start").first.click()  # The arithmetic scenario.
    page.get_by_role("button", name="Run step", exact=True).first.wait_for(timeout=15_000)
    for _ in range(3):
        run_one_step(page)

    first = open_card(page, 1)
    first.get_by_role("button", name="Undo to here").click()
    page.get_by_text("Undo the 2 steps after step 1?").wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "travel-undo-to-here-confirm.png")
    page.keyboard.press("Escape")
    idle(page)

    second = open_card(page, 2)
    second.scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "travel-card-buttons.png")
    second.get_by_role("button", name="Fork from here").click()
    page.get_by_text("Forked from task").first.wait_for(timeout=15_000)
    expect(page.get_by_text("2 steps done").first).to_be_visible()
    page.get_by_text("Forked from task").first.scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "travel-fork-header.png")

    page.get_by_text("What the model sees next").first.click()
    idle(page)
    page.get_by_text("Edit the conversation").first.click()
    idle(page)
    first_message = page.locator('textarea[aria-label="Text of message 1"]')
    first_message.fill(CHANGED)
    page.locator('textarea[aria-label="Add a user message at the end"]').fill(
        "<b>bold?</b> Use 4, not 3."
    )
    first_message.scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "edit-conversation-editor.png")
    click(page, "Save as a step")
    expect(page.get_by_text("3 steps done").first).to_be_visible(timeout=15_000)
    edit = card(page, 3)  # The newest card is open.
    expect(edit.get_by_text("You edited the conversation")).to_be_visible()
    expect(edit.get_by_text(CHANGED)).to_be_visible()
    expect(edit.get_by_text("<b>bold?</b> Use 4, not 3.")).to_be_visible()  # As typed.
    edit.scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "edit-conversation-card.png")

    click(page, "Undo")
    expect(page.get_by_text("2 steps done").first).to_be_visible(timeout=15_000)
    page.get_by_role("button", name="Open task", exact=False).first.click()
    idle(page)
    expect(page.get_by_text("3 steps done").first).to_be_visible(timeout=15_000)
    assert not page.dialogs  # type: ignore[attr-defined]
