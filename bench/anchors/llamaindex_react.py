"""LlamaIndex anchor: the scripted ReAct trajectory through `AgentRunner` + `ReActAgentWorker`.

One task is K tool rounds (`add(1, 2)`) and then an answer, driven step by step with
`create_task` / `run_step` / `finalize_response`. The clock runs from after `create_task` to the
last `run_step` (the same window as the Stepwise side), and a task has K + 1 steps.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import llama_index.core
from llama_index.core.agent import AgentRunner, ReActAgentWorker
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.tools import FunctionTool
from pydantic import PrivateAttr

FRAMEWORK = "llamaindex"
VERSION = f"llama-index-core=={llama_index.core.__version__}"

_TOOL_TURN = 'Thought: I need to add.\nAction: add\nAction Input: {"a": 1, "b": 2}'
_ANSWER_TURN = "Thought: I can answer without using any more tools.\nAnswer: 3"
_QUESTION = "What is 1 + 2?"


class ScriptedReActLLM(CustomLLM):
    """A zero-latency model that replies with K ReAct tool turns, then one answer turn."""

    k: int
    _calls: int = PrivateAttr(default=0)

    @property
    def metadata(self) -> LLMMetadata:
        """Describe a chat model so the ReAct worker sends it chat messages."""
        return LLMMetadata(model_name="scripted-react", is_chat_model=True)

    @property
    def calls(self) -> int:
        """How many replies the model has given."""
        return self._calls

    def _next_text(self) -> str:
        self._calls += 1
        return _TOOL_TURN if self._calls <= self.k else _ANSWER_TURN

    # `chat` is overridden (with the same instrumentation decorator a provider LLM carries) so
    # the timing holds what a real chat-model integration costs, not CustomLLM's
    # messages-to-prompt round trip.
    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Return the next scripted turn as an assistant message."""
        text = self._next_text()
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text))

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Return the next scripted turn as a completion."""
        return CompletionResponse(text=self._next_text())

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        """Yield the next scripted turn as one chunk."""
        text = self._next_text()
        yield CompletionResponse(text=text, delta=text)


def _build_agent(k: int, calls: list[int]) -> tuple[AgentRunner, ScriptedReActLLM]:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls.append(1)
        return a + b

    llm = ScriptedReActLLM(k=k)
    tool = FunctionTool.from_defaults(fn=add)
    # The worker counts reasoning entries, not rounds: each round adds an action and an
    # observation, so K rounds need a limit above 2K + 1.
    worker = ReActAgentWorker.from_tools([tool], llm=llm, max_iterations=2 * k + 5, verbose=False)
    return AgentRunner(worker), llm


def run_task(k: int) -> int:
    """Run one task of K tool rounds and return the stepping time in nanoseconds.

    Raises:
        AssertionError: If the trajectory did not call the tool K times in K + 1 steps.
    """
    calls: list[int] = []
    agent, llm = _build_agent(k, calls)
    task = agent.create_task(_QUESTION)
    steps = 0
    start = time.perf_counter_ns()
    while True:
        output = agent.run_step(task.task_id)
        steps += 1
        if output.is_last:
            break
    elapsed = time.perf_counter_ns() - start
    response = agent.finalize_response(task.task_id)
    assert len(calls) == k, f"add ran {len(calls)} times, expected {k}"
    assert steps == k + 1, f"the task took {steps} steps, expected {k + 1}"
    assert llm.calls == k + 1, f"the model answered {llm.calls} times, expected {k + 1}"
    assert str(response).strip() == "3", f"unexpected final answer {response!s}"
    return elapsed
