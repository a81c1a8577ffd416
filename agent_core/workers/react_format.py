"""The ReAct text protocol: the system prompt that teaches it, and the parser of replies.

Compatible with LlamaIndex's format: `Thought: ... / Action: tool / Action Input: {json}` or
`Thought: ... / Answer: ...`. `Action` wins over `Answer`; text with neither is the answer.
The parser never raises anything but `ReActParseError`, whose message is written for the model.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from agent_core._nesting import MAX_NESTING, too_deep
from agent_core.llms.base import ToolSpec

__all__ = [
    "ReActAction",
    "ReActAnswer",
    "ReActParseError",
    "parse_react_output",
    "split_action",
    "split_answer",
    "system_prompt",
]

# Line starts take only spaces and tabs before the keyword: with `\s*`, every line of a run of
# blank lines would rescan the rest of the run, quadratic in its length (40,000 newlines: 39 s).
_ACTION = re.compile(r"^[ \t]*Action[ \t]*:[ \t]*(?P<tool>[^\n]*)$", re.MULTILINE | re.IGNORECASE)
_ACTION_INPUT = re.compile(r"^[ \t]*Action[ \t]+Input[ \t]*:[ \t]*", re.MULTILINE | re.IGNORECASE)
_ANSWER = re.compile(r"^[ \t]*(?:Final[ \t]+)?Answer[ \t]*:[ \t]*", re.MULTILINE | re.IGNORECASE)
_THOUGHT = re.compile(r"^\s*Thought\s*:[ \t]*", re.IGNORECASE)

_SPACES = re.compile(r"\s*")
# The tool's name is the Action line's first word: models add notes ("add (add two numbers)").
_TOOL_NAME = re.compile(r"[^\s()]+")
_DECODER = json.JSONDecoder()

FORMAT_REMINDER = (
    "Reply in the format:\nThought: <your reasoning>\nAction: <tool name>\n"
    'Action Input: <a JSON object, e.g. {"a": 1}>\n'
    "or, when you can answer:\nThought: <your reasoning>\nAnswer: <your answer>"
)


class ReActParseError(ValueError):
    """The reply follows neither form; the message tells the model how to fix it."""


class ReActAction(BaseModel):
    """The model asks to call a tool."""

    kind: Literal["action"] = "action"
    thought: str
    tool: str
    args: dict[str, Any]


class ReActAnswer(BaseModel):
    """The model gives its final answer."""

    kind: Literal["answer"] = "answer"
    thought: str
    answer: str


def _thought_before(text: str, end: int) -> str:
    head = text[:end].strip()
    return _THOUGHT.sub("", head, count=1).strip()


def _code_positions(text: str, start: int = 0) -> Iterator[int]:
    """Indexes of the characters of `text` that are outside string literals."""
    quote, escaped = "", False
    for i in range(start, len(text)):
        char = text[i]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        else:
            yield i


def _json_object_at(text: str) -> str:
    """The first balanced `{...}` in `text`, honouring strings; raises if there is none."""
    start = text.find("{")
    if start < 0:
        raise ReActParseError(
            "Action Input is not a JSON object (no '{' found). " + FORMAT_REMINDER
        )
    depth = 0
    for i in _code_positions(text, start):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    raise ReActParseError("Action Input has an unclosed '{'. " + FORMAT_REMINDER)


def _strip_trailing_commas(text: str) -> str:
    """Drop commas that close a JSON object or array, leaving string contents alone."""
    drop = set()
    for i in _code_positions(text):
        if text[i] == ",":
            after = _SPACES.match(text, i + 1)
            end = after.end() if after else i + 1
            if text[end : end + 1] in ("}", "]"):
                drop.add(i)
    return "".join(char for i, char in enumerate(text) if i not in drop)


def _strip_comments(text: str) -> str:
    """`text` without its `/* ... */` comments outside strings.

    Models annotate their JSON; LlamaIndex's parser tolerates it, so Stepwise's does too.
    """
    code = set(_code_positions(text))
    out, i = [], 0
    while i < len(text):
        if i in code and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _bounded(args: dict[str, Any]) -> dict[str, Any]:
    """`args`, unless nested too deep to store and load again: then an error the model reads."""
    if too_deep(args):
        raise ReActParseError(
            f"the Action Input nests more than {MAX_NESTING} levels deep; send flatter "
            "arguments. " + FORMAT_REMINDER
        )
    return args


def parse_action_input(raw: str) -> dict[str, Any]:
    """Parse an Action Input leniently: JSON, then without trailing commas, then Python."""
    start = raw.find("{")
    if start >= 0:
        # Fast path: well-formed JSON, decoded in C without scanning it first.
        try:
            value, _ = _DECODER.raw_decode(raw, start)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            return _bounded(value)
    candidate = _json_object_at(raw)
    if "/*" in candidate:
        candidate = _strip_comments(candidate)
    attempts = (
        lambda: json.loads(candidate),
        lambda: json.loads(_strip_trailing_commas(candidate)),
        lambda: ast.literal_eval(candidate),  # Single quotes, True/False/None.
    )
    for attempt in attempts:
        try:
            value = attempt()
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return _bounded(value)
    raise ReActParseError(
        f"Could not parse Action Input {candidate[:200]!r} as a JSON object. " + FORMAT_REMINDER
    )


def split_action(text: str) -> tuple[str, str, str] | None:
    """A reply's thought, tool name and raw Action Input text; None if it has no Action line."""
    action = _ACTION.search(text)
    if action is None:
        return None
    named = _TOOL_NAME.match(action.group("tool").strip().strip("`'\""))
    if named is None:
        raise ReActParseError("The Action line names no tool. " + FORMAT_REMINDER)
    tool = named.group().strip("`'\"")
    after = text[action.end() :]
    action_input = _ACTION_INPUT.search(after)
    if action_input is None:
        raise ReActParseError(f"Action {tool!r} has no 'Action Input:' line. " + FORMAT_REMINDER)
    return _thought_before(text, action.start()), tool, after[action_input.end() :]


def split_answer(text: str) -> tuple[str, str] | None:
    """A reply's thought and answer; None if it has no Answer line."""
    answer = _ANSWER.search(text)
    if answer is None:
        return None
    return _thought_before(text, answer.start()), text[answer.end() :].strip()


def parse_react_output(text: str) -> ReActAction | ReActAnswer:
    """Parse one model reply in the ReAct format."""
    action = split_action(text)
    if action is not None:
        thought, tool, raw_input = action
        return ReActAction(thought=thought, tool=tool, args=parse_action_input(raw_input))
    answer = split_answer(text)
    if answer is not None:
        return ReActAnswer(thought=answer[0], answer=answer[1])
    return ReActAnswer(thought="", answer=_THOUGHT.sub("", text.strip(), count=1).strip())


def _describe(tool: ToolSpec) -> str:
    args = json.dumps(tool.parameters.get("properties", {}), ensure_ascii=False)
    return f"> Tool Name: {tool.name}\nTool Description: {tool.description}\nTool Args: {args}\n"


def system_prompt(tools: Sequence[ToolSpec], *, instructions: str = "") -> str:
    """The system message that teaches the model the tools and the reply format."""
    names = ", ".join(t.name for t in tools) or "(no tools)"
    parts = [
        instructions or "You answer the user's question step by step, using tools when useful.",
        "## Tools\nYou may use these tools:\n" + ("\n".join(_describe(t) for t in tools) or "none"),
        "## Format\nTo use a tool, reply with exactly:\n"
        "Thought: <why this tool>\n"
        f"Action: <one of: {names}>\n"
        'Action Input: <the arguments as a JSON object, e.g. {"a": 2, "b": 3}>\n\n'
        "You will then see 'Observation: <the tool's result>'. Repeat as needed. When you can "
        "answer without more tools, reply with:\n"
        "Thought: I can answer without using any more tools.\n"
        "Answer: <your answer>",
    ]
    return "\n\n".join(parts)
