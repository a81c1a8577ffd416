"""Framework agents on a real model server's quirks (issue 32, item 7), over loopback sockets.

The servers in `tests.llm_servers` play what llama.cpp's and llama-cpp-python's servers do: an
empty stream for a request with tools, a stream cut mid-reply, a reply cut by `max_tokens`.
langchain-openai is not installed here: the LangGraph graph's chat model is a LangChain
`BaseChatModel` of the test's own that speaks the OpenAI wire format, streamed or not, as
`ChatOpenAI` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_core import AgentRunner
from agent_core.adapters._replies import CUT_AT_CAP
from agent_core.events import TokenDeltaEvent
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.user_code import UserCodeRegistry
from tests.agent_core._user_projects import isolated_imports, write_project
from tests.llm_servers import OpenAIServer

pytestmark = pytest.mark.usefixtures(isolated_imports.__name__)

GRAPH_FILE = '''
"""A one-node LangGraph graph whose chat model speaks the OpenAI wire format."""

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.graph import END, START, MessagesState, StateGraph
from openai import AsyncOpenAI


class WireChat(BaseChatModel):
    """Like ChatOpenAI: `token_usage` and `finish_reason` in the reply's response_metadata."""

    base_url: str
    max_tokens: int | None = None

    @property
    def _llm_type(self):
        return "wire-chat"

    def _request(self, messages, **extra):
        sent = [{{"role": "user", "content": m.text}} for m in messages]
        cap = {{"max_tokens": self.max_tokens}} if self.max_tokens else {{}}
        return dict(model="m", messages=sent, **cap, **extra)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        raise NotImplementedError

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        client = AsyncOpenAI(base_url=self.base_url, api_key="test", max_retries=0)
        done = await client.chat.completions.create(**self._request(messages))
        choice = done.choices[0]
        metadata = {{"token_usage": done.usage.model_dump(), "finish_reason": choice.finish_reason}}
        reply = AIMessage(content=choice.message.content or "", response_metadata=metadata)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        client = AsyncOpenAI(base_url=self.base_url, api_key="test", max_retries=0)
        stream = await client.chat.completions.create(**self._request(messages, stream=True))
        async for chunk in stream:
            for choice in chunk.choices:
                info = {{"finish_reason": choice.finish_reason}} if choice.finish_reason else None
                piece = AIMessageChunk(content=choice.delta.content or "")
                yield ChatGenerationChunk(message=piece, generation_info=info)


model = WireChat(base_url="{url}/v1")
capped = WireChat(base_url="{url}/v1", max_tokens=5)


def _graph(chat):
    async def respond(state: MessagesState):
        return {{"messages": [await chat.ainvoke(state["messages"])]}}

    builder = StateGraph(MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    return builder.compile()


graph = _graph(model)
capped_graph = _graph(capped)
'''


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def runner_for(tmp_path: Path, server: OpenAIServer, target: str, name: str) -> AgentRunner:
    files = {"agent.py": GRAPH_FILE.format(url=server.url)}
    project = write_project(tmp_path / "project", files)
    registry = UserCodeRegistry(project=project, agents={name: target})
    spec = AgentSpec.from_registry(registry, agent=name, tools=())
    return spec.build_runner(store=SQLiteStore(project / "stepwise.db"), registry=registry)


def streamed(runner: AgentRunner, text: str) -> tuple[Any, list[str]]:
    task = runner.create_task(text)
    events = list(runner.stream_step(task.task_id))
    deltas = [e.delta for e in events if isinstance(e, TokenDeltaEvent)]
    return events[-1].output, deltas


def test_langgraph_a_model_whose_stream_comes_back_empty_is_asked_unstreamed(tmp_path, server):
    # LangGraph streams every chat model when tokens are watched; LangChain then fails an
    # empty stream with "No generations found in stream". The step runs again unstreamed.
    server.script("Hello from the model.", "Again.")
    server.quirks.add("broken_stream")
    runner = runner_for(tmp_path, server, "agent.py:graph", "lg")
    output, deltas = streamed(runner, "Hi")
    assert server.quirk_hits["broken_stream"] == 1
    assert output.output == "Hello from the model." and deltas == []
    assert [r.json.get("stream", False) for r in server.model_requests] == [True, False]
    output, _ = streamed(runner, "Hi again")  # The graph's models are not streamed any more.
    assert output.output == "Again." and server.quirk_hits["broken_stream"] == 1


def test_langgraph_tokens_come_from_the_replys_own_counts_or_an_estimate(tmp_path, server):
    runner = runner_for(tmp_path, server, "agent.py:graph", "lg")
    task = runner.create_task("Hi")
    counted = runner.run_step(task.task_id).usage  # response_metadata["token_usage"]
    assert (counted.prompt_tokens, counted.completion_tokens, counted.estimated) == (11, 7, False)
    server.quirks.add("no_stream_usage")
    output, deltas = streamed(runner, "Hi")
    assert deltas and output.usage.estimated and output.usage.total_tokens > 0


def test_langgraph_a_reply_cut_by_max_tokens_carries_a_note(tmp_path, server):
    server.quirks.add("endless_reply")
    runner = runner_for(tmp_path, server, "agent.py:capped_graph", "lg")
    task = runner.create_task("Write forever")
    output = runner.run_step(task.task_id)
    assert [note.code for note in output.notes] == [CUT_AT_CAP]
    assert "max_tokens" in output.notes[0].message
    streamed_output, _ = streamed(runner, "Again")
    assert [note.code for note in streamed_output.notes] == [CUT_AT_CAP]


PYDANTIC_AI_FILE = """
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

model = OpenAIChatModel("m", provider=OpenAIProvider(base_url="{url}/v1", api_key="test"))
agent = Agent(model, model_settings={{"max_tokens": 5}})
"""


def test_pydantic_ai_a_reply_cut_by_max_tokens_carries_a_note(tmp_path, server):
    server.quirks.add("endless_reply")
    project = write_project(tmp_path / "pai", {"agent.py": PYDANTIC_AI_FILE.format(url=server.url)})
    registry = UserCodeRegistry(project=project, agents={"pai": "agent.py:agent"})
    spec = AgentSpec.from_registry(registry, agent="pai", tools=())
    runner = spec.build_runner(store=SQLiteStore(project / "stepwise.db"), registry=registry)
    task = runner.create_task("Write forever")
    output = runner.run_step(task.task_id)
    assert output.is_last and output.output == "word " * 5
    assert [note.code for note in output.notes] == [CUT_AT_CAP]
    assert "max_tokens" in output.notes[0].message
