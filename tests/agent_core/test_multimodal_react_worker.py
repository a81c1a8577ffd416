"""MultimodalReActAgentWorker: a task's images reach the model, are stored once, and survive undo.

The provider tests run the worker through the real SDKs against the loopback servers and read
the request bodies they recorded: the image must arrive in each provider's own wire format.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from agent_core import AgentRunner
from agent_core.errors import UserError
from agent_core.llms import ChatMessage, FunctionLLM, ImagePart, ScriptedLLM, TextPart
from agent_core.llms.anthropic import AnthropicLLM
from agent_core.llms.content import MAX_IMAGE_BYTES
from agent_core.llms.openai import OpenAILLM
from agent_core.store import SQLiteStore
from agent_core.tools import FunctionTool
from agent_core.workers import MultimodalReActAgentWorker
from agent_core.workers.multimodal_react import MAX_TASK_IMAGES, step_images
from tests.llm_servers import (
    AnthropicServer,
    OpenAIServer,
    anthropic_server_fixture,  # noqa: F401 - a fixture
    openai_server_fixture,  # noqa: F401 - a fixture
)

from .conftest import action, answer

QUESTION = "What is in this picture?"
KEY = "sk-loopback-img"


def picture(fmt: str = "PNG", colour: str = "red", size: tuple[int, int] = (8, 6)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format=fmt)
    return buffer.getvalue()


def count_pixels(tool_input: str) -> int:
    """Count the pixels of a described picture (a stand-in tool)."""
    return len(tool_input)


def make(replies: list[str], **kwargs) -> tuple[AgentRunner, ScriptedLLM]:
    llm = ScriptedLLM(replies)
    tools = [FunctionTool.from_defaults(fn=count_pixels)]
    return AgentRunner(MultimodalReActAgentWorker.from_tools(tools, llm=llm), **kwargs), llm


# ------------------------------------------------------------------------- the model sees it


def test_the_first_reasoning_step_shows_the_model_the_task_text_and_its_images() -> None:
    agent, llm = make([answer("A red square.")])
    png, jpeg = picture(), picture("JPEG", "blue")
    task = agent.create_task(QUESTION, images=[png, ImagePart.from_bytes(jpeg, name="b.jpg")])

    out = agent.run_step(task.task_id)

    assert out.is_last and out.output == "A red square."
    (asked,) = [m for m in llm.requests[0] if m.role == "user"]
    assert asked.content == QUESTION  # every reader of `.content` still gets the text
    assert [type(p) for p in asked.parts] == [TextPart, ImagePart, ImagePart]
    assert [i.to_bytes() for i in asked.images] == [png, jpeg]
    assert [i.mime_type for i in asked.images] == ["image/png", "image/jpeg"]
    assert llm.exhausted


def test_later_steps_keep_showing_the_images_and_observations_stay_text() -> None:
    agent, llm = make([action("count_pixels", '{"tool_input": "red"}'), answer("3")])
    task = agent.create_task(QUESTION, images=[picture()])

    agent.run_step(task.task_id)
    agent.run_step(task.task_id)

    second = llm.requests[1]
    assert [len(m.images) for m in second if m.role == "user"] == [1, 0]
    assert second[-1].content == "Observation: 3"
    assert agent.finalize_response(task.task_id).response == "3"


def test_a_file_path_is_an_image_named_after_its_file(tmp_path: Path) -> None:
    path = tmp_path / "cat.gif"
    path.write_bytes(picture("GIF"))
    agent, _ = make([answer("A cat.")])

    task = agent.create_task(QUESTION, images=[path])

    (image,) = step_images(agent.get_upcoming_steps(task.task_id)[0])
    assert (image.name, image.mime_type) == ("cat.gif", "image/gif")


def test_a_task_without_images_is_a_plain_react_task() -> None:
    agent, llm = make([answer("Nothing to see.")])
    task = agent.create_task(QUESTION)

    agent.run_step(task.task_id)

    assert all(not m.parts for m in llm.requests[0])
    assert agent.get_completed_steps(task.task_id)[0].task_step.step_state == {}


# --------------------------------------------------------------------------- limits, errors


def test_an_image_over_the_limit_is_refused_with_its_size_and_the_limit() -> None:
    agent, _ = make([])
    huge = picture() + b"\0" * MAX_IMAGE_BYTES

    with pytest.raises(UserError, match=r"is 3\.75 MB; an image may be at most 3\.75 MB"):
        agent.create_task(QUESTION, images=[huge])
    assert agent.list_tasks() == []


def test_a_file_that_is_not_an_image_is_refused_before_the_task_exists(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a picture")
    agent, _ = make([])

    with pytest.raises(UserError, match=r"'notes\.txt' is not a PNG, JPEG, GIF or WebP image"):
        agent.create_task(QUESTION, images=[notes])
    assert agent.list_tasks() == []


def test_too_many_images_are_refused() -> None:
    agent, _ = make([])

    with pytest.raises(UserError, match=f"at most {MAX_TASK_IMAGES} images"):
        agent.create_task(QUESTION, images=[picture()] * (MAX_TASK_IMAGES + 1))


def test_an_image_part_with_a_wrong_type_or_broken_data_does_not_load() -> None:
    data = base64.b64encode(picture()).decode()
    with pytest.raises(ValueError, match="bytes are image/png, not image/jpeg"):
        ImagePart(mime_type="image/jpeg", data=data)
    with pytest.raises(ValueError, match="must be base64"):
        ImagePart(mime_type="image/png", data=data[:-3] + "!==")


def test_only_a_user_message_may_hold_images_and_content_must_match_parts() -> None:
    image = ImagePart.from_bytes(picture())
    with pytest.raises(ValueError, match="only a user message can show images"):
        ChatMessage(role="assistant", parts=(image,))
    with pytest.raises(ValueError, match="content must be the text of its parts"):
        ChatMessage(role="user", content="a", parts=(TextPart(text="b"), image))
    built = ChatMessage(role="user", parts=(TextPart(text="look"), image))
    assert built.content == "look"


# ----------------------------------------------------------------- stored, undone, finalized


def test_images_are_stored_with_the_task_and_shown_again_after_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "stepwise.db"
    png = picture()
    agent, _ = make([action("count_pixels", '{"tool_input": "x"}')], store=SQLiteStore(db))
    task = agent.create_task(QUESTION, images=[png])
    agent.run_step(task.task_id)

    again, llm = make([answer("1")], store=SQLiteStore(db))
    first = again.get_completed_steps(task.task_id)[0]
    again.run_step(task.task_id)

    assert [i.to_bytes() for i in step_images(first.task_step)] == [png]
    assert [i.to_bytes() for m in llm.requests[0] for i in m.images] == [png]
    sent = again.get_messages_sent(task.task_id, first.task_step.step_id)
    assert [i.to_bytes() for m in sent for i in m.images] == [png]


def test_undoing_the_first_step_keeps_its_images_for_the_rerun() -> None:
    png = picture()
    agent, llm = make([answer("Red."), answer("Still red.")])
    task = agent.create_task(QUESTION, images=[png])
    agent.run_step(task.task_id)

    again = agent.undo_step(task.task_id)
    assert [i.to_bytes() for i in step_images(again)] == [png]
    assert agent.get_task(task.task_id).memory.get_all() == []
    out = agent.run_step(task.task_id, input="What colour is it?")

    assert out.output == "Still red."
    (asked,) = [m for m in llm.requests[1] if m.role == "user"]
    assert asked.content == "What colour is it?" and len(asked.images) == 1


def test_the_conversation_keeps_the_picture_for_the_next_question() -> None:
    png = picture()
    seen: list[list[ChatMessage]] = []

    def reply(messages: list[ChatMessage], tools: object) -> str:
        seen.append(list(messages))
        return answer("Red.")

    worker = MultimodalReActAgentWorker.from_tools([], llm=FunctionLLM(reply))
    agent = AgentRunner(worker)
    agent.chat(QUESTION, images=[png])
    agent.chat("And its shape?")

    history = [m for m in seen[1] if m.role == "user"]
    assert [len(m.images) for m in history] == [1, 0]
    assert history[0].content == QUESTION


# ---------------------------------------------------------------------------- on the wire


def test_openai_gets_each_image_as_an_image_url_data_part(openai_server: OpenAIServer) -> None:
    png = picture()
    openai_server.script(answer("A red square."))
    llm = OpenAILLM(model="gpt-4o-mini", api_key=KEY, base_url=openai_server.url + "/v1")
    agent = AgentRunner(MultimodalReActAgentWorker.from_tools([], llm=llm))
    task = agent.create_task(QUESTION, images=[png])

    assert agent.run_step(task.task_id).output == "A red square."

    (request,) = openai_server.model_requests
    user = [m for m in request.json["messages"] if m["role"] == "user"]
    assert user == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": QUESTION},
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()},
                },
            ],
        }
    ]


def test_anthropic_gets_each_image_as_a_base64_image_block(
    anthropic_server: AnthropicServer,
) -> None:
    webp = picture("WEBP")
    anthropic_server.script(answer("A red square."))
    llm = AnthropicLLM(model="claude-sonnet-5", api_key=KEY, base_url=anthropic_server.url)
    agent = AgentRunner(MultimodalReActAgentWorker.from_tools([], llm=llm))
    task = agent.create_task(QUESTION, images=[webp])

    assert agent.run_step(task.task_id).output == "A red square."

    (request,) = anthropic_server.model_requests
    assert request.json["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": QUESTION},
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/webp",
                        "data": base64.b64encode(webp).decode(),
                    },
                },
            ],
        }
    ]
