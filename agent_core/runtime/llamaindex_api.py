"""What a LlamaIndex 0.12 user calls on `AgentRunner` that Stepwise spells its own way.

Kept apart from `runner.py` so the runner stays about stepping: this module maps LlamaIndex's
argument order and conveniences (`chat_history`, `stream_chat`, `query`, ...) onto the
runner's own API, and adds nothing the runner would not do itself.

It is a leaf of the runtime: it imports neither the runner (it sees it as `_Runner`, the
methods it calls) nor anything above the runtime. `AgentRunner.from_llm` builds LlamaIndex's
`ReActAgent`, which lives above, in `agent_core.compat.llamaindex`; that package hands its
builder in with `provide_from_llm` when it is imported (`import agent_core` does).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol, cast

from agent_core import _moved
from agent_core.errors import StepNotFoundError, UserError
from agent_core.events import StepCompletedEvent, StepEvent
from agent_core.llms.base import LLM, ChatMessage
from agent_core.memory import ChatMemoryBuffer
from agent_core.runtime.streaming_response import StreamingAgentChatResponse
from agent_core.store.base import MemoryWrite, Store
from agent_core.telemetry import hooks as telemetry_hooks
from agent_core.tools.base import BaseTool
from agent_core.types import (
    AgentChatResponse,
    StepInput,
    Task,
    TaskStep,
    TaskStepOutput,
    ToolOutput,
    short_id,
)

__all__ = [
    "LlamaIndexRunnerAPI",
    "build_from_llm",
    "extra_sources",
    "provide_from_llm",
]


def __getattr__(name: str) -> Any:
    # `resolve_step` moved to `queue` (agent_core._moved._MOVED): served, with a warning.
    return _moved.moved_name(__name__, name)


# LlamaIndex's chat keywords that are about the call, not the task.
_CHAT_ONLY = ("chat_history", "tool_choice", "mode")

FromLLM = Callable[..., Any]
"""`(tools, llm=..., **kwargs) -> AgentRunner`: what `AgentRunner.from_llm` returns."""

_from_llm: FromLLM | None = None


def provide_from_llm(build: FromLLM) -> None:
    """Make `build` what `AgentRunner.from_llm` calls (`agent_core.compat.llamaindex` does)."""
    global _from_llm
    _from_llm = build


def build_from_llm(tools: Sequence[BaseTool] | None, llm: LLM | None, **kwargs: Any) -> Any:
    """LlamaIndex's `AgentRunner.from_llm`: a `ReActAgent` over `llm`, from its provider.

    Raises:
        UserError: Nothing provided it, so `agent_core.compat.llamaindex` was never imported.
    """
    if _from_llm is None:
        raise UserError(
            "AgentRunner.from_llm builds a ReActAgent, which agent_core.compat.llamaindex "
            "provides: import agent_core (or that package) first, or call "
            "ReActAgent.from_tools(tools, llm=...) yourself"
        )
    return _from_llm(tools, llm=llm, **kwargs)


class _Runner(Protocol):
    """What this module calls on the runner it is mixed into (`AgentRunner`)."""

    memory: ChatMemoryBuffer
    conversation_id: str | None
    store: Store

    def create_task(self, input: str, **kwargs: Any) -> Task: ...

    def astream_step(
        self,
        task_id: str,
        input: StepInput = None,
        step: TaskStep | str | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StepEvent]: ...

    def finalize_response(
        self, task_id: str, step_output: TaskStepOutput | None = None, **kwargs: Any
    ) -> AgentChatResponse: ...

    def get_completed_steps(self, task_id: str) -> list[TaskStepOutput]: ...

    def chat(self, message: str, **kwargs: Any) -> AgentChatResponse: ...

    def achat(self, message: str, **kwargs: Any) -> Awaitable[AgentChatResponse]: ...


def extra_sources(task: Task) -> list[ToolOutput]:
    """Tool outputs a LlamaIndex worker kept in `extra_state["sources"]` (stored as JSON)."""
    kept = task.extra_state.get("sources") or []
    return [ToolOutput.model_validate(s) for s in kept if isinstance(s, ToolOutput | dict)]


def use_chat_history(runner: _Runner, kwargs: dict[str, Any]) -> None:
    """Apply LlamaIndex's per-call `chat_history=`, which replaces the conversation.

    The call's other LlamaIndex-only keywords (`tool_choice`, `mode`) are dropped.
    """
    history = kwargs.pop("chat_history", None)
    for key in _CHAT_ONLY:
        kwargs.pop(key, None)
    if history is not None:
        replace_history(runner, history)


def replace_history(runner: _Runner, history: Sequence[ChatMessage]) -> None:
    """Make `history` the runner's conversation, in memory and in its store."""
    runner.memory.set(list(history))
    if runner.conversation_id is not None:
        write = MemoryWrite(keep=0, append=list(history))
        runner.store.write_conversation(runner.conversation_id, write)


async def _answer_chunks(runner: _Runner, task_id: str) -> AsyncIterator[str]:
    """Run the task's steps; yield its answer when the last one completes."""
    while True:
        output: TaskStepOutput | None = None
        async for event in runner.astream_step(task_id):
            if isinstance(event, StepCompletedEvent):
                output = event.output
        if output is not None and output.is_last:
            if output.output is not None and str(output.output):
                yield str(output.output)
            return


def _runner(api: LlamaIndexRunnerAPI) -> _Runner:
    # The mixin is only ever a base of AgentRunner.
    return cast(_Runner, api)


class LlamaIndexRunnerAPI:
    """LlamaIndex's `AgentRunner` conveniences, on top of the runner's own methods."""

    @property
    def chat_history(self) -> list[ChatMessage]:
        """The runner's conversation: the finalized tasks' messages, oldest first."""
        return _runner(self).memory.get_all()

    def query(self, query_str: str, **kwargs: Any) -> AgentChatResponse:
        """`chat` under LlamaIndex's query-engine name."""
        return _runner(self).chat(query_str, **kwargs)

    async def aquery(self, query_str: str, **kwargs: Any) -> AgentChatResponse:
        """Async twin of `query`."""
        return await _runner(self).achat(query_str, **kwargs)

    async def afinalize_response(
        self, task_id: str, step_output: TaskStepOutput | None = None, **kwargs: Any
    ) -> AgentChatResponse:
        """Async twin of `finalize_response` (it does no I/O but the store's commit)."""
        return _runner(self).finalize_response(task_id, step_output, **kwargs)

    def get_completed_step(self, task_id: str, step_id: str, **kwargs: Any) -> TaskStepOutput:
        """The output of one completed step of a task."""
        for output in _runner(self).get_completed_steps(task_id):
            if output.task_step.step_id == step_id:
                return output
        raise StepNotFoundError(
            f"task {short_id(task_id)} has no completed step {step_id}",
            hint="get_completed_steps() lists them",
            task_id=task_id,
            step_id=step_id,
        )

    async def astream_chat(self, message: str, **kwargs: Any) -> StreamingAgentChatResponse:
        """Start a task and return its answer as a stream; reading it runs the task."""
        return _stream(_runner(self), message, kwargs)

    def stream_chat(self, message: str, **kwargs: Any) -> StreamingAgentChatResponse:
        """Sync twin of `astream_chat`: read `response_gen` outside an event loop."""
        return _stream(_runner(self), message, kwargs)


def _stream(runner: _Runner, message: str, kwargs: dict[str, Any]) -> StreamingAgentChatResponse:
    if telemetry_hooks.observers:
        telemetry_hooks.chat_started(message)
    use_chat_history(runner, kwargs)
    task = runner.create_task(message, **kwargs)
    response = StreamingAgentChatResponse(
        _answer_chunks(runner, task.task_id), lambda: runner.finalize_response(task.task_id)
    )
    if telemetry_hooks.observers:  # As LlamaIndex: the stream, before it is read.
        telemetry_hooks.chat_ended(response)
    return response
