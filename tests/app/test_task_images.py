"""Images on a task, and pipeline components on a step card, as the app shows them.

The upload flows drive the whole app (`app.py`) and check the store; the cards are drawn on
their own page with `AppTest.from_function`, from a real pipeline run.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from PIL import Image
from streamlit.testing.v1 import AppTest

from agent_core import AgentRunner
from agent_core.llms.content import MAX_IMAGE_BYTES
from agent_core.store import SQLiteStore
from agent_core.types import TaskStepOutput
from agent_core.workers import PipelineReply, QueryPipelineAgentWorker
from agent_core.workers.multimodal_react import step_images
from agent_core.workers.pipeline import Pipeline

from .conftest import only_task_state, stored

HOSTILE = "<img src=x onerror=alert(1)>**bold**"


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def picture(fmt: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), "orange").save(buffer, format=fmt)
    return buffer.getvalue()


def images_shown(at: AppTest) -> list[Any]:
    """The `st.image` elements on the page (AppTest has no typed accessor for them)."""
    return list(at.get("image"))


def fill_form(at: AppTest, text: str, *files: tuple[str, bytes, str]) -> AppTest:
    ok(at.run())
    at.selectbox(key="form-worker").set_value("multimodal_react").run()
    at.file_uploader(key="form-images").set_value(list(files))
    at.text_area(key="form-task").input(text)
    (create,) = [b for b in at.button if b.label == "Create task"]
    create.click().run()
    return ok(at)


def test_only_the_images_worker_offers_the_uploader(app: AppTest) -> None:
    ok(app.run())
    assert not app.file_uploader  # ReAct, the default, reads text only

    app.selectbox(key="form-worker").set_value("multimodal_react").run()

    (uploader,) = app.file_uploader
    assert uploader.label == "Images (optional)"
    assert set(uploader.allowed_type) >= {".png", ".jpg", ".jpeg", ".gif", ".webp"}


def test_an_attached_image_is_stored_with_the_task_and_shown_on_its_steps(
    app: AppTest, db_path: Path
) -> None:
    png = picture()
    fill_form(app, "What colour is this?", ("swatch.png", png, "image/png"))

    state = only_task_state(db_path)
    assert state.task.spec and state.task.spec["worker"] == "multimodal_react"
    (first,) = state.step_queue
    assert [(i.name, i.to_bytes()) for i in step_images(first)] == [("swatch.png", png)]
    assert len(images_shown(ok(app))) == 1  # the upcoming step shows its thumbnail

    run = next(b for b in app.button if b.key and b.key.startswith("run-"))
    ok(run.click().run())

    after = stored(db_path, state.task_id)
    assert len(after.completed) == 1
    (card,) = [e for e in app.expander if e.label.startswith("Step 1")]
    assert len(list(card.get("image"))) == 1  # and the completed step's card keeps it


def test_a_file_that_is_not_an_image_is_refused_on_the_form(app: AppTest, db_path: Path) -> None:
    fill_form(app, "Look", ("notes.png", b"just text, renamed", "image/png"))

    assert any("is not a PNG, JPEG, GIF or WebP image" in e.value for e in app.error)
    store = SQLiteStore(db_path)
    try:
        assert store.list_tasks() == []
    finally:
        store.close()


def test_an_image_over_the_limit_is_refused_with_the_limit(app: AppTest, db_path: Path) -> None:
    big = picture() + b"\0" * MAX_IMAGE_BYTES
    fill_form(app, "Look", ("big.png", big, "image/png"))

    assert any("an image may be at most 3.75 MB" in e.value for e in app.error)
    store = SQLiteStore(db_path)
    try:
        assert store.list_tasks() == []
    finally:
        store.close()


# --------------------------------------------------------------------------- pipeline cards


def _pipeline_output() -> TaskStepOutput:
    pipeline = (
        Pipeline(args=("input",))
        .add("clean", lambda text: text.strip(), inputs={"text": "input"})
        .add("echo", lambda text: f"{text} {HOSTILE}", inputs={"text": "clean"})
        .add("reply", lambda said: PipelineReply(said, done=True), inputs={"said": "echo"})
    )
    agent = AgentRunner(QueryPipelineAgentWorker(pipeline))
    task = agent.create_task("  hello  ")
    return agent.run_step(task.task_id)


def _draw(output: TaskStepOutput) -> AppTest:
    def page(dumped: str) -> None:
        from agent_core.types import TaskStepOutput
        from stepwise.app.components.step_card import render_step_card

        render_step_card(TaskStepOutput.model_validate_json(dumped), expanded=True)

    at = AppTest.from_function(page, args=(output.model_dump_json(),))
    return ok(at.run())


def test_a_pipeline_step_card_draws_each_component_with_its_output_as_text() -> None:
    at = _draw(_pipeline_output())

    captions = [c.value for c in at.caption if c.value.startswith("Component")]
    assert [c.split(":")[0] for c in captions] == [
        "Component 1 of 3",
        "Component 2 of 3",
        "Component 3 of 3",
    ]
    assert all(c.endswith(" ms") for c in captions)
    assert "clean" in captions[0] and "echo" in captions[1]
    codes = [c.value for c in at.code]
    assert "hello" in codes  # the clean component's output
    assert f"hello {HOSTILE}" in codes  # model-like text stays text, in a code block
    assert not [m for m in at.markdown if "<img" in m.value]  # never rendered as markup
