"""One Stepwise step on a LangGraph thread: state updates, one super-step, and what it sent.

`GraphThread` is a compiled graph (on Stepwise's checkpointer) and one thread of it, with the
few calls a step makes: `update` (LangGraph's `update_state`, as the nodes that ran last),
`superstep` (stream until the first step boundary: `interrupt_after="*"`), `state`.
`ModelCalls` is a LangChain callback handler that records what the nodes sent their chat
models, so a step shows the exact messages and its token usage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessageChunk, BaseMessage
from langgraph.pregel import Pregel
from langgraph.types import StateSnapshot, StateUpdate

from agent_core._tokens import estimate_tokens
from agent_core.adapters._replies import CUT_REASONS, cap_note
from agent_core.llms.base import Usage
from agent_core.types import StepNote

__all__ = ["GraphThread", "ModelCalls", "Outcome", "as_nodes"]


class ModelCalls(BaseCallbackHandler):
    """The chat-model calls a super-step made: the first call's messages and all calls' usage."""

    run_inline = True  # Called where the model runs: no executor hop for a list append.

    # Only model events: a handler that takes chain events is called for every runnable of
    # every node, which costs each step more than the rest of Stepwise's work.
    @property
    def ignore_chain(self) -> bool:
        """Chains (every runnable of every node) are not listened to."""
        return True

    @property
    def ignore_agent(self) -> bool:
        """Nor agent actions."""
        return True

    @property
    def ignore_retriever(self) -> bool:
        """Nor retrievers."""
        return True

    @property
    def ignore_custom_event(self) -> bool:
        """Nor custom events."""
        return True

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[BaseMessage] | None = None
        self.count = 0
        self.usage = Usage()
        self.notes: list[StepNote] = []
        self._prompts: dict[Any, int] = {}
        """Each running call's estimated prompt tokens, by run id (for a reply with no usage)."""

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        """Keep what the first model call of the step was sent."""
        self.count += 1
        if self.sent is None and messages:
            self.sent = list(messages[0])
        sent = "".join(m.text for batch in messages for m in batch)
        self._prompts[kwargs.get("run_id")] = estimate_tokens(sent)

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        """Add the call's token counts to the step's; note a reply its max-tokens cap cut."""
        prompt = self._prompts.pop(kwargs.get("run_id"), 0)
        for generations in response.generations:
            for generation in generations:
                self.usage = self.usage + _usage_of(generation, response.llm_output, prompt)
                metadata = getattr(generation.message, "response_metadata", None) or {}
                reason = metadata.get("finish_reason") or metadata.get("stop_reason")
                if reason in CUT_REASONS and not self.notes:
                    where = "the chat model's max_tokens in your graph's code"
                    self.notes.append(cap_note(where))


def _usage_of(generation: Any, llm_output: Any, prompt: int) -> Usage:
    """One reply's token counts, where LangChain models report them, else an estimate.

    `usage_metadata` is LangChain's standard field; models that only pass the server's own
    `token_usage` (in the message's `response_metadata` or the result's `llm_output`) are read
    too. A stream from a local server carries none: the counts are estimated, as marked.
    """
    message = getattr(generation, "message", None)
    meta = getattr(message, "usage_metadata", None)
    if meta:
        return Usage(
            prompt_tokens=int(meta.get("input_tokens") or 0),
            completion_tokens=int(meta.get("output_tokens") or 0),
        )
    metadata = getattr(message, "response_metadata", None) or {}
    for found in (metadata, llm_output if isinstance(llm_output, dict) else {}):
        counts = found.get("token_usage") or found.get("usage")
        if isinstance(counts, dict) and (counts.get("prompt_tokens") or counts.get("input_tokens")):
            return Usage(
                prompt_tokens=int(counts.get("prompt_tokens") or counts.get("input_tokens") or 0),
                completion_tokens=int(
                    counts.get("completion_tokens") or counts.get("output_tokens") or 0
                ),
            )
    replied = getattr(generation, "text", "") or ""
    return Usage(prompt_tokens=prompt, completion_tokens=estimate_tokens(replied), estimated=True)


def as_nodes(values: Any, nodes: Sequence[str]) -> list[StateUpdate]:
    """One `update_state` super-step writing `values` as if the `nodes` that ran last wrote it.

    LangGraph runs each node's writers, so its edges are taken again on the updated state
    (an `AIMessage` left without tool calls then routes to the end, as `tools_condition`
    says). With several nodes the others write nothing but take their edges too; with
    none, LangGraph picks the last node that wrote.
    """
    if not nodes:
        return [StateUpdate(values)]
    return [StateUpdate(values, nodes[0]), *(StateUpdate(None, node) for node in nodes[1:])]


@dataclass(frozen=True)
class Outcome:
    """The thread's state after a super-step, as its last checkpoint event told it.

    The fields a step reads of LangGraph's `StateSnapshot`; a super-step that stopped on an
    `interrupt()` is read with `get_state` instead, which knows each interrupt's node.
    """

    values: Any
    next: tuple[str, ...]
    interrupts: tuple[Any, ...] = ()
    tasks: tuple[Any, ...] = field(default=())


class GraphThread:
    """`graph` (on Stepwise's checkpointer) and one of its threads, for one step.

    `calls` records the chat-model calls; `tokens` gets the text of streamed replies.
    """

    def __init__(
        self,
        graph: Pregel,
        thread: str,
        *,
        calls: ModelCalls | None = None,
        tokens: Callable[[str], None] | None = None,
    ) -> None:
        self.graph = graph
        self._tokens = tokens
        self.config: dict[str, Any] = {"configurable": {"thread_id": thread}}
        self._outcome: Outcome | None = None
        self.updated = False
        """Whether a state update was applied (messages may have been replaced in place)."""
        if calls is not None:
            self.config["callbacks"] = [calls]

    async def update(self, supersteps: list[list[StateUpdate]]) -> None:
        """Apply each super-step of updates in turn, as `update_state` does."""
        if supersteps:
            self._outcome, self.updated = None, True
            await self.graph.abulk_update_state(self.config, supersteps)  # type: ignore[arg-type]

    def update_now(self, supersteps: list[list[StateUpdate]]) -> None:
        """`update`, from sync code (a preview)."""
        if supersteps:
            self._outcome, self.updated = None, True
            self.graph.bulk_update_state(self.config, supersteps)  # type: ignore[arg-type]

    async def superstep(self, input: Any) -> list[tuple[str, Any]]:
        """Run the graph up to its next step boundary; each node that ran, with its update.

        `interrupt_after="*"` stops the run after one super-step; "exit" durability writes
        only the checkpoint it stops at, the one the task keeps. The last checkpoint event
        of the stream is the state after it (`outcome`), without reading the thread again.
        With `tokens` (see the constructor), LangGraph's "messages" mode streams the chat
        models' replies, and `tokens` gets each piece of text as it comes.
        """
        tokens = self._tokens
        modes = ["updates", "checkpoints", *(["messages"] if tokens is not None else [])]
        updates: list[tuple[str, Any]] = []
        last: dict[str, Any] | None = None
        interrupted = False
        async for mode, chunk in self.graph.astream(
            input,
            self.config,  # type: ignore[arg-type]
            stream_mode=modes,  # type: ignore[arg-type]
            interrupt_after="*",
            durability="exit",
        ):
            if mode == "messages":
                _relay_text(chunk, tokens)
            elif mode == "checkpoints":
                last = cast(dict[str, Any], chunk)
            else:
                for node, update in cast(dict[str, Any], chunk).items():
                    if node == "__interrupt__":
                        interrupted = interrupted or bool(update)
                    elif node[:2] != "__":
                        updates.append((node, update))
        self._outcome = (
            None
            if interrupted or last is None
            else Outcome(values=last["values"], next=tuple(last["next"]))
        )
        return updates

    async def outcome(self) -> Outcome | StateSnapshot:
        """The thread's state now: from the last super-step's stream when nothing came after."""
        return self._outcome if self._outcome is not None else await self.state()

    async def state(self) -> StateSnapshot:
        """The thread's state now: values, the next nodes, pending interrupts."""
        return await self.graph.aget_state(self.config)  # type: ignore[arg-type]

    def state_now(self) -> StateSnapshot:
        """`state`, from sync code (a preview)."""
        return self.graph.get_state(self.config)  # type: ignore[arg-type]


def _relay_text(chunk: Any, tokens: Callable[[str], None] | None) -> None:
    """Hand on the text of a streamed piece of a model's reply (whole messages are not)."""
    message = chunk[0] if isinstance(chunk, tuple) and chunk else None
    if tokens is not None and isinstance(message, AIMessageChunk):
        text = message.text
        if text:
            tokens(text)
