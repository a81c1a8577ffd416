"""Tools for the example agent: plain functions, each public one a tool.

Stepwise turns every public function defined here into a tool (`FunctionTool`): the name is
the function's, the description its docstring, the arguments its type hints. Register the
module with `--tools my_tools=my_tools.py` or under `[tool.stepwise] tools` (see
pyproject.toml); the built-in ReAct and function-calling workers can then use them too.
"""

from __future__ import annotations


def word_count(text: str) -> int:
    """Count the words in a text.

    Args:
        text: The text whose words to count.
    """
    return len(text.split())


def shorten(text: str, max_words: int = 8) -> str:
    """Keep the first words of a text, adding an ellipsis when words were dropped.

    Args:
        text: The text to shorten.
        max_words: How many words to keep.
    """
    words = text.split()
    if len(words) <= max_words:
        return text.strip()
    return " ".join(words[:max_words]) + " …"


def shout(text: str) -> str:
    """Write a text in capitals, ending with an exclamation mark.

    Args:
        text: The text to shout.
    """
    return text.strip().rstrip(".!?").upper() + "!"
