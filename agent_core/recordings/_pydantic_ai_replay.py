"""Replay for a pydantic-ai agent whose model is no SDK client (`FunctionModel`, `TestModel`).

Such a model runs in the process, so no HTTP transport sees its calls: for the replayed step
the agent's model is overridden (`Agent.override(model=...)`, pydantic-ai's own way, scoped to
the step) by a `FunctionModel` that answers with the recorded reply.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from agent_core.recordings.client_replay import answer_from_recording
from agent_core.recordings.stand_ins import ReplayLog

__all__ = ["in_process_model", "model_swap"]


def in_process_model(agent: Any) -> bool:
    """Whether `agent`'s model runs in the process (no client a transport could answer)."""
    return isinstance(getattr(agent, "model", None), FunctionModel | TestModel)


def model_swap(agent: Any, log: ReplayLog) -> Any:
    """A factory of the context that makes `agent` ask the recording for the step's reply."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        recorded = answer_from_recording(log).message
        parts: list[Any] = [TextPart(recorded.content)] if recorded.content else []
        parts += [
            ToolCallPart(call.name, dict(call.args), tool_call_id=call.id or f"call_{index}")
            for index, call in enumerate(recorded.tool_calls)
        ]
        return ModelResponse(parts=parts, model_name="recorded")

    @contextlib.contextmanager
    def swapped() -> Iterator[None]:
        with agent.override(model=FunctionModel(reply)):
            yield

    return swapped
