"""The note on a framework agent's model reply that its max-tokens cap ended.

A reply cut by the request's cap (finish reason "length", Anthropic's "max_tokens") reads like
a whole answer: the adapters add a `StepNote` to the step saying it is not one.
"""

from __future__ import annotations

from agent_core.types import StepNote

__all__ = ["CUT_AT_CAP", "CUT_REASONS", "cap_note"]

CUT_AT_CAP = "reply_cut_at_cap"
"""The `StepNote` code of a reply the model's max-tokens cap ended."""
CUT_REASONS = frozenset({"length", "max_tokens", "model_length"})
"""Finish reasons that say the cap ended the reply (OpenAI's, Anthropic's, Gemini's names)."""


def cap_note(where: str) -> StepNote:
    """The note of a reply cut by its max-tokens cap; `where` says how to raise the cap."""
    return StepNote(
        code=CUT_AT_CAP,
        message="the model's reply was cut off by its max-tokens cap (finish reason "
        f'"length"): it is incomplete. Raise the cap ({where}), reload your code, then undo '
        "this step and run it again",
    )
