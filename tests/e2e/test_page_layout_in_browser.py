"""What only a browser shows of the Stepper's layout while something runs or just ran.

Run until on a slow streaming model: the page used to keep stale copies of the controls on
screen (a box that appears only while a job runs shifted every later element by one) and
push the streaming step a screen down. Abandon's popover stays open after its click and
covered the notice that said what happened.
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.llm_servers import OpenAIServer

from .conftest import ARTIFACTS
from .test_real_model_in_browser import KEY, click, create_task, slow_story_policy, use_server
from .test_stepper_edges_in_browser import start_arithmetic
from .test_stepper_in_browser import in_dag_frame, wait_for_dag


def _top(page: Page, text: str) -> float:
    box = page.get_by_text(text).first.bounding_box()
    assert box is not None, text
    return box["y"]


def test_run_until_shows_the_controls_once_and_streams_right_under_upcoming(page: Page) -> None:
    with OpenAIServer(api_key=KEY, policy=slow_story_policy) as server:
        use_server(page, server, key=KEY)
        create_task(page, "What is 2 + 3?")
        click(page, "Run step")  # The model asks for add(2, 3): a tool step is next.
        page.get_by_text("1 step done").wait_for(timeout=30_000)

        page.get_by_role("button", name="Run until").first.click()
        page.get_by_text("Running step").first.wait_for(timeout=30_000)
        page.wait_for_timeout(1_000)  # The answer streams (0.15 s a word) while we look.
        page.screenshot(path=ARTIFACTS / "run-until-streaming.png", full_page=True)

        expect(page.get_by_text("Run until is running")).to_have_count(1)
        assert page.get_by_role("button", name="New task", exact=True).count() == 1
        below = _top(page, "Running step") - _top(page, "Upcoming steps")
        assert 0 < below < 150, f"the streaming step is {below:.0f} px under its heading"
        page.get_by_role("button", name="Finalize", exact=True).first.wait_for(timeout=30_000)


def test_the_abandon_popover_says_what_its_click_did(page: Page) -> None:
    start_arithmetic(page)
    click(page, "Run step")
    page.get_by_role("button", name="Abandon").first.click()
    click(page, "Abandon for good")

    said = page.get_by_test_id("stPopoverBody").get_by_text("Task abandoned. Its steps stay")
    expect(said).to_be_visible(timeout=15_000)
    page.screenshot(path=ARTIFACTS / "abandon-popover-result.png")
    # The rerun that drew the answer may still be replacing the popover's old body.
    expect(page.get_by_role("button", name="Abandon for good")).to_have_count(0, timeout=15_000)


_SCALE = "() => (window.stepwiseDag || {}).network ? window.stepwiseDag.network.getScale() : null"


def test_a_planners_parallel_steps_are_drawn_at_a_readable_size(page: Page) -> None:
    """Its sub-agents side by side made the fitted graph wide: labels were about 8 px high."""
    page.get_by_text("Demo scenarios").wait_for(timeout=30_000)
    page.get_by_role("button", name="Start").nth(2).click()  # The planner with sub-agents.
    click(page, "Run until")
    page.get_by_role("button", name="Finalize", exact=True).first.wait_for(timeout=60_000)
    wait_for_dag(page, lambda nodes: sum(n["status"] == "completed" for n in nodes) == 5)
    page.wait_for_timeout(500)
    page.screenshot(path=ARTIFACTS / "planner-dag.png", full_page=True)

    scale = in_dag_frame(page, _SCALE)
    assert scale is not None and scale >= 0.75, f"drawn at {scale}: 14 px labels at {scale}x"
