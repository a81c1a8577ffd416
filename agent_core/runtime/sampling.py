"""Sample N: the spread of one model step, and going on with the reply a person picks.

`sample_step` sends an upcoming model step's request N times and groups the replies by what
the step would do with them: the same tool calls with the same arguments, or the same answer
(its text with whitespace collapsed). Nothing runs but the model: the request is the one the
worker's own code builds for the step (captured at its model call, `runtime.model_calls`), no
tool runs and nothing is committed to the task.

`continue_with_sample` then runs the step for real with the chosen reply in place of its model
call: the step commits that reply as its output and the task goes on from it. To try another
group, undo the step and continue with that one: the re-run grows a branch beside the first
(`runtime.undo`), and Compare branches lines the two up.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_core.errors import AgentCoreError, UserError
from agent_core.llms.base import ChatMessage, ChatResponse, Usage
from agent_core.runtime.contracts import AgentWorker
from agent_core.runtime.model_calls import CapturedCall, ModelCallCaptured, capturing_calls
from agent_core.types import StepKind, Task, TaskStep

__all__ = [
    "DEFAULT_SAMPLES",
    "MAX_SAMPLES",
    "SampleGroup",
    "SampledReply",
    "StepSample",
    "capture_call",
    "check_samplable",
    "group_replies",
    "sample_call",
]

DEFAULT_SAMPLES = 5
MAX_SAMPLES = 50
"""More samples than this are refused: each one is a paid model call."""

GroupKind = Literal["tool_calls", "answer", "error"]


class SampledReply(BaseModel):
    """One of the N replies: the model's response (None if the call failed) and what it took."""

    response: ChatResponse | None = None
    error: str | None = None
    latency_ms: float = 0.0

    @property
    def usage(self) -> Usage:
        """The call's tokens and cost (nothing for a failed call)."""
        return self.response.usage if self.response is not None else Usage()


class SampleGroup(BaseModel):
    """Replies that would make the step do the same thing."""

    kind: GroupKind
    label: str
    """What the replies would do, for a person: `add({"a": 1})`, or the answer's text."""
    replies: list[SampledReply] = Field(default_factory=list)
    share: float = 0.0
    """The group's fraction of all the samples (0..1)."""

    @property
    def count(self) -> int:
        """How many samples fell in this group."""
        return len(self.replies)

    @property
    def tokens(self) -> int:
        """Tokens of all the group's calls."""
        return sum(r.usage.total_tokens for r in self.replies)

    @property
    def cost_usd(self) -> float | None:
        """What the group's calls cost; None when no price is known."""
        costs = [r.usage.cost_usd for r in self.replies if r.usage.cost_usd is not None]
        return sum(costs) if costs else None

    @property
    def latency_ms(self) -> float:
        """The mean time of the group's calls."""
        return sum(r.latency_ms for r in self.replies) / max(1, len(self.replies))


class StepSample(BaseModel):
    """N replies to one step's request, grouped; the largest group first."""

    task_id: str
    step_id: str
    n: int
    messages: list[ChatMessage]
    """The request's messages, as the step would send them."""
    groups: list[SampleGroup]

    @property
    def tokens(self) -> int:
        """Tokens of all N calls."""
        return sum(g.tokens for g in self.groups)

    @property
    def cost_usd(self) -> float | None:
        """What all N calls cost; None when no price is known."""
        costs = [g.cost_usd for g in self.groups if g.cost_usd is not None]
        return sum(costs) if costs else None

    def reply(self, group: int) -> ChatResponse:
        """The reply a step continued with group `group` commits (the group's first).

        Raises:
            UserError: `sample_group_unknown`: no such group, or one of failed calls.
        """
        if not 0 <= group < len(self.groups) or self.groups[group].kind == "error":
            raise UserError(
                f"the sample has no group {group} to continue with (it has {len(self.groups)}, "
                "failed calls cannot be continued with)",
                hint="pick a group of replies from StepSample.groups",
                code="sample_group_unknown",
                params={"group": group, "groups": len(self.groups)},
            )
        response = self.groups[group].replies[0].response
        assert response is not None  # Only an "error" group holds failed calls.
        return response


def check_samplable(worker: AgentWorker, step: TaskStep) -> None:
    """Refuse a step whose request cannot be sent again without running the step.

    Raises:
        UserError: `sample_unsupported`, with the reason in `params["reason"]`.
    """
    reason = sample_refusal(worker, step)
    if reason is not None:
        raise UserError(
            f"step cannot be sampled: {reason}",
            hint="sample an upcoming model (llm) step of a built-in worker",
            code="sample_unsupported",
            task_id=step.task_id,
            step_id=step.step_id,
            params={"reason": reason},
        )


def sample_refusal(worker: AgentWorker, step: TaskStep) -> str | None:
    """Why `step` cannot be sampled, for a face to grey its control with; None if it can."""
    if step.kind is not StepKind.LLM:
        return f"a {step.kind.value} step calls no model; sample a model (llm) step"
    return getattr(worker, "cannot_sample", "the worker does not say how it calls its model")


async def capture_call(
    worker: AgentWorker, step: TaskStep, task: Task, kwargs: dict[str, Any]
) -> CapturedCall:
    """The model call `step` would make, found by running the worker's code up to it.

    `step` and `task` must be copies (the runner's preview view): the worker writes to them.

    Raises:
        UserError: `sample_no_model_call`: the step got to its end without calling a model.
    """
    try:
        with capturing_calls():
            await worker.arun_step(step, task, **kwargs)
    except ModelCallCaptured as captured:
        return captured.call
    raise UserError(
        "the step finished without calling its model, so there is no request to sample",
        hint="run the step instead",
        code="sample_no_model_call",
        task_id=step.task_id,
        step_id=step.step_id,
    )


async def sample_call(call: CapturedCall, n: int, *, concurrency: int = 5) -> list[SampledReply]:
    """Send `call` `n` times, at most `concurrency` at once; one `SampledReply` per call.

    A call that fails is kept as a reply with its error: a model that fails one time in five
    is part of the spread.
    """
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one() -> SampledReply:
        async with gate:
            started = time.perf_counter()
            try:
                response = await call.llm.chat(call.messages, tools=call.tools, **call.options)
            except AgentCoreError as exc:
                elapsed = (time.perf_counter() - started) * 1000
                return SampledReply(error=str(exc), latency_ms=elapsed)
            elapsed = (time.perf_counter() - started) * 1000
            return SampledReply(response=response, latency_ms=elapsed)

    return list(await asyncio.gather(*(one() for _ in range(n))))


def group_replies(replies: Sequence[SampledReply]) -> list[SampleGroup]:
    """The replies grouped by what they would do, the largest group first (ties: first seen)."""
    groups: dict[str, SampleGroup] = {}
    for reply in replies:
        kind, key, label = _what_it_does(reply)
        group = groups.setdefault(key, SampleGroup(kind=kind, label=label))
        group.replies.append(reply)
    total = max(1, len(replies))
    for group in groups.values():
        group.share = group.count / total
    return sorted(groups.values(), key=lambda g: -g.count)


def _what_it_does(reply: SampledReply) -> tuple[GroupKind, str, str]:
    """The group kind, key and label of one reply."""
    if reply.response is None:
        return "error", f"error:{reply.error}", f"failed: {reply.error}"
    calls = reply.response.tool_calls
    if calls:
        shown = [
            f"{call.name}({json.dumps(call.args, sort_keys=True, ensure_ascii=False)})"
            for call in calls
        ]
        return "tool_calls", "calls:" + "\n".join(shown), ", ".join(shown)
    # Replies that differ only in spacing or line breaks say the same thing.
    text = " ".join(reply.response.text.split())
    return "answer", f"answer:{text}", text or "(empty answer)"
