"""Notes on a framework agent's model reply that ended before the model finished it.

A reply cut by the request's max-tokens cap (finish reason "length", Anthropic's "max_tokens")
reads like a whole answer, and so does a stream that stopped mid-reply without a finish reason:
the adapters add a `StepNote` to the step instead of saving either as a complete answer.
"""

from __future__ import annotations

from agent_core.types import StepNote

__all__ = ["CUT_AT_CAP", "CUT_REASONS", "CUT_SHORT", "cap_note", "cut_note"]

CUT_AT_CAP = "reply_cut_at_cap"
"""The `StepNote` code of a reply the model's max-tokens cap ended."""
CUT_SHORT = "reply_cut_short"
"""The `StepNote` code of a streamed reply that ended with no finish reason."""
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


def cut_note() -> StepNote:
    """The note of a streamed reply that ended mid-reply, without a finish reason."""
    return StepNote(
        code=CUT_SHORT,
        message="the model's reply stream ended without a finish reason: the server stopped "
        "mid-reply, so the reply may be incomplete. Check the server's log, then undo this "
        "step and run it again",
    )
