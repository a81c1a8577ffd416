"""Replay of framework agents (pydantic-ai, the Agents SDK, LangGraph) answered at the client.

Each test runs a user's framework agent (a file of the test's own project) on the loopback
OpenAI server, or on pydantic-ai's `FunctionModel`, saves the task as a case, stops the server
and replays the case: the model is answered at the SDK's `httpx` transport (or by a
`FunctionModel`) from the recording. Changing one tool's code makes the replay diverge at the
tool's step with the diff of its result.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_core.recordings import case_from_task, load_case, replay_case, save_case
from agent_core.recordings.cases import Case
from agent_core.spec import AgentSpec
from agent_core.user_code import UserCodeRegistry
from tests.agent_core._user_projects import isolated_imports, write_project  # noqa: F401
from tests.agent_core.recordings._projects import change_agent
from tests.llm_servers import OpenAIServer, Reply, ReplyToolCall

pytestmark = pytest.mark.usefixtures("isolated_imports")

PYDANTIC_AI_OPENAI = """
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

client = AsyncOpenAI(base_url="{url}/v1", api_key="test")
model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
agent = Agent(model, instructions="You add with your tool.")


@agent.tool_plain
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b
"""

PYDANTIC_AI_FUNCTION = """
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel


def think(messages, info):
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        return ModelResponse(parts=[TextPart(str(last.content))])
    return ModelResponse(parts=[ToolCallPart("add", {{"a": 1, "b": 2}}, tool_call_id="c1")])


agent = Agent(FunctionModel(think), instructions="You add with your tool.")


@agent.tool_plain
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b
"""

AGENTS_SDK = """
from agents import Agent, function_tool
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from openai import AsyncOpenAI

model = OpenAIChatCompletionsModel(
    model="gpt-4o-mini", openai_client=AsyncOpenAI(base_url="{url}/v1", api_key="test")
)


@function_tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b


agent = Agent(name="Calculator", instructions="You add with your tool.", tools=[add], model=model)
"""

# LangChain's ChatOpenAI is not installed here: this chat model is the same thing in small, a
# LangChain chat model that sends through the OpenAI SDK, so its calls reach httpx likewise.
LANGGRAPH = """
import json

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import MessagesState, StateGraph, START
from langgraph.prebuilt import ToolNode, tools_condition
from openai import AsyncOpenAI

ROLES = {{"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}}


@tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b


def _wire(message):
    data = {{"role": ROLES[message.type], "content": message.content or ""}}
    if message.type == "ai" and message.tool_calls:
        data["tool_calls"] = [
            {{"id": c["id"], "type": "function",
              "function": {{"name": c["name"], "arguments": json.dumps(c["args"])}}}}
            for c in message.tool_calls
        ]
    if message.type == "tool":
        data["tool_call_id"] = message.tool_call_id
    return data


class OpenAIChat(BaseChatModel):
    tools: list = []

    @property
    def _llm_type(self):
        return "openai-sdk"

    def bind_tools(self, tools, **kwargs):
        return self.model_copy(update={{"tools": [convert_to_openai_tool(t) for t in tools]}})

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        raise NotImplementedError

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        client = AsyncOpenAI(base_url="{url}/v1", api_key="test")
        reply = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[_wire(m) for m in messages], tools=self.tools
        )
        got = reply.choices[0].message
        calls = [
            {{"id": c.id, "name": c.function.name, "args": json.loads(c.function.arguments)}}
            for c in got.tool_calls or []
        ]
        return ChatResult(generations=[ChatGeneration(
            message=AIMessage(content=got.content or "", tool_calls=calls)
        )])


model = OpenAIChat().bind_tools([add])


async def agent(state: MessagesState):
    return {{"messages": [await model.ainvoke(state["messages"])]}}


builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_node("tools", ToolNode([add]))
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", tools_condition)
builder.add_edge("tools", "agent")
graph = builder.compile()
"""


def _record(project: Path, target: str, server: OpenAIServer | None) -> Case:
    registry = UserCodeRegistry(project=project, agents={"calc": target})
    spec = AgentSpec.from_registry(registry, agent="calc", tools=())
    runner = spec.build_runner(registry=registry)
    task_id = runner.create_task("What is 1 + 2?").task_id
    runner.run_until(task_id)
    runner.finalize_response(task_id)
    if server is not None:
        assert len(server.model_requests) == 2
    return case_from_task(runner, task_id, name="adds")


def _saved(tmp_path: Path, text: str, target: str, *, served: bool = True) -> Case:
    """Record the agent of `text` (on a loopback server when `served`), save, load its case."""
    if not served:
        write_project(tmp_path, {"agent.py": text.format()})
        case = _record(tmp_path, target, None)
    else:
        with OpenAIServer(api_key="test") as server:
            write_project(tmp_path, {"agent.py": text.format(url=server.url)})
            server.script(
                Reply(tool_calls=[ReplyToolCall("add", {"a": 1, "b": 2}, id="call_1")]),
                Reply(text="3"),
            )
            case = _record(tmp_path, target, server)
    return load_case(save_case(case, tmp_path / "cases"))


FRAMEWORKS = [
    pytest.param(PYDANTIC_AI_OPENAI, "agent.py:agent", True, id="pydantic-ai-openai"),
    pytest.param(PYDANTIC_AI_FUNCTION, "agent.py:agent", False, id="pydantic-ai-function"),
    pytest.param(AGENTS_SDK, "agent.py:agent", True, id="openai-agents"),
    pytest.param(LANGGRAPH, "agent.py:graph", True, id="langgraph"),
]


@pytest.mark.parametrize(("text", "target", "served"), FRAMEWORKS)
def test_a_framework_case_replays_with_the_server_stopped(
    tmp_path: Path, text: str, target: str, served: bool
) -> None:
    case = _saved(tmp_path, text, target, served=served)
    assert [s.request is not None for s in case.steps][:1] == [True]
    result = replay_case(case, project=tmp_path)
    assert result.passed, result.report()
    assert result.steps == len(case.steps)


@pytest.mark.parametrize(("text", "target", "served"), FRAMEWORKS)
def test_a_changed_tool_diverges_at_its_step_with_the_diff(
    tmp_path: Path, text: str, target: str, served: bool
) -> None:
    case = _saved(tmp_path, text, target, served=served)
    change_agent(tmp_path, "return a + b", "return a + b + 1")
    result = replay_case(case, project=tmp_path)
    divergence = result.divergence
    assert divergence is not None, result.report()
    tool_step = next(s for s in case.steps if s.tool_calls)
    assert (divergence.step, divergence.kind) == (tool_step.number, "tool_result")
    assert "-3\n+4" in divergence.diff


@pytest.mark.parametrize(
    ("text", "target", "served"), [p for p in FRAMEWORKS if p.id != "langgraph"]
)
def test_changed_instructions_diverge_at_the_first_request_with_its_diff(
    tmp_path: Path, text: str, target: str, served: bool
) -> None:
    case = _saved(tmp_path, text, target, served=served)
    change_agent(tmp_path, "You add with your tool.", "You add with care.")
    result = replay_case(case, project=tmp_path)
    divergence = result.divergence
    assert divergence is not None, result.report()
    assert (divergence.step, divergence.kind) == (1, "request")
    assert "-    You add with your tool." in divergence.diff
    assert "+    You add with care." in divergence.diff
