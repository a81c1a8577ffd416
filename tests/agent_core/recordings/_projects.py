"""A user's project for the replay tests: an agent factory and its tools in a file of its own."""

from __future__ import annotations

from pathlib import Path

from agent_core.user_code.imports import forget_user_modules
from tests.agent_core._user_projects import write_project

AGENT_FILE = """
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker


def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b


def multiply(a: int, b: int) -> int:
    \"\"\"Multiply two integers.\"\"\"
    return a * b


def send_mail(to: str) -> str:
    \"\"\"Send an e-mail.\"\"\"
    return f"sent to {to}"


TOOLS = [
    FunctionTool.from_defaults(add),
    FunctionTool.from_defaults(multiply),
    FunctionTool.from_defaults(send_mail, side_effects=True),
]


def build_agent(llm):
    return ReActAgentWorker(TOOLS, llm, tool_approval=APPROVAL, instructions=INSTRUCTIONS)


APPROVAL = False
INSTRUCTIONS = ""
"""


def write_agent(folder: Path, *, approval: bool = False, instructions: str = "") -> str:
    """Write the project's `agent.py`; give back its target (`file.py:build_agent`)."""
    text = AGENT_FILE.replace("APPROVAL = False", f"APPROVAL = {approval}").replace(
        'INSTRUCTIONS = ""', f"INSTRUCTIONS = {instructions!r}"
    )
    write_project(folder, {"agent.py": text})
    return f"{folder / 'agent.py'}:build_agent"


def change_agent(folder: Path, old: str, new: str) -> None:
    """Edit the project's `agent.py` as a user fixing (or breaking) their code would."""
    path = folder / "agent.py"
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in agent.py"
    path.write_text(text.replace(old, new), encoding="utf-8")
    forget_user_modules()  # What a reload does: the next build imports the new code.
