"""Four arithmetic tools, the classic first agent demo (LlamaIndex's multiply and add).

They take `int | float`, so whole numbers stay whole: 121 * 3 is 363, not 363.0.
"""

from __future__ import annotations

from agent_core.errors import ToolError
from agent_core.tools.base import FunctionTool

__all__ = ["arithmetic_tools"]


def add(a: int | float, b: int | float) -> int | float:
    """Add two numbers and return the sum."""
    return a + b


def subtract(a: int | float, b: int | float) -> int | float:
    """Subtract b from a and return the difference."""
    return a - b


def multiply(a: int | float, b: int | float) -> int | float:
    """Multiply two numbers and return the product."""
    return a * b


def divide(a: int | float, b: int | float) -> float:
    """Divide a by b and return the quotient."""
    if b == 0:
        raise ToolError("cannot divide by zero")
    return a / b


def arithmetic_tools() -> list[FunctionTool]:
    """`add`, `subtract`, `multiply` and `divide` (quick and pure: they run inline)."""
    return [
        FunctionTool.from_defaults(fn, blocking=False) for fn in (add, subtract, multiply, divide)
    ]
