"""`MultimodalReActAgentWorker`: a ReAct agent whose task carries images the model sees.

The images come with the task (`runner.create_task("What is in this picture?", images=[...])`)
and are stored in the first step's `step_state`, once, as JSON like everything else. That step
puts them into memory beside its text, in the user message that opens the task, so every
later reasoning step sends them again and the model keeps seeing them. The prompt format and
the parser are the ReAct worker's: only the opening message differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from agent_core.errors import UserError
from agent_core.llms.base import ChatMessage
from agent_core.llms.content import ImagePart
from agent_core.types import Task, TaskStep
from agent_core.workers.react import ReActAgentWorker

__all__ = ["MAX_TASK_IMAGES", "ImageInput", "MultimodalReActAgentWorker", "step_images"]

MAX_TASK_IMAGES = 8
"""Images one task may carry (each at most `agent_core.llms.content.MAX_IMAGE_BYTES`)."""

IMAGES_KEY = "images"
"""Where a step's `step_state` keeps the images its input shows the model."""

ImageInput = ImagePart | bytes | str | Path
"""An image as `create_task(images=...)` takes it: a part, a file's bytes, or a file's path."""

_IMAGES = TypeAdapter(list[ImagePart])


def _image_part(image: ImageInput) -> ImagePart:
    if isinstance(image, ImagePart):
        return image
    if isinstance(image, bytes):
        return ImagePart.from_bytes(image)
    if isinstance(image, str | Path):
        return ImagePart.from_path(image)
    raise UserError(
        f"an image must be an ImagePart, bytes or a file path, got {type(image).__name__}"
    )


def _image_parts(images: Iterable[ImageInput]) -> list[ImagePart]:
    parts = [_image_part(image) for image in images]
    if len(parts) > MAX_TASK_IMAGES:
        raise UserError(
            f"a task may carry at most {MAX_TASK_IMAGES} images, got {len(parts)}",
            hint="attach fewer, or combine them into one picture",
            remedy="shorten",
        )
    return parts


def step_images(step: TaskStep) -> list[ImagePart]:
    """The images `step`'s input shows the model ([] for most steps, and for damaged state)."""
    stored = step.step_state.get(IMAGES_KEY)
    if not stored:
        return []
    try:
        return _IMAGES.validate_python(stored)
    except ValidationError:
        return []


class MultimodalReActAgentWorker(ReActAgentWorker):
    """A ReAct agent over a model that reads images (OpenAI and Anthropic vision models).

    It takes the same arguments as `ReActAgentWorker`. Give a task its images with
    `runner.create_task(text, images=[...])`: `ImagePart`s, file bytes or file paths (PNG,
    JPEG, GIF or WebP, at most `MAX_TASK_IMAGES`).
    """

    _worker_name = "MultimodalReActAgentWorker"

    def initialize_step(
        self, task: Task, *, images: Sequence[ImageInput] = (), **kwargs: Any
    ) -> TaskStep:
        """The first reasoning step, holding the task's images in its `step_state`."""
        step = super().initialize_step(task, **kwargs)
        parts = _image_parts(images)
        if parts:
            step.step_state[IMAGES_KEY] = [part.model_dump(mode="json") for part in parts]
        return step

    @staticmethod
    def _put_input(step: TaskStep, task: Task) -> None:
        """The step's text and images join memory as one user message."""
        images = step_images(step)
        if not images:
            ReActAgentWorker._put_input(step, task)
            return
        if step.input is not None and not isinstance(step.input, str):
            raise UserError("a reasoning step's input must be text (or empty)")
        task.memory.put(ChatMessage(role="user", content=step.input or "", parts=tuple(images)))

    def finalize_task(self, task: Task, **kwargs: Any) -> list[ChatMessage]:
        """The question, with its images, and the answer join the conversation."""
        messages = super().finalize_task(task, **kwargs)
        shown = [m for m in task.memory.get_all()[task.history_length :] if m.images]
        if not shown or not messages or messages[0].role != "user":
            return messages
        # Later tasks in the conversation ("and what colour is it?") still see the picture.
        question = ChatMessage(role="user", content=messages[0].content, parts=shown[0].images)
        return [question, *messages[1:]]
