"""A scripted routing model for `AgentOrchestrator`: services without a real model or a key.

`demo_router_llm()` plays the orchestrator's part by rule, not by reading: it sends the task
to the first service whose name (or the name's first word, `secret` of `secret_fact_agent`)
the task's text mentions, else to the first service offered; once a service has answered,
that answer is the task's final answer. The app's local demo control plane and
`stepwise services up` (with `model = "demo"`) use it, so both run with no network.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent_core.llms import ChatMessage, ChatResponse, FunctionLLM, ToolCall, ToolSpec

__all__ = ["DEMO_ROUTER_MODEL", "demo_router_llm", "route"]

DEMO_ROUTER_MODEL = "demo router (scripted)"


def route(text: str, service_names: Sequence[str]) -> str | None:
    """The service `text` mentions (by name or the name's first word), else the first one."""
    words = set(re.findall(r"[a-z0-9_]+", text.lower()))
    for name in service_names:
        if name.lower() in words or name.lower().split("_")[0] in words:
            return name
    return service_names[0] if service_names else None


def _reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> ChatResponse | str:
    answers = [message.content for message in messages if message.role == "tool"]
    if answers:
        return answers[-1]  # A service answered: its answer is the task's answer.
    question = next((m.content for m in messages if m.role == "user"), "")
    target = route(question, [tool.name for tool in tools])
    if target is None:
        return "No service is registered to take this task."
    call = ToolCall(id=f"call_{target}", name=target, args={"input": question})
    return ChatResponse(message=ChatMessage(role="assistant", tool_calls=(call,)))


def demo_router_llm() -> FunctionLLM:
    """A model that routes each task by the service it names (see the module docstring)."""
    return FunctionLLM(_reply, model=DEMO_ROUTER_MODEL)
