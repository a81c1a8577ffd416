"""The agents a fork can go on with: the user's own (`--agent`) and the one Settings describes.

"Fork from here" on a card keeps the task's own agent. An imported task has none that can
run here, and any task may be tried with another agent from one of its steps, so the card
also offers a picker of these: each user agent on the model saved in Settings (as the New
task form puts it on the model chosen there), and the Settings agent itself (its worker,
model and tools). Listing them imports no user code; the chosen one is built when forking.
"""

from __future__ import annotations

from pydantic import ValidationError

from agent_core.spec import AgentSpec
from agent_core.user_code.registry import UserCodeRegistry
from stepwise.app.components.model_choice import model_label
from stepwise.app.components.task_form import WORKERS

__all__ = ["fork_agents"]


def fork_agents(settings: AgentSpec, registry: UserCodeRegistry) -> dict[str, AgentSpec]:
    """Each agent a fork may go on with, by the label the picker shows, the user's first.

    Args:
        settings: The spec saved in Settings: its model carries the user's agents, and it
            is offered itself.
        registry: Where the user's agents are registered (`stepwise ui --agent`).
    """
    choices: dict[str, AgentSpec] = {}
    for name in registry.names("agent"):
        spec = _user_agent(settings, registry, name)
        if spec is not None:
            choices[f"Your agent {name}, on {model_label(settings)}"] = spec
    choices[f"Settings: {_settings_label(settings)}"] = settings
    return choices


def _user_agent(settings: AgentSpec, registry: UserCodeRegistry, name: str) -> AgentSpec | None:
    """User agent `name` on the Settings model; None when it is not registered any more."""
    if not registry.agent_target(name):
        return None
    fields = {
        **settings.model_dump(),
        "agent": name,
        "agent_target": None,  # Filled in from the registry: the target as registered now.
        "tools": (),  # The user's agent brings its own tools.
        "tool_modules": {},
        "mcp_servers": {},
    }
    try:
        return AgentSpec.from_registry(registry, **fields)
    except (ValidationError, ValueError):  # Removed by a reload in another session.
        return None


def _settings_label(spec: AgentSpec) -> str:
    if spec.agent is not None:
        return f"your agent {spec.agent}, on {model_label(spec)}"
    tools = ", ".join(spec.tools) or "no tools"
    return f"{WORKERS.get(spec.worker, spec.worker)} with {tools}, on {model_label(spec)}"
