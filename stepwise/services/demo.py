"""A scripted routing model for `AgentOrchestrator`: services without a real model or a key.

`demo_router_llm()` plays the orchestrator's part by rule, not by reading: it sends the task
to each service the task's text names (by its name, or the name's first word: `secret` for
`secret_fact_agent`), one hop each, in the order the text names them, else to the first
service offered; once each has answered, their answers, one per line, are the final answer.
The app's local demo control plane and `stepwise services up` (with `model = "demo"`) use
it, so both run with no network.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent_core.llms import ChatMessage, ChatResponse, FunctionLLM, ToolCall, ToolSpec

__all__ = ["DEMO_ROUTER_MODEL", "demo_router_llm", "route"]

DEMO_ROUTER_MODEL = "demo router (scripted)"
_EDIT_NOTE = re.compile(r"\A\(A person changed this call .*?\.\)\n", re.DOTALL)


def _mentions(text: str, name: str) -> int | None:
    """Where `text` first names the service (its name, or the name's first word)."""
    lowered = text.lower()
    places = [
        match.start()
        for word in {name.lower(), name.lower().split("_")[0]}
        if (match := re.search(rf"\b{re.escape(word)}\b", lowered))
    ]
    return min(places) if places else None


def route(text: str, service_names: Sequence[str]) -> list[str]:
    """The services `text` names, in the order it names them; else the first service alone."""
    named = [
        (place, name) for name in service_names if (place := _mentions(text, name)) is not None
    ]
    if named:
        return [name for _, name in sorted(named)]
    return list(service_names[:1])


def _reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> ChatResponse | str:
    question = next((m.content for m in messages if m.role == "user"), "")
    answers = [message.content for message in messages if message.role == "tool"]
    plan = route(question, [tool.name for tool in tools])
    if not plan and not answers:
        return "No service is registered to take this task."
    if len(answers) >= len(plan):
        # Every service named has answered: their answers are the task's answer (without the
        # note the orchestrator adds for a hop a person edited, which is for the model).
        return "\n".join(_EDIT_NOTE.sub("", answer, count=1) for answer in answers)
    target = plan[len(answers)]
    call = ToolCall(id=f"call_{len(answers)}_{target}", name=target, args={"input": question})
    return ChatResponse(message=ChatMessage(role="assistant", tool_calls=(call,)))


def demo_router_llm() -> FunctionLLM:
    """A model that routes each task by the service it names (see the module docstring)."""
    return FunctionLLM(_reply, model=DEMO_ROUTER_MODEL)
