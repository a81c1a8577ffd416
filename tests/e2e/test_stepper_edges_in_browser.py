"""The Stepper's edges in real Chromium: what only a browser shows.

Two tabs on one task (the stale one refuses to act), the Breakpoints button naming its stops
while its popover stays open, the reason on hover of a disabled control, and a "you are the
model" step refusing an empty reply next to the box. Screenshots go to the e2e artifacts
folder.
"""

from __future__ import annotations

from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore

from .conftest import ARTIFACTS, idle

CHANGED = "This task changed in another tab"


def click(page, name: str) -> None:
    page.get_by_role("button", name=name, exact=True).first.click()
    idle(page)


def start_arithmetic(page) -> str:
    """The arithmetic demo task; returns its id (from the URL)."""
    page.get_by_text("Demo scenarios").wait_for(timeout=30_000)
    page.get_by_role("button", name="Start").first.click()
    page.get_by_role("button", name="Run step").wait_for(timeout=20_000)
    idle(page)
    return page.url.split("task=")[1].split("&")[0]


def test_a_stale_tab_refuses_to_act_and_shows_the_task_as_it_is(page, app_url, tmp_path):
    task = start_arithmetic(page)
    click(page, "Run step")
    page.get_by_text("1 step done").wait_for(timeout=10_000)
    other = page.context.new_page()
    other.goto(f"{app_url}/?task={task}")
    other.get_by_text("1 step done").wait_for(timeout=30_000)
    idle(other)

    click(page, "Run step")  # The first tab moves on; the other still shows one step.
    page.get_by_text("2 steps done").wait_for(timeout=10_000)
    click(other, "Undo")

    other.get_by_text(CHANGED).first.wait_for(timeout=10_000)
    other.get_by_text("2 steps done").wait_for(timeout=10_000)  # Its current state.
    other.screenshot(path=ARTIFACTS / "a1-two-tabs.png")
    store = SQLiteStore(tmp_path / "e2e.db")  # The database the app under test uses.
    try:
        assert len(store.load_task(task).completed) == 2  # type: ignore[union-attr]  # Not undone.
    finally:
        store.close()


def test_breakpoints_show_on_the_button_and_a_disabled_control_says_why(page):
    start_arithmetic(page)
    page.get_by_role("button", name="Breakpoints").click()
    name = page.get_by_label("Before the tool named")
    name.fill("add")
    name.press("Enter")
    idle(page)
    page.get_by_role("button", name="Breakpoints: before add").wait_for(timeout=10_000)
    assert name.is_visible()  # The popover stayed open while its label changed.
    page.screenshot(path=ARTIFACTS / "a1-breakpoints.png")
    page.keyboard.press("Escape")

    click(page, "Run until")  # Stops before the add call runs: it is held, to approve.
    page.get_by_text("held at a breakpoint").wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "a1-breakpoint-stop.png")
    click(page, "Run until")  # Continue: past the stop, to the answer.
    page.get_by_text("The agent answered").first.wait_for(timeout=10_000)
    assert page.get_by_role("button", name="Add feedback").count() == 0

    page.get_by_role("button", name="Run ready steps").hover()
    page.get_by_text("Nothing queued: the agent answered").wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "a1-answered.png")


def test_you_are_the_model_refuses_an_empty_reply_next_to_the_box(page, app_url, tmp_path):
    store = SQLiteStore(tmp_path / "e2e.db")  # The database the app under test uses.
    task = AgentSpec(provider="human").build_runner(store=store).create_task("What is 2 + 3?")
    store.close()
    page.goto(f"{app_url}/?task={task.task_id}")
    page.get_by_text("You are the model: type its reply").wait_for(timeout=30_000)
    idle(page)

    click(page, "Run step")

    refusal = page.get_by_text("Type the model's reply first")
    refusal.wait_for(timeout=10_000)
    reply_box = page.get_by_label("You are the model: type its reply")
    box, said = reply_box.bounding_box(), refusal.bounding_box()
    assert box and said and 0 <= said["y"] - (box["y"] + box["height"]) < 120  # Right under it.
    assert page.get_by_text("This step failed").count() == 0
    page.screenshot(path=ARTIFACTS / "a1-human-refused.png", full_page=True)
    click(page, "Skip")  # The only step: Skip asks first.
    page.get_by_text("Nothing would be left to run").wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "a1-skip-confirm.png")
