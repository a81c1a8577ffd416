"""The scripted demo model: fixed replies that play Stepwise's demo scenarios.

It is not a language model: it replies from a script, chosen by the first user message of the
conversation it is sent, and it moves through the script by counting the replies it already
gave in that conversation. So undo and re-run replay the same reply, and every tool, file,
sandbox run, DAG and store in a demo is real. Anything off-script gets a reply that says it is
the demo model. The scenarios themselves (task, agent, title) are `agent_core.demos`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from agent_core.llms.base import ChatMessage, ChatResponse, ToolCall
from agent_core.llms.scripted import FunctionLLM, Reply

__all__ = [
    "ARITHMETIC_TASK",
    "DEMO_MODEL_NAME",
    "HAIKU_TASK",
    "OFF_SCRIPT",
    "PARALLEL_TASK",
    "demo_llm",
]

DEMO_MODEL_NAME = "demo (scripted)"


@dataclass(frozen=True)
class _Script:
    opening: str
    """The script plays when the conversation's first user message starts with this."""
    replies: Sequence[Reply]


def _react(thought: str, tool: str, args: dict[str, object]) -> str:
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {json.dumps(args)}"


def _answer(text: str) -> str:
    return f"Thought: I can answer without using any more tools.\nAnswer: {text}"


def _calls(*calls: tuple[str, str, dict[str, object]], text: str = "") -> ChatResponse:
    tool_calls = tuple(ToolCall(id=i, name=n, args=a) for i, n, a in calls)
    return ChatResponse(
        message=ChatMessage(role="assistant", content=text, tool_calls=tool_calls),
        model=DEMO_MODEL_NAME,
    )


ARITHMETIC_TASK = "What is (121 * 3) + 42?"
PARALLEL_TASK = "What are 12 * 7 and 5 + 9? Then add the two results."
HAIKU_TASK = (
    "Write a haiku about llamas and save it to haiku.txt, draw a llama as llama.svg, then "
    "make index.html that shows both."
)

_HAIKU = "Soft wool on the wind\nhigh above the quiet clouds\na llama hums home"
_LLAMA_SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 200">
<rect width="200" height="200" fill="#dff3ff"/>
<rect y="150" width="200" height="50" fill="#9ccc65"/>
<ellipse cx="95" cy="120" rx="50" ry="28" fill="#f3e5c0"/>
<rect x="128" y="52" width="16" height="70" rx="7" fill="#f3e5c0"/>
<ellipse cx="142" cy="50" rx="18" ry="12" fill="#f3e5c0"/>
<ellipse cx="134" cy="38" rx="4" ry="9" fill="#e8d7a8"/><circle cx="148" cy="47" r="2.5"/>
<rect x="60" y="138" width="10" height="32" fill="#e8d7a8"/>
<rect x="80" y="140" width="10" height="30" fill="#e8d7a8"/>
<rect x="105" y="140" width="10" height="30" fill="#e8d7a8"/>
<rect x="125" y="138" width="10" height="32" fill="#e8d7a8"/>
</svg>"""
_PAGE_CODE = """import html, pathlib
haiku = pathlib.Path("haiku.txt").read_text()
page = (
    "<!doctype html><meta charset='utf-8'><title>A llama haiku</title>"
    "<h1>A llama haiku</h1><pre>" + html.escape(haiku) + "</pre>"
    "<img src='llama.svg' alt='a llama' width='240'>"
)
pathlib.Path("index.html").write_text(page)
print("wrote index.html with", len(haiku.splitlines()), "lines of haiku")"""

_PLAN = {
    "plan": [
        {
            "id": "haiku",
            "agent": "file",
            "prompt": "Write a haiku about llamas and save it to haiku.txt.",
            "depends_on": [],
        },
        {
            "id": "drawing",
            "agent": "image",
            "prompt": "Draw a friendly llama and save it as llama.svg.",
            "depends_on": [],
        },
        {
            "id": "page",
            "agent": "code",
            "prompt": "Make index.html showing the haiku in haiku.txt and the picture llama.svg.",
            "depends_on": ["haiku", "drawing"],
        },
    ]
}

_SCRIPTS = (
    _Script(
        ARITHMETIC_TASK,
        [
            _react("First I multiply 121 by 3.", "multiply", {"a": 121, "b": 3}),
            _react("Now I add 42 to 363.", "add", {"a": 363, "b": 42}),
            _answer("(121 * 3) + 42 = 405"),
        ],
    ),
    _Script(
        PARALLEL_TASK,
        [
            _calls(("c1", "multiply", {"a": 12, "b": 7}), ("c2", "add", {"a": 5, "b": 9})),
            _calls(("c3", "add", {"a": 84, "b": 14})),
            ChatResponse(
                message=ChatMessage(
                    role="assistant", content="12 * 7 = 84 and 5 + 9 = 14; together 98."
                ),
                model=DEMO_MODEL_NAME,
            ),
        ],
    ),
    _Script(
        HAIKU_TASK,
        [
            json.dumps(_PLAN, indent=2),
            "Done. haiku.txt holds the haiku, llama.svg the drawing, and index.html shows both.",
        ],
    ),
    _Script(
        _PLAN["plan"][0]["prompt"],
        [
            _react(
                "I write the haiku to the file.",
                "write_file",
                {"path": "haiku.txt", "content": _HAIKU},
            ),
            _answer("Saved the haiku to haiku.txt."),
        ],
    ),
    _Script(
        _PLAN["plan"][1]["prompt"],
        [
            _react(
                "I draw the llama.",
                "make_image",
                {"description": "a friendly llama on a green hill", "path": "llama.svg"},
            ),
            _answer("Drew the llama in llama.svg."),
        ],
    ),
    _Script("a friendly llama on a green hill", [_LLAMA_SVG]),
    _Script(
        _PLAN["plan"][2]["prompt"],
        [
            _react("I generate the page with Python.", "run_python", {"code": _PAGE_CODE}),
            _answer("Wrote index.html showing the haiku and the drawing."),
        ],
    ),
)

OFF_SCRIPT = _answer(
    "I am the scripted demo model, so I only know the built-in scenarios. Pick a scenario, "
    "type the replies yourself in 'you are the model' mode, or set up an OpenAI or Anthropic "
    "model to use a real one."
)


def _first_user_message(messages: Sequence[ChatMessage]) -> str:
    return next((m.content for m in messages if m.role == "user"), "")


def _reply(messages: list[ChatMessage], tools: object) -> Reply:
    opening = _first_user_message(messages)
    script = next((s for s in _SCRIPTS if opening.startswith(s.opening)), None)
    if script is None:
        return OFF_SCRIPT
    given = sum(1 for m in messages if m.role == "assistant")
    return script.replies[given] if given < len(script.replies) else OFF_SCRIPT


def demo_llm() -> FunctionLLM:
    """The scripted demo model (named as such wherever a model name is shown)."""
    return FunctionLLM(_reply, model=DEMO_MODEL_NAME)
