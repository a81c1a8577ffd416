"""A LangGraph agent of your own, stepped in Stepwise one super-step at a time.

    stepwise ui --agent calc=langgraph_agent.py:graph

The graph is plain LangGraph: an "agent" node on a chat model that has two tools, a prebuilt
`ToolNode` that runs the calls it makes, and a "review" node that asks you, with
`interrupt()`, before the answer goes out. In the app each Run step runs one super-step (a
node, or the nodes LangGraph runs together); the review's question waits for your answer.

It needs no key: `StandInModel` plays the model (it multiplies the first two numbers of your
question and adds the third, as "What is (121 * 3) + 42?" asks). With a real model, change
one line (after `pip install langchain-openai`):

    model = ChatOpenAI(model="gpt-4o-mini").bind_tools(TOOLS)
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS = [multiply, add]


class StandInModel(BaseChatModel):
    """A stand-in for a chat model: multiply, then add, then answer with the last result."""

    @property
    def _llm_type(self) -> str:
        return "stand-in"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        """Accept the tools, as a real chat model does (this one knows them already)."""
        return self.bind(**kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    @staticmethod
    def _reply(messages: list[BaseMessage]) -> AIMessage:
        asked = [m for m in messages if isinstance(m, HumanMessage)]
        numbers = [int(n) for n in re.findall(r"\d+", asked[-1].text)] if asked else []
        results = [m for m in messages[messages.index(asked[-1]) :] if isinstance(m, ToolMessage)]
        if len(numbers) < 3:
            return AIMessage("Ask me something like: What is (121 * 3) + 42?")
        if not results:
            call = {"name": "multiply", "args": {"a": numbers[0], "b": numbers[1]}, "id": "m1"}
            return AIMessage("", tool_calls=[call])
        if len(results) == 1 and results[0].status != "error":
            call = {"name": "add", "args": {"a": int(results[0].text), "b": numbers[2]}, "id": "a1"}
            return AIMessage("", tool_calls=[call])
        return AIMessage(f"The answer is {results[-1].text}.")


model = StandInModel().bind_tools(TOOLS)


def agent(state: MessagesState) -> dict[str, Any]:
    """The model reads the conversation and answers, or asks for tool calls."""
    return {"messages": [model.invoke(state["messages"])]}


def route(state: MessagesState) -> str:
    """To the tools while the model asks for them, else to the reviewer."""
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else "review"


def review(state: MessagesState) -> dict[str, Any]:
    """Ask a person whether the answer may go out; their answer is the node's result."""
    verdict = interrupt({"question": "Send this answer?", "answer": state["messages"][-1].text})
    return {"messages": [AIMessage(f"Sent. The reviewer said: {verdict}")]}


builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_node("tools", ToolNode(TOOLS))
builder.add_node("review", review)
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", route, ["tools", "review"])
builder.add_edge("tools", "agent")
builder.add_edge("review", END)
graph = builder.compile()  # No checkpointer: Stepwise gives it its own.


if __name__ == "__main__":  # The graph alone, as LangGraph runs it (it stops at the review).
    for update in graph.stream({"messages": [("user", "What is (121 * 3) + 42?")]}):
        print(update)
