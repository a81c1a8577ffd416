"""The llama-agents quickstart, on Stepwise's services: two agents and an agentic orchestrator.

A "secret fact" agent has a tool, `get_the_secret_fact`; a "dumb fact" agent has none. The
orchestrator's LLM picks which agent answers. Run it:

    python examples/services_quickstart.py                 # offline, on scripted models
    STEPWISE_MODEL=openai:gpt-4o-mini python examples/services_quickstart.py   # a real model

The scripted models play the parts without a network: they decide from the conversation's
shape (has a tool answered yet?), so every part of the system runs for real.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from agent_core import AgentRunner
from agent_core.llms import LLM, ChatMessage, ChatResponse, FunctionLLM, ToolCall, ToolSpec
from agent_core.llms.catalog import infer_model
from agent_core.tools import FunctionTool
from agent_core.workers import FunctionCallingAgentWorker
from stepwise.services import (
    AgentOrchestrator,
    AgentService,
    BaseMessageQueue,
    ControlPlaneServer,
    LocalLauncher,
    SimpleMessageQueue,
)

MODEL_ENV = "STEPWISE_MODEL"


def get_the_secret_fact() -> str:
    """Returns the secret fact."""
    return "The secret fact is: A baby llama is called a 'Cria'."


@dataclass
class QuickstartLLMs:
    """The three models: the orchestrator's and each agent's."""

    orchestrator: LLM
    secret_agent: LLM
    dumb_agent: LLM


def _call(name: str, **args: str) -> ChatResponse:
    call = ToolCall(id=f"call_{name}", name=name, args=args)
    return ChatResponse(message=ChatMessage(role="assistant", tool_calls=(call,)))


def _last_tool_answer(messages: Sequence[ChatMessage]) -> str | None:
    answers = [message.content for message in messages if message.role == "tool"]
    return answers[-1] if answers else None


def _orchestrate(messages: list[ChatMessage], tools: list[ToolSpec]) -> ChatResponse | str:
    answer = _last_tool_answer(messages)
    if answer is not None:
        return answer  # A service answered: that is the final answer.
    question = next(m.content for m in messages if m.role == "user")
    return _call("secret_fact_agent", input=question)


def _secret_agent(messages: list[ChatMessage], tools: list[ToolSpec]) -> ChatResponse | str:
    answer = _last_tool_answer(messages)
    return answer if answer is not None else _call("get_the_secret_fact")


def scripted_llms() -> QuickstartLLMs:
    """Offline models that play the quickstart's parts."""
    return QuickstartLLMs(
        orchestrator=FunctionLLM(_orchestrate, model="scripted orchestrator"),
        secret_agent=FunctionLLM(_secret_agent, model="scripted secret agent"),
        dumb_agent=FunctionLLM(lambda m, t: "Llamas hum to each other.", model="scripted dumb"),
    )


def real_llms(setting: str) -> QuickstartLLMs:
    """One real model for every part, from a setting such as `openai:gpt-4o-mini`."""
    return QuickstartLLMs(infer_model(setting), infer_model(setting), infer_model(setting))


def default_llms() -> QuickstartLLMs:
    """Scripted models, or the real one `$STEPWISE_MODEL` names."""
    setting = os.environ.get(MODEL_ENV, "")
    return real_llms(setting) if setting and setting != "demo" else scripted_llms()


def build(
    llms: QuickstartLLMs | None = None,
    *,
    message_queue: BaseMessageQueue | None = None,
    db: str = ":memory:",
    port: int = 8001,
) -> tuple[list[AgentService], ControlPlaneServer, BaseMessageQueue]:
    """The quickstart's services, control plane and queue (as in llama-agents' README)."""
    llms = llms or default_llms()
    tool = FunctionTool.from_defaults(fn=get_the_secret_fact)
    worker1 = FunctionCallingAgentWorker.from_tools([tool], llm=llms.secret_agent)
    worker2 = FunctionCallingAgentWorker.from_tools([], llm=llms.dumb_agent)
    agent1 = AgentRunner(worker1, conversation_id=None)
    agent2 = AgentRunner(worker2, conversation_id=None)

    message_queue = message_queue or SimpleMessageQueue()
    control_plane = ControlPlaneServer(
        message_queue=message_queue,
        orchestrator=AgentOrchestrator(llm=llms.orchestrator),
        db=db,
        port=port,
    )
    agent_server_1 = AgentService(
        agent=agent1,
        message_queue=message_queue,
        description="Useful for getting the secret fact.",
        service_name="secret_fact_agent",
    )
    agent_server_2 = AgentService(
        agent=agent2,
        message_queue=message_queue,
        description="Useful for getting random dumb facts.",
        service_name="dumb_fact_agent",
    )
    return [agent_server_1, agent_server_2], control_plane, message_queue


def main() -> None:
    """Send one question through the system and print the answer."""
    services, control_plane, message_queue = build()
    launcher = LocalLauncher(services, control_plane, message_queue)
    result = launcher.launch_single("What is the secret fact?")
    print(f"Result: {result}")


if __name__ == "__main__":
    main()
