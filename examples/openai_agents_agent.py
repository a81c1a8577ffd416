"""An OpenAI Agents SDK agent, debugged in Stepwise one model turn and one tool call at a time.

    stepwise ui --agent helper=examples/openai_agents_agent.py:agent

Stepwise recognises the `Agent` and steps it: a "Note taker turn N" step per model turn, a step
per tool call named for the tool. `save_note` has `needs_approval=True`, so its calls wait for
you: approve them, edit their arguments, or reject them with a reason the model reads. Undo,
restart the app, add feedback or edit the next turn's input: the run goes on from its input
list, which Stepwise keeps with the task.

The model is any OpenAI-compatible chat-completions server: `OPENAI_BASE_URL` (OpenAI's API
when unset; Ollama, vLLM or llama.cpp's server otherwise), `OPENAI_API_KEY` (local servers take
any key) and `OPENAI_MODEL` (default gpt-4o-mini). Notes are written to `NOTES_DIR` (default
`notes/` in the folder you start Stepwise from).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from agents import Agent, function_tool
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from openai import AsyncOpenAI


@function_tool
def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


@function_tool(needs_approval=True)
def save_note(title: str, text: str) -> str:
    """Save a note as a Markdown file named after its title (a person approves each save)."""
    folder = Path(os.environ.get("NOTES_DIR", "notes"))
    folder.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "note"
    path = folder / f"{name}.md"
    path.write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    return f"saved {path.name} ({len(text.split())} words)"


model = OpenAIChatCompletionsModel(
    model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
    # Chat completions, not the Responses API: local OpenAI-compatible servers speak it too.
    openai_client=AsyncOpenAI(
        base_url=os.environ.get("OPENAI_BASE_URL"),
        api_key=os.environ.get("OPENAI_API_KEY", "local-servers-take-any-key"),
    ),
)

agent = Agent(
    name="Note taker",
    instructions=(
        "You keep short notes. Count the words of a draft with word_count, then save it with "
        "save_note under a short title, and say what you saved."
    ),
    tools=[word_count, save_note],
    model=model,
)
