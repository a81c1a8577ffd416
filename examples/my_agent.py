"""An agent of your own: a headline writer that works in two steps.

Step 1 asks the model for a headline about the task. Step 2 counts its words with the
`word_count` tool from my_tools.py and, if it is too long, shortens it with `shorten`; then
the task is done. Type an input on step 2 in the stepper to replace the model's draft.

Stepwise calls `build_agent(llm)` with the model chosen in the app. The demo model only plays
the built-in scenarios, so with it this agent uses a stand-in model of its own (and says so),
and runs with no key.
"""

from __future__ import annotations

from typing import Any

import my_tools  # A sibling module: Stepwise puts this file's folder on sys.path.

from agent_core.demos import DEMO_MODEL_NAME
from agent_core.llms import LLM, ChatMessage, FunctionLLM, ToolSpec
from agent_core.types import Task
from agent_core.user_code.registry import tools_from_module
from agent_core.workers import CustomSimpleAgentWorker

MAX_WORDS = 8
STAND_IN_MODEL = "my_agent's stand-in model (no key needed)"

_SYSTEM = "You write one newspaper headline for the text you are given. Reply with it only."


class HeadlineWorker(CustomSimpleAgentWorker):
    """Step 1: the model drafts a headline. Step 2: the tools check its length and finish."""

    async def _arun_step(
        self, state: dict[str, Any], task: Task, input: str | None
    ) -> tuple[str, bool]:
        if "draft" not in state:
            return await self._draft(state, input or task.input)
        draft = input.strip() if input and input.strip() else state["draft"]
        count = int((await self.tools["word_count"].acall({"text": draft})).content)
        if count <= MAX_WORDS:
            return f"Headline: {draft}\n(word_count: {count} words, within {MAX_WORDS})", True
        args = {"text": draft, "max_words": MAX_WORDS}
        short = (await self.tools["shorten"].acall(args)).content
        return (
            f"Headline: {short}\n(word_count: {count} words, so shorten cut it to {MAX_WORDS})",
            True,
        )

    async def _draft(self, state: dict[str, Any], text: str) -> tuple[str, bool]:
        assert self.llm is not None
        messages = [
            ChatMessage(role="system", content=_SYSTEM),
            ChatMessage(role="user", content=text),
        ]
        reply = await self.llm.chat(messages)
        state["draft"] = reply.text.strip()
        note = (
            " (the demo model only knows its scenarios)" if self.llm.model == STAND_IN_MODEL else ""
        )
        return f"Draft by {self.llm.model}{note}:\n{state['draft']}", False


def _stand_in_headline(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
    """A deterministic stand-in for a model: a headline made from the task's own words."""
    text = next((m.content for m in reversed(messages) if m.role == "user"), "")
    words = text.replace("\n", " ").split()
    return "Breaking: " + " ".join(words[:12]).rstrip(".?!").capitalize()


def build_agent(llm: LLM) -> HeadlineWorker:
    """The agent Stepwise runs: `llm` is the model chosen in the app."""
    if llm.model == DEMO_MODEL_NAME:
        llm = FunctionLLM(_stand_in_headline, model=STAND_IN_MODEL)
    return HeadlineWorker(tools=tools_from_module(my_tools), llm=llm)
