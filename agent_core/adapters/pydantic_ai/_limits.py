"""The task's bound on model requests, as pydantic-ai's `UsageLimits(request_limit=...)`.

pydantic-ai stops a run at 50 model requests unless its caller passes other `UsageLimits`; a
Stepwise task is one run spread over many steps, so that bound is the task's: a person raises
it with the task's limits (`Task.limits.max_iterations`, the app's Limits), and the error says
so instead of pydantic-ai's `UsageLimitExceeded`, which no edit of the step or undo lifts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.usage import UsageLimits

from agent_core.errors import StepError

__all__ = ["DEFAULT_REQUEST_LIMIT", "limited", "usage_limits"]

DEFAULT_REQUEST_LIMIT = UsageLimits().request_limit
"""pydantic-ai's own bound (50), which holds when the task sets none."""


def usage_limits(request_limit: int | None) -> UsageLimits | None:
    """The limits a step's run gets: the task's request bound, else pydantic-ai's default."""
    return None if request_limit is None else UsageLimits(request_limit=request_limit)


@asynccontextmanager
async def limited(
    run: AbstractAsyncContextManager[Any], *, request_limit: int | None
) -> AsyncIterator[Any]:
    """`run`, with a bound it reached raised as a `StepError` naming the task's limits.

    Raises:
        StepError: Code `max_iterations`, remedy `raise_limits`.
    """
    try:
        async with run as entered:
            yield entered
    except UsageLimitExceeded as exc:
        limit = request_limit if request_limit is not None else DEFAULT_REQUEST_LIMIT
        raise StepError(
            f"the agent reached its bound of {limit} model requests (pydantic-ai's "
            f"request_limit: {exc}); raise the task's limit (set_limits(task_id, "
            "max_iterations=...), the app's Limits) and run the step again",
            remedy="raise_limits",
            code="max_iterations",
            params={"limit": limit, "unit": "model request"},
        ) from exc
