"""`ReActAgent` and `FunctionCallingAgent`: a runner and its worker in one call, as LlamaIndex.

`ReActAgent.from_tools(tools, llm=...)` builds the worker from the tools and hands the
remaining keywords to the runner (`store`, `memory`, `chat_history`, ...), so code written for
LlamaIndex's agents runs as it is. Each is an `AgentRunner`: every step can be inspected,
steered and undone. `ReActAgent.update_prompts` takes LlamaIndex's `PromptTemplate`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agent_core.compat.llamaindex.prompts import PromptTemplate
from agent_core.errors import UserError
from agent_core.llms.base import LLM
from agent_core.runtime.llamaindex_api import provide_from_llm
from agent_core.runtime.runner import AgentRunner
from agent_core.tools.base import BaseTool
from agent_core.types import Task
from agent_core.workers.base import BaseAgentWorker
from agent_core.workers.function_calling import FunctionCallingAgentWorker
from agent_core.workers.react import ReActAgentWorker

__all__ = ["SYSTEM_PROMPT_KEY", "FunctionCallingAgent", "ReActAgent"]

SYSTEM_PROMPT_KEY = "agent_worker:system_prompt"
"""LlamaIndex's name for a ReAct agent's system prompt in `get_prompts` / `update_prompts`."""


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

    def get_prompts(self) -> dict[str, PromptTemplate]:
        """LlamaIndex's: the system prompt, under `agent_worker:system_prompt`.

        A custom header is given as written (`{tool_desc}` and `{tool_names}` unfilled);
        Stepwise's own prompt is given as the model receives it.
        """
        worker = self._react_worker()
        header = worker.formatter.system_header
        if header is None:
            header = worker.preview_messages(Task(input=""))[0].content or ""
        return {SYSTEM_PROMPT_KEY: PromptTemplate(header)}

    def update_prompts(self, prompts_dict: Mapping[str, PromptTemplate | str]) -> None:
        """LlamaIndex's: replace the system prompt for every step from now on.

        `agent_worker:system_prompt` is a `PromptTemplate` (the values `partial_format`
        fixed are filled in) or a str; `{tool_desc}` and `{tool_names}` in it are filled
        when each request is built. The worker is rebuilt with the new header and its other
        settings, so a step already running keeps the prompt it started with.

        Raises:
            UserError: A key other than `agent_worker:system_prompt` (a typo would otherwise
                change nothing), or the worker is not a `ReActAgentWorker`.
        """
        unknown = sorted(set(prompts_dict) - {SYSTEM_PROMPT_KEY})
        if unknown:
            raise UserError(
                f"ReActAgent has no prompt {unknown}; its one prompt is {SYSTEM_PROMPT_KEY!r}",
                hint="get_prompts() lists the prompts and their text",
            )
        if SYSTEM_PROMPT_KEY in prompts_dict:
            header = _header_text(prompts_dict[SYSTEM_PROMPT_KEY])
            self.agent_worker = _with_system_header(self._react_worker(), header)

    def _react_worker(self) -> ReActAgentWorker:
        worker = self.agent_worker
        if not isinstance(worker, ReActAgentWorker):
            raise UserError(
                f"this ReActAgent runs a {type(worker).__name__}, which has no ReAct prompt"
            )
        return worker


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


def _header_text(prompt: PromptTemplate | str) -> str:
    if isinstance(prompt, PromptTemplate):
        # Fills what partial_format fixed and leaves {tool_desc} and {tool_names} for the
        # formatter; LlamaIndex's ReAct agent keeps a partially formatted prompt the same way.
        return prompt.format()
    if isinstance(prompt, str):
        return prompt
    raise TypeError(f"a prompt is a PromptTemplate or a str, got {type(prompt).__name__}")


def _with_system_header(worker: ReActAgentWorker, header: str) -> ReActAgentWorker:
    """The same worker, built again with `header`: it renders its system message once."""
    formatter = copy.copy(worker.formatter)  # Keeps a subclass's own `format`.
    formatter.system_header = header
    return type(worker)(
        list(worker.tools.values()),
        worker.llm,
        max_iterations=worker.max_iterations,
        tool_approval=worker.tool_approval,
        react_chat_formatter=formatter,
        output_parser=worker.output_parser,
        handle_reasoning_failure_fn=worker.handle_reasoning_failure_fn,
        verbose=worker.verbose,
        tool_retriever=worker.tool_retriever,
    )


# `AgentRunner.from_llm` is LlamaIndex's spelling for a ReAct agent; the runtime below cannot
# import this class, so it is handed in here.
provide_from_llm(ReActAgent.from_tools)
