from __future__ import annotations

import random

import pytest

from agent_core.llms.base import ToolSpec
from agent_core.workers.react_format import (
    FORMAT_REMINDER,
    ReActAction,
    ReActAnswer,
    ReActParseError,
    parse_action_input,
    parse_react_output,
    system_prompt,
)

# --- Actions -----------------------------------------------------------------------------


def test_action_with_json_input_parses_tool_args_and_thought() -> None:
    reply = 'Thought: I need to multiply.\nAction: multiply\nAction Input: {"a": 121, "b": 3}'

    result = parse_react_output(reply)

    assert result == ReActAction(
        thought="I need to multiply.", tool="multiply", args={"a": 121, "b": 3}
    )


def test_action_keywords_are_case_insensitive_and_tolerate_spacing() -> None:
    reply = 'thought : look it up\n  action :  `search`\n  action input :  {"q": "x"}\n'

    result = parse_react_output(reply)

    assert isinstance(result, ReActAction)
    assert (result.tool, result.args, result.thought) == ("search", {"q": "x"}, "look it up")


def test_action_input_on_the_next_line_and_followed_by_more_text() -> None:
    reply = 'Thought: t\nAction: add\nAction Input:\n{"a": 1}\nObservation: {"not": "mine"}'

    result = parse_react_output(reply)

    assert isinstance(result, ReActAction)
    assert result.args == {"a": 1}


def test_action_wins_over_answer_whichever_comes_first() -> None:
    action_first = 'Thought: t\nAction: add\nAction Input: {"a": 1}\nAnswer: 42'
    answer_first = 'Thought: t\nAnswer: 42\nAction: add\nAction Input: {"a": 1}'

    for reply in (action_first, answer_first):
        result = parse_react_output(reply)
        assert isinstance(result, ReActAction), reply
        assert (result.tool, result.args) == ("add", {"a": 1})


def test_the_word_action_inside_a_line_is_not_an_action() -> None:
    reply = "Thought: no Action: needed here\nAnswer: the Action: field was not used"

    result = parse_react_output(reply)

    assert result == ReActAnswer(
        thought="no Action: needed here", answer="the Action: field was not used"
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("{}", {}),
        ("{'city': 'Paris', 'n': 2}", {"city": "Paris", "n": 2}),
        ('{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
        ("{'a': True, 'b': None, 'c': False,}", {"a": True, "b": None, "c": False}),
        ('{"a": True}', {"a": True}),
        ('{"outer": {"inner": {"x": [1, {"y": 2}]}}}', {"outer": {"inner": {"x": [1, {"y": 2}]}}}),
        ('{"s": "a } b { c"}', {"s": "a } b { c"}),
        ('{"s": "a \\"}\\" b"}', {"s": 'a "}" b'}),
        ("{'s': 'it\\'s } here'}", {"s": "it's } here"}),
        ('{"s": "it\'s"}', {"s": "it's"}),
        ('{"path": "C:\\\\"}', {"path": "C:\\"}),
        ('prefix {"a": 1} suffix {"b": 2}', {"a": 1}),
    ],
)
def test_parse_action_input_is_lenient(raw: str, expected: dict[str, object]) -> None:
    assert parse_action_input(raw) == expected
    reply = f"Thought: t\nAction: tool\nAction Input: {raw}"
    result = parse_react_output(reply)
    assert isinstance(result, ReActAction)
    assert result.args == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"s": "a,}",}', {"s": "a,}"}),
        ('{"code": "x = [1, 2, ]",}', {"code": "x = [1, 2, ]"}),
        ('{"s": "a \\", }", "t": [",]",],}', {"s": 'a ", }', "t": [",]"]}),
        ("{'s': ', }', 'n': None,}", {"s": ", }", "n": None}),
    ],
)
def test_trailing_comma_repair_does_not_touch_string_contents(
    raw: str, expected: dict[str, object]
) -> None:
    assert parse_action_input(raw) == expected


# --- Answers -----------------------------------------------------------------------------


def test_answer_with_thought() -> None:
    reply = "Thought: I can answer without using any more tools.\nAnswer: 405"

    assert parse_react_output(reply) == ReActAnswer(
        thought="I can answer without using any more tools.", answer="405"
    )


def test_final_answer_keeps_multiline_answer_text() -> None:
    reply = "Thought: done\nFinal Answer: line one\nline two\n"

    assert parse_react_output(reply) == ReActAnswer(thought="done", answer="line one\nline two")


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("Paris is the capital of France.", "Paris is the capital of France."),
        ("  Thought: just musing  ", "just musing"),
        ("", ""),
        ("{'a': 1}", "{'a': 1}"),
    ],
)
def test_text_with_neither_form_is_the_answer(reply: str, answer: str) -> None:
    assert parse_react_output(reply) == ReActAnswer(thought="", answer=answer)


# --- Errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        ("Thought: t\nAction: add\n", "no 'Action Input:' line"),
        ("Thought: t\nAction: add\nAnswer: 3", "no 'Action Input:' line"),
        ("Thought: t\nAction: add\nAction Input: a=1, b=2", "no '{' found"),
        ("Thought: t\nAction: add\nAction Input: [1, 2]", "no '{' found"),
        ('Thought: t\nAction: add\nAction Input: {"a": {"b": 1}', "unclosed"),
        ('Thought: t\nAction: add\nAction Input: {"a": "}', "unclosed"),
        ("Thought: t\nAction:\nAction Input: {}", "names no tool"),
        ("Thought: t\nAction:  ``  \nAction Input: {}", "names no tool"),
        ("Thought: t\nAction: add\nAction Input: {a: 1}", "Could not parse"),
        ("Thought: t\nAction: add\nAction Input: {1: 2}", "Could not parse"),
        ("Thought: t\nAction: add\nAction Input: {1, 2}", "Could not parse"),
        ("Thought: t\nAction: add\nAction Input: {'a': __import__('os')}", "Could not parse"),
    ],
)
def test_malformed_action_raises_parse_error_with_format_reminder(
    reply: str, fragment: str
) -> None:
    with pytest.raises(ReActParseError) as info:
        parse_react_output(reply)

    assert fragment in str(info.value)
    assert FORMAT_REMINDER in str(info.value)


def test_parse_error_is_a_value_error() -> None:
    assert issubclass(ReActParseError, ValueError)


# --- Never raises anything else ----------------------------------------------------------

_FRAGMENTS = [
    "Thought:",
    "Action:",
    "Action Input:",
    "Answer:",
    "Final Answer:",
    "\n",
    " ",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    "\\",
    ",",
    ":",
    "True",
    "None",
    "null",
    "1e999",
    "-",
    "(",
    "\x00",
    "é",
    "add",
    '{"a": 1}',
    "{'a': (1,)}",
]


def _check_only_parse_errors(text: str) -> None:
    try:
        result = parse_react_output(text)
    except ReActParseError as error:
        assert FORMAT_REMINDER in str(error)
    else:
        assert isinstance(result, ReActAction | ReActAnswer)


def test_random_react_like_text_raises_only_parse_errors() -> None:
    rng = random.Random(1234)
    for _ in range(3000):
        text = "".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(0, 30)))
        _check_only_parse_errors(text)


@pytest.mark.parametrize(
    "nested",
    ["-" * 50_000 + "1", "(" * 50_000 + "1", "[" * 50_000 + "]" * 50_000, "1" + "+1" * 50_000],
)
def test_pathological_inputs_raise_parse_error_not_recursion_error(nested: str) -> None:
    for quote in ("'", '"'):
        with pytest.raises(ReActParseError):
            parse_react_output(f"Action: t\nAction Input: {{{quote}a{quote}: {nested}}}")


def test_arbitrary_text_raises_only_parse_errors_property() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")

    texts = st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=20), max_size=20).map("".join)

    @hypothesis.settings(max_examples=500, deadline=None)
    @hypothesis.given(st.text() | texts)
    def check(text: str) -> None:
        _check_only_parse_errors(text)

    check()


# --- System prompt -----------------------------------------------------------------------

ADD = ToolSpec(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    },
)
SEARCH = ToolSpec(name="search", description="Search the wiki for a café.")


def test_system_prompt_describes_every_tool_and_the_format() -> None:
    prompt = system_prompt([ADD, SEARCH])

    assert "> Tool Name: add\nTool Description: Add two integers.\n" in prompt
    assert 'Tool Args: {"a": {"type": "integer"}, "b": {"type": "integer"}}' in prompt
    assert "> Tool Name: search\nTool Description: Search the wiki for a café.\nTool Args: {}" in (
        prompt
    )
    assert "Action: <one of: add, search>" in prompt
    assert "Action Input:" in prompt
    assert "Answer: <your answer>" in prompt
    assert "step by step" in prompt


def test_system_prompt_instructions_replace_the_default() -> None:
    prompt = system_prompt([ADD], instructions="You are a pirate calculator.")

    assert prompt.startswith("You are a pirate calculator.")
    assert "step by step" not in prompt


def test_system_prompt_without_tools_says_so() -> None:
    prompt = system_prompt([])

    assert "Action: <one of: (no tools)>" in prompt
    assert "Tool Name" not in prompt


def test_a_reply_following_the_prompts_example_parses() -> None:
    prompt = system_prompt([ADD])
    example_input = prompt.split("e.g. ", 1)[1].split(">", 1)[0]

    result = parse_react_output(f"Thought: use add\nAction: add\nAction Input: {example_input}")

    assert result == ReActAction(thought="use add", tool="add", args={"a": 2, "b": 3})


@pytest.mark.parametrize(
    "flood", ["\n" * 1_000_000, " " * 1_000_000, "Thought:" * 125_000, "\n \n" * 300_000]
)
def test_a_megabyte_flood_parses_in_linear_time(flood: str) -> None:
    """A hang guard, not a speed measurement: the quadratic parser took minutes on these
    (40,000 newlines: 39 s); linear parsing takes a fraction of a second, so 20 s never
    flakes on a slow machine and always catches the old behaviour."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        parsed = pool.submit(parse_react_output, flood + "\nAction: add\nAction Input: {}")
        result = parsed.result(timeout=20)
    assert isinstance(result, ReActAction) and result.tool == "add"
