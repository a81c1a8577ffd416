"""A calculator tool: arithmetic parsed with `ast` and evaluated node by node, never `eval`.

Only numbers, arithmetic operators, parentheses and a short list of math functions and
constants are understood. Anything that could hang or exhaust memory (a huge power, a very
long or deeply nested expression) is refused with a `ToolError` the model can read.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from agent_core.errors import ToolError
from agent_core.tools.base import FunctionTool

__all__ = ["MAX_EXPRESSION_CHARS", "calculate", "calculator_tool"]

MAX_EXPRESSION_CHARS = 1000
"""Longest expression accepted."""

_MAX_DEPTH = 200
# Python cannot print ints over 4,300 digits (sys.set_int_max_str_digits); stay well below.
_MAX_INT_BITS = 10_000

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_SYMBOLS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _min(*values: Number) -> Number:
    return min(values)


def _max(*values: Number) -> Number:
    return max(values)


_MAX_ROUND_DIGITS = 4_000
"""|ndigits| beyond which round() changes nothing (or gives 0): every number here has fewer
digits. Python computes 10 ** |ndigits| for an int, so round(1, -10**8) would never return."""


def _round(value: Number, ndigits: Number | None = None) -> Number:
    if ndigits is None:
        return round(value)
    if not isinstance(ndigits, int):
        raise ToolError(f"round()'s second argument must be a whole number, got {_shown(ndigits)}")
    if ndigits > _MAX_ROUND_DIGITS:
        return value  # Already far finer than any digit it has.
    if ndigits < -_MAX_ROUND_DIGITS:
        return 0 if isinstance(value, int) else 0.0  # Every digit rounds away.
    return round(value, ndigits)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": _round,
    "min": _min,
    "max": _max,
    "log": math.log,
    "log10": math.log10,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "floor": math.floor,
    "ceil": math.ceil,
}

_ALLOWED = (
    "numbers, + - * / // % ** (power), unary + and -, parentheses, the functions "
    + ", ".join(f"{name}()" for name in _FUNCTIONS)
    + " and the constants "
    + ", ".join(_CONSTANTS)
)


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression and return the result.

    Supports numbers, + - * / // % ** (power), parentheses, sqrt, abs, round, min, max, log
    (natural, or log(x, base)), log10, exp, sin, cos, tan (radians), floor, ceil, and the
    constants pi, e and tau. Example: "sqrt(2) * (3 + 4) ** 2".

    Args:
        expression: The arithmetic expression, e.g. "(121 * 3) + 42".
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(
            f"the expression is {len(expression)} characters long; the limit is "
            f"{MAX_EXPRESSION_CHARS}. Split the calculation into smaller steps"
        )
    if not expression.strip():
        raise ToolError(f"the expression is empty; write one such as '(121 * 3) + 42'. {_hint()}")
    tree = _parse(expression)
    return repr(_Evaluator().eval(tree.body, depth=0))


def calculator_tool() -> FunctionTool:
    """The calculator as a tool named "calculator" (quick and pure, so it runs inline)."""
    return FunctionTool.from_defaults(calculate, name="calculator", blocking=False)


def _parse(expression: str) -> ast.Expression:
    try:
        return ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ToolError(
            f"cannot read {_clip(expression)} as arithmetic ({exc.msg}). {_hint()}"
        ) from None
    except ValueError as exc:  # a NUL byte in the text
        raise ToolError(f"cannot read {_clip(expression)} as arithmetic ({exc})") from None
    except (RecursionError, MemoryError):
        raise ToolError(
            "the expression is nested too deeply to read; split it into smaller steps"
        ) from None


class _Evaluator:
    """Walks the syntax tree; each node kind it does not know is refused."""

    def eval(self, node: ast.AST, *, depth: int) -> Number:
        if depth > _MAX_DEPTH:
            raise ToolError(
                f"the expression nests more than {_MAX_DEPTH} operations deep; "
                "split it into smaller steps"
            )
        if isinstance(node, ast.Constant):
            return _number(node.value)
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _checked(_UNARY[type(node.op)](self.eval(node.operand, depth=depth + 1)))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return self._chain(node, depth=depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth=depth)
        raise ToolError(f"{_describe(node)} is not allowed. {_hint()}")

    def _chain(self, node: ast.BinOp, *, depth: int) -> Number:
        # `1 + 2 + ... + 300` is a left-leaning tree 300 deep: fold it in a loop, so only real
        # nesting (parentheses, powers, calls) counts towards the depth limit.
        chain: list[tuple[ast.operator, ast.expr]] = []
        left: ast.expr = node
        while isinstance(left, ast.BinOp) and type(left.op) in _BINARY:
            chain.append((left.op, left.right))
            left = left.left
        value = self.eval(left, depth=depth + 1)
        for op, right in reversed(chain):
            value = _binary(op, value, self.eval(right, depth=depth + 1))
        return value

    def _name(self, name: str) -> Number:
        if name in _CONSTANTS:
            return _CONSTANTS[name]
        if name in _FUNCTIONS:
            raise ToolError(f"{name} is a function: call it with parentheses, e.g. {name}(2)")
        raise ToolError(f"unknown name {name!r}. {_hint()}")

    def _call(self, node: ast.Call, *, depth: int) -> Number:
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            raise ToolError(f"calling {ast.unparse(node.func)!r} is not allowed. {_hint()}")
        name = node.func.id
        if node.keywords:
            raise ToolError(f"{name}() takes its arguments by position, without names")
        args = [self.eval(arg, depth=depth + 1) for arg in node.args]
        try:
            return _checked(_FUNCTIONS[name](*args))
        except ToolError:
            raise
        except (ValueError, TypeError, OverflowError) as exc:
            shown = ", ".join(_shown(arg) for arg in args)
            raise ToolError(f"{name}({shown}) failed: {exc}") from None


def _number(value: object) -> Number:
    # bool is an int subclass; True + True is not arithmetic anyone means.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _checked(value)
    raise ToolError(f"{value!r} is not a number. {_hint()}")


def _binary(op: ast.operator, left: Number, right: Number) -> Number:
    if isinstance(op, ast.Pow):
        _check_power(left, right)
    try:
        return _checked(_BINARY[type(op)](left, right))
    except ZeroDivisionError:
        raise ToolError(
            f"division by zero in {_shown(left)} {_symbol(op)} {_shown(right)}"
        ) from None
    except OverflowError:
        raise ToolError(
            f"{_shown(left)} {_symbol(op)} {_shown(right)} is too large to compute"
        ) from None


def _check_power(base: Number, exponent: Number) -> None:
    """Refuse an integer power before computing it when its result would be huge."""
    if not (isinstance(base, int) and isinstance(exponent, int)) or abs(base) <= 1:
        return  # float powers overflow quickly with an OverflowError instead
    # |base| >= 2 here, so an exponent over the bit limit is too large on its own (and a
    # huge int exponent would overflow the float product below).
    if exponent > _MAX_INT_BITS or (
        exponent > 0 and exponent * math.log2(abs(base)) > _MAX_INT_BITS
    ):
        raise ToolError(
            f"{_shown(base)} ** {exponent} would have more than {_max_digits()} digits; "
            f"work with logarithms instead (its number of digits is about "
            f"{exponent} * log10({_shown(abs(base))}))"
        )


def _checked(value: object) -> Number:
    """Keep every intermediate result a real, finite number of bounded size."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError(f"the result {value!r} is not a real number (e.g. a root of a negative)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("the result overflows: it is too large (or undefined) to compute")
    if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
        raise ToolError(f"the result has more than {_max_digits()} digits; that is too large")
    return value


def _shown(value: Number) -> str:
    """A number for an error message: huge ones by their size only."""
    text = repr(value)
    return text if len(text) <= 30 else f"<a {len(text)}-digit number>"


def _symbol(op: ast.operator) -> str:
    return _SYMBOLS.get(type(op), type(op).__name__)


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
        return "'^' (bitwise xor; use ** for powers)"
    try:
        return _clip(ast.unparse(node))
    except Exception:  # unparse of an odd node is only for the message
        return type(node).__name__


def _clip(text: str, limit: int = 80) -> str:
    return repr(text) if len(text) <= limit else repr(text[: limit - 3] + "...")


def _max_digits() -> int:
    return int(_MAX_INT_BITS * math.log10(2))


def _hint() -> str:
    return f"Allowed: {_ALLOWED}."
