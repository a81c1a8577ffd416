"""The calculator tool: real arithmetic, and every unsafe or runaway input refused clearly."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.errors import ToolError
from agent_core.tools.calculator import MAX_EXPRESSION_CHARS, calculate, calculator_tool


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("(121 * 3) + 42", 405),
        ("2 + 3 * 4", 14),
        ("2 ** 3 ** 2", 512),
        ("-2 ** 2", -4),
        ("7 - 2 - 1", 4),
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("-7 % 3", 2),
        ("+5", 5),
        ("1_000 * 3", 3000),
        ("2 ** -1", 0.5),
        ("sqrt(16)", 4.0),
        ("abs(-3.5)", 3.5),
        ("round(2.567, 2)", 2.57),
        ("min(4, 2, 8)", 2),
        ("max(4, 2, 8)", 8),
        ("log(8, 2)", 3.0),
        ("log10(1000)", 3.0),
        ("floor(2.7) + ceil(2.1)", 5),
        ("sin(0) + cos(0)", 1.0),
        ("pi", math.pi),
        ("e", math.e),
        ("2 * pi", 2 * math.pi),
    ],
)
def test_calculates_arithmetic_and_functions(expression, expected):
    assert calculate(expression) == repr(expected)


def test_a_long_flat_sum_is_not_mistaken_for_deep_nesting():
    expression = "+".join(["1"] * 499)  # 997 characters, a tree 498 levels deep
    assert calculate(expression) == "499"


async def test_the_tool_is_named_calculator_and_answers_a_model_call():
    tool = calculator_tool()
    spec = tool.metadata.to_spec()
    assert spec.name == "calculator"
    assert spec.parameters["required"] == ["expression"]
    assert "sqrt" in spec.description
    assert not tool.metadata.side_effects
    out = await tool.acall({"expression": "(121 * 3) + 42"})
    assert (out.content, out.is_error) == ("405", False)


async def test_a_refused_expression_is_an_error_the_model_reads():
    out = await calculator_tool().acall({"expression": "1 / 0"})
    assert out.is_error
    assert out.content == "Error: calculator: division by zero in 1 / 0"


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('echo hacked')",
        "open('/etc/passwd')",
        "x + 1",
        "(1).real",
        "(1).__class__",
        "lambda: 1",
        "[1, 2] * 3",
        "'a' * 3",
        "True + 1",
        "1 if 1 else 2",
        "1 < 2",
        "sqrt(4)(2)",
        "exec('1')",
    ],
)
def test_anything_but_arithmetic_is_refused_with_what_is_allowed(expression):
    with pytest.raises(ToolError, match=r"Allowed: numbers, .*sqrt\(\).* pi, e"):
        calculate(expression)


def test_caret_is_explained_as_not_a_power():
    with pytest.raises(ToolError, match=r"use \*\* for powers"):
        calculate("2 ^ 3")


def test_a_function_name_without_a_call_says_how_to_call_it():
    with pytest.raises(ToolError, match=r"call it with parentheses, e.g. sqrt\(2\)"):
        calculate("sqrt + 1")


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("9 ** 9 ** 9", "would have more than 3010 digits"),
        ("(2 ** 1000) ** 1000", "would have more than 3010 digits"),
        ("10 ** 5000", "would have more than 3010 digits"),
        ("(2 ** 5000) * (2 ** 5000)", "has more than 3010 digits"),
        ("2.0 ** 5000", "too large to compute"),
        ("1e308 * 10", "overflows"),
        ("1e309", "overflows"),
        ("exp(1000)", "exp\\(1000\\) failed: math range error"),
        ("sqrt(10 ** 3000)", "failed: int too large to convert to float"),
        ("5 % 0", "division by zero in 5 % 0"),
        ("5 // 0.0", "division by zero"),
        ("sqrt(-1)", "sqrt\\(-1\\) failed: math domain error"),
        ("(-8) ** 0.5", "not a real number"),
        ("min()", "min\\(\\) failed"),
        ("round(x=1)", "by position"),
    ],
)
def test_runaway_or_undefined_results_are_refused_not_computed(expression, message):
    with pytest.raises(ToolError, match=message):
        calculate(expression)


def test_a_huge_number_in_a_message_is_described_not_printed():
    with pytest.raises(ToolError) as caught:
        calculate("(2 ** 1000) ** 1000")
    assert "<a 302-digit number>" in str(caught.value)
    assert len(str(caught.value)) < 200


def test_input_over_the_length_limit_is_refused():
    expression = "1 + " * 300 + "1"
    assert len(expression) > MAX_EXPRESSION_CHARS
    with pytest.raises(
        ToolError, match=f"1201 characters long; the limit is {MAX_EXPRESSION_CHARS}"
    ):
        calculate(expression)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("-" * 400 + "1", "nests more than 200 operations deep"),
        ("(" * 300 + "1" + ")" * 300, "too many nested parentheses"),
        ("-abs(" * 120 + "1" + ")" * 120, "nests more than 200"),
    ],
)
def test_deep_nesting_is_refused_cleanly(expression, message):
    with pytest.raises(ToolError, match=message):
        calculate(expression)


def test_empty_and_malformed_input_say_what_to_write():
    with pytest.raises(ToolError, match="empty"):
        calculate("   ")
    with pytest.raises(ToolError, match="cannot read '2 \\+' as arithmetic"):
        calculate("2 +")
    with pytest.raises(ToolError, match="cannot read"):
        calculate("import os")
    with pytest.raises(ToolError, match="cannot read"):
        calculate("1 +\x00 2")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"0123456789+-*/%().e ", "**", "//", "sqrt(", "pi"]), max_size=30
    ).map("".join)
)
def test_any_input_gives_a_number_or_a_tool_error_never_a_crash(expression):
    try:
        result = calculate(expression)
    except ToolError as exc:
        assert str(exc)
    else:  # an int of any allowed size, or a finite float
        assert result.lstrip("-").isdigit() or math.isfinite(float(result))


def test_a_power_tower_is_refused_not_overflowed():
    with pytest.raises(ToolError, match="digits"):
        calculate("2**2**1100")


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("round(1, -10**8)", "0"),  # Python would compute 10**100000000: it never returned.
        ("round(1.5, -10**800)", "0.0"),
        ("round(2.5, 10**9)", "2.5"),
        ("round(123456, -2)", "123500"),
        ("round(3.14159, 2)", "3.14"),
    ],
)
def test_round_with_any_number_of_digits_returns_at_once(expression: str, expected: str) -> None:
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # A hang guard, not a timing.
        assert pool.submit(calculate, expression).result(timeout=20) == expected


def test_round_refuses_a_fractional_number_of_digits() -> None:
    with pytest.raises(ToolError, match="whole number"):
        calculate("round(1.5, 0.5)")
