"""`ReActAgent` and `FunctionCallingAgent`: a runner and its worker in one call, as LlamaIndex.

`ReActAgent.from_tools(tools, llm=...)` builds the worker from the tools and hands the
remaining keywords to the runner (`store`, `memory`, `chat_history`, ...), so code written for
LlamaIndex's agents runs as it is. Each is an `AgentRunner`: every step can be inspected,
steered and undone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from agent_core.llms.base import LLM
from agent_core.runtime.llamaindex_api import provide_from_llm
from agent_core.runtime.runner import AgentRunner
from agent_core.tools.base import BaseTool
from agent_core.workers.base import BaseAgentWorker
from agent_core.workers.function_calling import FunctionCallingAgentWorker
from agent_core.workers.react import ReActAgentWorker

__all__ = ["FunctionCallingAgent", "ReActAgent"]


class _ToolAgent(AgentRunner):
    """A runner whose `from_tools` builds its worker; the worker's keywords go to the worker."""

    _worker_class: ClassVar[type[BaseAgentWorker]]
    _worker_keywords: ClassVar[frozenset[str]]

    @classmethod
    def from_tools(
        cls, tools: Sequence[BaseTool] | None = None, llm: LLM | None = None, **kwargs: Any
    ) -> _ToolAgent:
        """Build the worker from `tools` and `llm`, and a runner over it.

        Keywords the worker takes (see its class) go to it; the rest go to `AgentRunner`.
        LlamaIndex's `verbose` and `callback_manager` are given to both.
        """
        worker_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in cls._worker_keywords}
        worker_kwargs["verbose"] = kwargs.get("verbose", False)
        worker = cls._worker_class.from_tools(tools, llm=llm, **worker_kwargs)  # type: ignore[attr-defined]
        return cls(worker, llm=llm, **kwargs)


class ReActAgent(_ToolAgent):
    """An `AgentRunner` over a `ReActAgentWorker`: LlamaIndex's `ReActAgent`."""

    _worker_class = ReActAgentWorker
    _worker_keywords = frozenset(
        {
            "max_iterations",
            "tool_approval",
            "instructions",
            "react_chat_formatter",
            "output_parser",
            "handle_reasoning_failure_fn",
            "tool_retriever",
        }
    )


class FunctionCallingAgent(_ToolAgent):
    """An `AgentRunner` over a `FunctionCallingAgentWorker`: LlamaIndex's agent of that name."""

    _worker_class = FunctionCallingAgentWorker
    _worker_keywords = frozenset(
        {
            "max_iterations",
            "tool_approval",
            "system_prompt",
            "prefix_messages",
            "max_function_calls",
            "allow_parallel_tool_calls",
        }
    )


# `AgentRunner.from_llm` is LlamaIndex's spelling for a ReAct agent; the runtime below cannot
# import this class, so it is handed in here.
provide_from_llm(ReActAgent.from_tools)
