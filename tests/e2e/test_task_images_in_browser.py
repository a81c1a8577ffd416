"""An image attached on the New task form, in real headless Chromium: the upload goes through
Streamlit's uploader, the task is created, and the thumbnail shows on the upcoming step and on
the completed step's card (the pixels load from the app's own server)."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image, ImageDraw
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import ARTIFACTS, idle
from .test_stepper_in_browser import groups, wait_for_dag


def choose(page: Page, label: str, option: str) -> None:
    """Pick `option` in the Streamlit selectbox labelled `label` (retried if a rerun closes it)."""
    wanted = page.get_by_role("option", name=option, exact=True)
    for _ in range(3):
        page.get_by_test_id("stSelectbox").filter(has_text=label).first.click()
        try:
            wanted.wait_for(state="visible", timeout=5_000)
            break
        except PlaywrightTimeout:
            continue
    wanted.click()


def swatch(path: Path) -> Path:
    image = Image.new("RGB", (120, 90), "#ff8c00")
    ImageDraw.Draw(image).ellipse((30, 15, 90, 75), fill="#1e90ff")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    path.write_bytes(buffer.getvalue())
    return path


def loaded_images(page: Page) -> int:
    """Images on the page that the browser actually decoded (not broken links)."""
    return page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stImage] img')]"
        ".filter(img => img.complete && img.naturalWidth > 0).length"
    )


def test_an_attached_image_shows_on_the_step_and_its_card(page: Page, tmp_path: Path) -> None:
    page.get_by_text("Demo scenarios").wait_for(timeout=30_000)
    choose(page, "Worker", "ReAct with images")
    idle(page)
    page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(
        str(swatch(tmp_path / "swatch.png"))
    )
    page.get_by_text("swatch.png").first.wait_for(timeout=10_000)
    page.get_by_placeholder("What should the agent do?").fill("What is in this picture?")
    idle(page)
    page.get_by_role("button", name="Create task", exact=True).click()

    page.get_by_role("button", name="Run step", exact=True).first.wait_for(timeout=20_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stImage] img')]"
        ".some(img => img.complete && img.naturalWidth > 0)",
        timeout=10_000,
    )
    assert loaded_images(page) == 1
    wait_for_dag(page, lambda n: groups(n) == ["upcoming"])
    page.screenshot(path=ARTIFACTS / "task-image-upcoming.png", full_page=True)

    page.get_by_role("button", name="Run step", exact=True).first.click()
    card = page.get_by_test_id("stExpander").filter(has_text="Step 1").first
    card.wait_for(timeout=20_000)
    idle(page)
    if not card.get_by_test_id("stImage").count():
        card.locator("summary").first.click()  # Open the card if it is drawn closed.
    card.get_by_test_id("stImage").first.wait_for(timeout=10_000)
    wait_for_dag(page, lambda n: groups(n) == ["completed"])
    page.wait_for_timeout(500)
    assert loaded_images(page) >= 1
    page.screenshot(path=ARTIFACTS / "task-image-card.png", full_page=True)
