"""A dependency-free token estimate, used where a provider reports no count."""

from __future__ import annotations

__all__ = ["CHARS_PER_TOKEN", "estimate_tokens"]

# About four characters per token for English text with the common BPE vocabularies; close
# enough for memory limits and for showing a count with scripted models.
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Return an estimate of the number of tokens in `text` (0 for empty text)."""
    return -(-len(text) // CHARS_PER_TOKEN)
