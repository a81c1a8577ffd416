"""What a model call costs: a small price table, per model, that users can override.

Prices are US dollars per million tokens, list prices when this table was written. A model
missing from the table has no cost (tokens are still counted): better no number than a wrong
one. Names match exactly first, then by the longest known prefix, so dated snapshots
("gpt-4o-mini-2024-07-18") find their family.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from agent_core.llms.base import Usage

__all__ = ["DEFAULT_PRICES", "ModelPrice", "PriceTable"]


class ModelPrice(BaseModel):
    """Dollars per million prompt (input) and completion (output) tokens."""

    input_per_mtok: float
    output_per_mtok: float


DEFAULT_PRICES: dict[str, ModelPrice] = {
    name: ModelPrice(input_per_mtok=prompt, output_per_mtok=completion)
    for name, (prompt, completion) in {
        "gpt-4o-mini": (0.15, 0.60),
        "gpt-4o": (2.50, 10.00),
        "gpt-4.1-nano": (0.10, 0.40),
        "gpt-4.1-mini": (0.40, 1.60),
        "gpt-4.1": (2.00, 8.00),
        "o4-mini": (1.10, 4.40),
        "o3": (2.00, 8.00),
        "claude-3-5-haiku": (0.80, 4.00),
        "claude-haiku": (1.00, 5.00),
        "claude-3-5-sonnet": (3.00, 15.00),
        "claude-3-7-sonnet": (3.00, 15.00),
        "claude-sonnet": (3.00, 15.00),
        "claude-opus": (15.00, 75.00),
    }.items()
}


class PriceTable:
    """Looks up a model's price and turns token counts into dollars.

    Args:
        overrides: Prices that replace or extend the defaults, by model name (prefix).
    """

    def __init__(self, overrides: Mapping[str, ModelPrice] | None = None) -> None:
        self.prices = {**DEFAULT_PRICES, **(overrides or {})}

    def price_of(self, model: str) -> ModelPrice | None:
        """The price of `model`, by exact name or longest matching prefix."""
        if model in self.prices:
            return self.prices[model]
        prefixes = [name for name in self.prices if model.startswith(name)]
        return self.prices[max(prefixes, key=len)] if prefixes else None

    def with_cost(self, model: str, usage: Usage) -> Usage:
        """`usage` with `cost_usd` filled in when the model's price is known."""
        price = self.price_of(model)
        if price is None:
            return usage
        cost = (
            usage.prompt_tokens * price.input_per_mtok
            + usage.completion_tokens * price.output_per_mtok
        ) / 1_000_000
        return usage.model_copy(update={"cost_usd": cost})
