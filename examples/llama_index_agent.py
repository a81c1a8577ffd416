"""A LlamaIndex `FunctionAgent` with two tools and a question for a person, stepped in Stepwise.

Runs offline: its LLM is a stand-in (LlamaIndex's `MockFunctionCallingLLM` with a reply function)
that multiplies the question's first two numbers, adds the third, then asks a person whether to
send the answer (the `confirm` tool waits for a `HumanResponseEvent`), and answers.

    stepwise ui --agent arithmetic=examples/llama_index_agent.py:agent

Each model call and each tool call is a step; "confirm" asks its question in the app.
"""

import re

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def confirm(ctx: Context, answer: str) -> str:
    """Ask a person whether to send the answer; returns what they said."""
    reply = await ctx.wait_for_event(
        HumanResponseEvent,
        waiter_id=f"confirm:{answer}",
        waiter_event=InputRequiredEvent(prefix=f"Send {answer!r}?"),
        timeout=None,
    )
    return str(reply.response)


def _call(name: str, n: int, **args: object) -> ChatMessage:
    block = ToolCallBlock(tool_call_id=f"call_{name}_{n}", tool_name=name, tool_kwargs=args)
    return ChatMessage(role="assistant", blocks=[block])


def arithmetic(messages: list[ChatMessage], **kwargs: object) -> ChatMessage:
    """The stand-in model: multiply, add, confirm, answer (reading the tool results)."""
    question = next(m for m in messages if m.role == "user" and m.content)
    a, b, c = (int(n) for n in re.findall(r"\d+", question.content or "")[:3])
    results = [m.content or "" for m in messages if m.role == "tool"]
    if not results:
        return _call("multiply", 1, a=a, b=b)
    if len(results) == 1:
        return _call("add", 2, a=int(results[0]), b=c)
    if len(results) == 2:
        return _call("confirm", 3, answer=results[1])
    return ChatMessage(role="assistant", content=f"The answer is {results[1]}. ({results[2]})")


agent = FunctionAgent(
    name="arithmetic",
    description="Does arithmetic with tools, then asks before answering.",
    tools=[multiply, add, confirm],
    llm=MockFunctionCallingLLM(response_generator=arithmetic),
    system_prompt="Use the tools.",
)
