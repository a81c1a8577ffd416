"""The scripted demo model: it plays Stepwise's demo scenarios, and answers to steering.

It is not a language model. It picks a scenario by the newest message of a person's that
poses one (so an edited question is followed), and plays that scenario's plan of tool calls
from the conversation it is sent: the results that actually came back, a person's edits and
rejections of its calls, and their feedback, which it acknowledges (it cannot act on requests
in words). The arithmetic scenarios take their numbers from the question. Its reply is a
function of the conversation, so undo and re-run replay it exactly, and every tool, file,
sandbox run, DAG and store in a demo is real. It speaks native tool calls when tools are
offered, else the ReAct text protocol. Anything off-script gets a reply that says it is the
demo model. The scenarios themselves (task, agent, title) are `agent_core.demos`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent_core.llms._demo_conversation import Conversation, ToolResult, read_conversation
from agent_core.llms._demo_plans import (
    Call,
    ToolPlan,
    clip,
    expression,
    operands,
    play_plan,
    react_answer,
    stop_text,
)
from agent_core.llms.base import ChatMessage, ToolSpec
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

_NUMBER = r"(-?\d+(?:\.\d+)?)"
# "(121 * 3) + 42" anywhere in the message, so an edited question with other numbers is played.
_ARITHMETIC = re.compile(rf"\(\s*{_NUMBER}\s*\*\s*{_NUMBER}\s*\)\s*\+\s*{_NUMBER}")
_PARALLEL = re.compile(rf"{_NUMBER}\s*\*\s*{_NUMBER}\s+and\s+{_NUMBER}\s*\+\s*{_NUMBER}")


def _numbers(match: re.Match[str]) -> list[int | float]:
    return [float(n) if "." in n else int(n) for n in match.groups()]


def _unusable(result: ToolResult) -> bool:
    return result.stopped or result.number is None


def _chained(first: ToolResult, second: ToolResult) -> str:
    """`(121 * 4) + 42` when the second call used the first's result, else both steps."""
    found = operands(second)
    if found is not None:
        operator, a, b = found
        if a == first.number:
            return f"({expression(first)}) {operator} {json.dumps(b)}"
        if b == first.number:
            return f"{json.dumps(a)} {operator} ({expression(first)})"
    return f"{expression(first)} = {first.text}; {expression(second)}"


def _arithmetic_answer(c: int | float, results: Sequence[ToolResult]) -> str:
    product = results[0]
    if product.stopped:
        return f"I cannot answer: {stop_text(product)}, and I have no other way to work it out."
    step = f"{expression(product)} = {product.text}"
    if product.number is None:
        return f"{step}, which is not a number, so I cannot add {c} to it."
    total = results[1]
    if total.stopped:
        why = stop_text(total)
        return f"{step}. {why[0].upper()}{why[1:]}, so I stop there."
    return f"{_chained(product, total)} = {total.text}"


def _arithmetic(match: re.Match[str]) -> ToolPlan:
    a, b, c = _numbers(match)
    return ToolPlan(
        stages=(
            lambda _: [Call("multiply", {"a": a, "b": b}, f"First I multiply {a} by {b}.")],
            lambda done: (
                None
                if done[0].number is None
                else [
                    Call("add", {"a": done[0].number, "b": c}, f"Now I add {c} to {done[0].text}.")
                ]
            ),
        ),
        answer=lambda results: _arithmetic_answer(c, results),
    )


def _parallel_answer(results: Sequence[ToolResult]) -> str:
    if len(results) < 3 or any(_unusable(r) for r in results[:2]) or results[2].stopped:
        done = [f"{expression(r)} = {r.text}" for r in results if not r.stopped]
        why = [stop_text(r) for r in results if r.stopped] or ["a result is not a number"]
        lead = "; ".join(done) + ". " if done else ""
        reason = " and ".join(why)
        return f"{lead}{reason[0].upper()}{reason[1:]}, so I did not add the two results."
    first, second, total = results[:3]
    both = f"{expression(first)} = {first.text} and {expression(second)} = {second.text}"
    if total.tool == "add" and total.args == {"a": first.number, "b": second.number}:
        return f"{both}; together {total.text}."
    return f"{both}; {expression(total)} = {total.text}."


def _parallel(match: re.Match[str]) -> ToolPlan:
    x, y, z, w = _numbers(match)
    return ToolPlan(
        stages=(
            lambda _: [
                Call("multiply", {"a": x, "b": y}, f"First I multiply {x} by {y}."),
                Call("add", {"a": z, "b": w}, f"Then I add {z} and {w}."),
            ],
            lambda done: (
                None
                if any(r.number is None for r in done)
                else [
                    Call(
                        "add",
                        {"a": done[0].number, "b": done[1].number},
                        f"Now I add the two results, {done[0].text} and {done[1].text}.",
                    )
                ]
            ),
        ),
        answer=_parallel_answer,
    )


def _one_call(call: Call, done: str) -> Callable[[re.Match[str]], ToolPlan]:
    """A sub-agent's plan: one call, then `done` (or what became of the call)."""

    def answer(results: Sequence[ToolResult]) -> str:
        result = results[0]
        if result.stopped:
            return f"I did not finish: {stop_text(result)}."
        if result.edited:
            return f"You changed my call; {result.tool} returned: {clip(result.text, 300)}"
        return done

    return lambda _: ToolPlan(stages=(lambda _: [call],), answer=answer)


_DONE = "Done. haiku.txt holds the haiku, llama.svg the drawing, and index.html shows both."
_ITEM_RESULT = re.compile(r"^\[(?P<item>[^\]\n]+)\] [^\n]*\nResult: (?P<result>[^\n]*)$", re.M)
_NOTE = re.compile(r"^Note from the user: (?P<note>.*?)(?:\n\nCombine these|\Z)", re.M | re.S)


def _summary(results_text: str, expected: dict[str, str]) -> str:
    """The planner's answer from its agents' results: what went to plan, else what each did."""
    found = {m["item"]: m["result"] for m in _ITEM_RESULT.finditer(results_text)}
    lines = [_DONE] if found == expected else ["Not everything went to plan. The agents report:"]
    if found != expected:
        lines += [f"- {item}: {clip(result, 300)}" for item, result in found.items()]
    note = _NOTE.search(results_text)
    if note is not None:
        lines.append(
            f'You wrote "{clip(note["note"])}"; as the scripted demo model I can only report '
            "what the agents did."
        )
    return "\n".join(lines)


Play = Callable[[re.Match[str], Conversation, bool], Reply]


@dataclass(frozen=True)
class _Script:
    question: re.Pattern[str]
    """A person's message poses this scenario when the pattern is found in it."""
    play: Play


def _plan_script(make: Callable[[re.Match[str]], ToolPlan]) -> Play:
    def play(match: re.Match[str], conversation: Conversation, native: bool) -> Reply:
        return play_plan(make(match), conversation, native=native, model=DEMO_MODEL_NAME)

    return play


def _opening(text: str) -> re.Pattern[str]:
    """A question that starts with `text` (a sub-agent's prompt, say)."""
    return re.compile(r"\A" + re.escape(text))


_SUB_ANSWERS = {
    "haiku": "Saved the haiku to haiku.txt.",
    "drawing": "Drew the llama in llama.svg.",
    "page": "Wrote index.html showing the haiku and the drawing.",
}


def _planner(match: re.Match[str], conversation: Conversation, native: bool) -> Reply:
    if conversation.replies == 0:
        return json.dumps(_PLAN, indent=2)
    return _summary(conversation.last_message, _SUB_ANSWERS)


def _sub_agent(item: int, tool: str, args: dict[str, object], thought: str) -> _Script:
    prompt = str(_PLAN["plan"][item]["prompt"])
    done = _SUB_ANSWERS[str(_PLAN["plan"][item]["id"])]
    return _Script(_opening(prompt), _plan_script(_one_call(Call(tool, args, thought), done)))


_SCRIPTS = (
    _Script(_ARITHMETIC, _plan_script(_arithmetic)),
    _Script(_PARALLEL, _plan_script(_parallel)),
    _Script(_opening(HAIKU_TASK), _planner),
    _sub_agent(
        0, "write_file", {"path": "haiku.txt", "content": _HAIKU}, "I write the haiku to the file."
    ),
    _sub_agent(
        1,
        "make_image",
        {"description": "a friendly llama on a green hill", "path": "llama.svg"},
        "I draw the llama.",
    ),
    _Script(_opening("a friendly llama on a green hill"), lambda *_: _LLAMA_SVG),
    _sub_agent(2, "run_python", {"code": _PAGE_CODE}, "I generate the page with Python."),
)

OFF_SCRIPT = react_answer(
    "I am the scripted demo model, so I only know the built-in scenarios. Pick a scenario, "
    "type the replies yourself in 'you are the model' mode, or set up an OpenAI or Anthropic "
    "model to use a real one."
)


def _poses_a_scenario(text: str) -> bool:
    return any(script.question.search(text) for script in _SCRIPTS)


def _reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> Reply:
    conversation = read_conversation(messages, _poses_a_scenario)
    if conversation is None:
        return OFF_SCRIPT
    for script in _SCRIPTS:
        match = script.question.search(conversation.question)
        if match is not None:
            return script.play(match, conversation, bool(tools))
    return OFF_SCRIPT


def demo_llm() -> FunctionLLM:
    """The scripted demo model (named as such wherever a model name is shown)."""
    return FunctionLLM(_reply, model=DEMO_MODEL_NAME, free=True)
