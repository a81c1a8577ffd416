"""`ReActOutputParser`: LlamaIndex's parser of ReAct replies, over Stepwise's own parser.

LlamaIndex code that subclasses the parser, or passes one to `ReActAgentWorker`, keeps
working: `parse` returns LlamaIndex's reasoning steps (`ActionReasoningStep`,
`ResponseReasoningStep`), and the worker reads them back into its own action or answer.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agent_core.workers.react_format import (
    ReActAction,
    ReActAnswer,
    ReActParseError,
    _json_object_at,
    parse_action_input,
    parse_react_output,
    split_action,
    split_answer,
)

__all__ = [
    "ActionReasoningStep",
    "ObservationReasoningStep",
    "ReActOutputParser",
    "ResponseReasoningStep",
    "extract_final_response",
    "extract_tool_use",
    "parse_action_reasoning_step",
]


class ActionReasoningStep(BaseModel):
    """The model asks to call `action` with `action_input`."""

    thought: str
    action: str
    action_input: dict[str, Any] = Field(default_factory=dict)

    @property
    def is_done(self) -> bool:
        """An action never ends the task."""
        return False


class ResponseReasoningStep(BaseModel):
    """The model answers."""

    thought: str
    response: str
    is_streaming: bool = False

    @property
    def is_done(self) -> bool:
        """An answer ends the task."""
        return True


class ObservationReasoningStep(BaseModel):
    """What a tool (or a person) told the model; Stepwise keeps these in the task's memory."""

    observation: str

    @property
    def is_done(self) -> bool:
        """An observation never ends the task."""
        return False


ReasoningStep = ActionReasoningStep | ResponseReasoningStep


def extract_tool_use(text: str) -> tuple[str, str, str]:
    """The thought, the tool's name and the Action Input's JSON text of a reply.

    Raises:
        ValueError: The reply has no Action line or no JSON object after `Action Input:`.
    """
    action = split_action(text)
    if action is None:
        raise ReActParseError(f"Could not extract tool use from input text: {text[:200]!r}")
    thought, tool, raw_input = action
    return thought, tool, _json_object_at(raw_input)


def extract_final_response(text: str) -> tuple[str, str]:
    """The thought and the answer of a reply.

    Raises:
        ValueError: The reply has no `Answer:` line.
    """
    answer = split_answer(text)
    if answer is None:
        raise ReActParseError(f"Could not extract final answer from input text: {text[:200]!r}")
    return answer


def parse_action_reasoning_step(text: str) -> ActionReasoningStep:
    """A reply that calls a tool, parsed leniently (comments, single quotes, trailing text)."""
    thought, action, raw_input = extract_tool_use(text)
    return ActionReasoningStep(
        thought=thought, action=action, action_input=parse_action_input(raw_input)
    )


class ReActOutputParser:
    """Parses a ReAct reply into an action or an answer; subclass it to read another format."""

    def parse(self, output: str, is_streaming: bool = False) -> ReasoningStep:
        """The reasoning step `output` holds.

        Raises:
            ValueError: `output` follows neither form; the message is written for the model.
        """
        parsed = parse_react_output(output)
        if isinstance(parsed, ReActAnswer):
            return ResponseReasoningStep(
                thought=parsed.thought, response=parsed.answer, is_streaming=is_streaming
            )
        return ActionReasoningStep(
            thought=parsed.thought, action=parsed.tool, action_input=parsed.args
        )


def from_reasoning_step(step: object) -> ReActAction | ReActAnswer:
    """What a custom parser's reasoning step means to `ReActAgentWorker`."""
    if isinstance(step, ActionReasoningStep) or hasattr(step, "action"):
        args = getattr(step, "action_input", None) or {}
        if not isinstance(args, dict):
            raise ReActParseError(f"the Action Input {args!r} is not a JSON object")
        return ReActAction(thought=getattr(step, "thought", ""), tool=step.action, args=args)  # type: ignore[attr-defined]
    if hasattr(step, "response"):
        return ReActAnswer(thought=getattr(step, "thought", ""), answer=str(step.response))  # type: ignore[attr-defined]
    raise ReActParseError(f"the output parser returned {type(step).__name__}, not a step")
