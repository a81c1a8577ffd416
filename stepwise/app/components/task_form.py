"""Create a task: its input, the agent (worker, model, tools), or a demo scenario in one click.

The agent can be a built-in worker or one of the user's own (`stepwise ui --agent`,
`[tool.stepwise]`), and the tools can include the user's tools modules and MCP servers
(`--mcp`): an MCP server is picked by its name and brings all its tools, as a tools module does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st
from pydantic import ValidationError

from agent_core.demos import SCENARIOS
from agent_core.errors import AgentCoreError, UserCodeError, UserError
from agent_core.llms.catalog import PROVIDERS as CATALOG
from agent_core.llms.content import ImagePart
from agent_core.spec import AgentSpec
from agent_core.user_code.registry import (
    AgentEntry,
    EntryKind,
    UserCodeRegistry,
    default_registry,
)
from stepwise.app.components import runtime, state
from stepwise.app.components.actions import attempt, show_message, show_notice
from stepwise.app.components.intro import render_intro
from stepwise.app.components.model_choice import (
    PROVIDER_LABELS,
    check_base_url,
    max_tokens_input,
    model_label,
)
from stepwise.app.components.task_images import pick_images
from stepwise.app.components.user_code_view import render_code_error, render_user_code

__all__ = [
    "PROVIDERS",
    "SUB_AGENTS",
    "TOOLS",
    "USER_AGENT_PREFIX",
    "WORKERS",
    "agent_label",
    "model_label",
    "render_create_form",
]

WORKERS = {
    "react": "ReAct",
    "multimodal_react": "ReAct with images",
    "function_calling": "Function calling",
    "planner": "Planner",
}
USER_AGENT_PREFIX = "agent:"
"""Worker choices that are the user's own agents: `agent:NAME`."""
PROVIDERS = PROVIDER_LABELS
"""The model providers as the form names them (`agent_core.llms.catalog` has them all)."""
TOOLS = ("arithmetic", "calculator", "files", "python", "image")
_FORM, _SCENARIOS = "create-form", "scenarios"
"""Where a failed Create task (or demo Start) says why: under the button that was clicked."""


def agent_label(spec: AgentSpec) -> str:
    """How the agent is named on screen: the user's own by name and target, else the worker."""
    if spec.agent is not None:
        return f"your agent {spec.agent}, from {spec.agent_target}"
    return WORKERS[spec.worker]


def _server_address_problem(spec: AgentSpec) -> str | None:
    """Why the typed server address cannot be used (a password in it would be saved), if so."""
    if not spec.base_url or spec.base_url in CATALOG[spec.provider].presets:
        return None
    try:
        check_base_url(spec.base_url)
    except UserError as exc:
        return str(exc)  # Our own sentence: it never repeats what was typed.
    return None


def _planner_problem(spec: AgentSpec) -> str | None:
    if spec.agent is None and spec.worker == "planner" and not spec.sub_agents:
        return "Pick at least one sub-agent: the planner hands each plan item to one."
    return None


def _create(spec: AgentSpec, text: str, images: Sequence[ImagePart] = ()) -> None:
    runner = runtime.runner_for(spec)
    task = runner.create_task(text, images=list(images)) if images else runner.create_task(text)
    state.set_current_task_id(task.task_id)


def _render_scenarios() -> None:
    st.subheader("Demo scenarios", anchor=False)
    st.caption("One click creates the task on the scripted demo model; the tools run for real.")
    columns = st.columns(len(SCENARIOS))
    for column, scenario in zip(columns, SCENARIOS.values(), strict=True):
        with column:
            st.markdown(f"**{scenario.title}**")
            st.caption(scenario.description)
            if st.button("Start", key=f"scenario-{scenario.name}"):
                attempt(lambda s=scenario: _create(s.spec, s.task), where=_SCENARIOS)
                st.rerun()
    show_notice(where=_SCENARIOS)


def _pick_model(default: AgentSpec, provider: str) -> tuple[str, str | None]:
    """The model name and server address for a real provider ("" and None: the defaults)."""
    entry = CATALOG[provider]
    if not entry.takes_model:
        return "", None
    model_col, url_col = st.columns(2)
    keep = default.provider == provider
    model = model_col.text_input(
        "Model",
        default.model if keep else "",
        key=f"form-model-{provider}",
        placeholder=entry.model_label,
    )
    base_url = url_col.text_input(
        "Server address (optional)",
        (default.base_url or "") if keep else "",
        key=f"form-base-url-{provider}",
        placeholder=f"e.g. {', '.join(list(entry.presets)[:2])}"
        if entry.presets
        else "the provider's API",
        help=f"For a server that speaks {entry.label}'s API: a URL"
        + (f" or a preset ({', '.join(entry.presets)})." if entry.presets else "."),
    )
    return model.strip(), base_url.strip() or None


def _worker_label(choice: str) -> str:
    if choice.startswith(USER_AGENT_PREFIX):
        return f"Your agent: {choice.removeprefix(USER_AGENT_PREFIX)}"
    return WORKERS[choice]


def _pick_worker(default: AgentSpec, registry: UserCodeRegistry, column: Any) -> str:
    """A built-in worker kind, or `agent:NAME` for one of the user's agents (not imported)."""
    agents = [name for name in registry.names("agent") if registry.agent_target(name)]
    choices = [*WORKERS, *(USER_AGENT_PREFIX + name for name in agents)]
    current = USER_AGENT_PREFIX + default.agent if default.agent else default.worker
    return column.selectbox(
        "Worker",
        choices,
        format_func=_worker_label,
        key="form-worker",
        index=choices.index(current) if current in choices else choices.index(default.worker),
    )


def _tool_labels(registry: UserCodeRegistry) -> dict[str, str]:
    """Each tool choice that can be picked now, and how the picker names it.

    By name only: a tools module is imported, and an MCP server started, once picked.
    """
    labels = {name: name for name in TOOLS}
    for name in registry.names("tools"):
        if registry.tools_module(name):
            labels[name] = f"{name} (your tools)"
    for name in registry.names("mcp"):
        if registry.mcp_server(name):
            labels[name] = f"{name} (MCP server)"
    return labels


def _pick_tools(default: AgentSpec, registry: UserCodeRegistry) -> list[str]:
    labels = _tool_labels(registry)
    chosen = [name for name in default.tools if name in labels]

    def label(name: str) -> str:
        return labels.get(name, name)

    return st.multiselect(
        "Tools",
        list(labels),
        default=chosen,
        format_func=label,
        key="form-tools",
        help="Your tools modules and MCP servers follow the built-in tools; an MCP server "
        "brings all its tools (once picked, their schemas are under Your agents, tools and "
        "MCP servers).",
    )


SUB_AGENTS = {
    "code": "Code (writes and runs Python)",
    "file": "Files (reads and writes the task's files)",
    "image": "Images (draws pictures)",
}
"""The planner's sub-agents, as the form names them."""
_APPROVAL_HELP = {
    False: "Each tool call the agent proposes waits for you to approve, edit or reject it.",
    True: "Each tool call a sub-agent proposes (run_python, write_file, make_image...) waits "
    "for you to approve, edit or reject it.",
}


def _pick_sub_agents(default: AgentSpec) -> list[str]:
    return st.multiselect(
        "Sub-agents",
        list(SUB_AGENTS),
        default=[name for name in default.sub_agents if name in SUB_AGENTS],
        format_func=SUB_AGENTS.__getitem__,
        key="form-sub-agents",
        help="The agents the planner can hand plan items to; each brings its own tools.",
    )


_USER_AGENT_APPROVAL_HELP = (
    "For a pydantic-ai, OpenAI Agents SDK or LangGraph agent: every tool call waits for you "
    "to approve, edit or reject it, besides the calls its framework already asks about. A "
    "worker of your own decides this itself."
)


def _framework_of(registry: UserCodeRegistry, agent: str) -> str | None:
    """The framework of the user's agent `agent` ("pydantic-ai"...), if the target names one.

    Imports that agent (it is picked), and only it.
    """
    if agent not in registry.names("agent"):
        return None
    entry = registry.entry("agent", agent)
    return entry.framework if isinstance(entry, AgentEntry) and entry.ok else None


def _load_picked(registry: UserCodeRegistry, spec: AgentSpec) -> None:
    """Import the agent and tools modules the form picked, and start its MCP servers.

    Only those: the list of the user's code, drawn after, then shows how they loaded.
    """
    if spec.agent is not None:
        _framework_of(registry, spec.agent)
    tools: list[tuple[EntryKind, str]] = [("tools", name) for name in spec.tool_modules]
    servers: list[tuple[EntryKind, str]] = [("mcp", name) for name in spec.mcp_servers]
    for kind, name in (*tools, *servers):
        if name in registry.names(kind):
            registry.entry(kind, name)


def _pick_agent(default: AgentSpec, registry: UserCodeRegistry) -> AgentSpec:
    worker_col, provider_col = st.columns(2)
    worker = _pick_worker(default, registry, worker_col)
    provider = provider_col.selectbox(
        "Model provider",
        list(PROVIDERS),
        format_func=PROVIDERS.__getitem__,
        key="form-provider",
        index=list(PROVIDERS).index(default.provider),
    )
    agent = worker.removeprefix(USER_AGENT_PREFIX) if worker.startswith(USER_AGENT_PREFIX) else None
    if (
        CATALOG[provider].needs_person
        and agent is None
        and worker not in ("react", "multimodal_react")
    ):
        # Typed replies are text: only ReAct reads its tool calls from text.
        st.caption(
            "You are the model: the agent is a ReAct agent, which reads tool calls from text."
        )
        worker = "react"
    model, base_url = _pick_model(default, provider)
    max_tokens = max_tokens_input(
        "Max tokens per reply (this task)", default.max_tokens, key="form-max-tokens"
    )
    update: dict[str, Any] = {
        "provider": provider,
        "model": model,
        "base_url": base_url,
        "max_tokens": max_tokens,
        "agent": agent,
        "agent_target": None,  # Filled in from the registry: the target as registered now.
        "tool_modules": {},
        "mcp_servers": {},
    }
    if agent is None:
        update["worker"] = worker
        # Each worker shows only what it uses: the planner's sub-agents bring their own tools.
        if worker == "planner":
            update["sub_agents"] = tuple(_pick_sub_agents(default))
        else:
            update["tools"] = tuple(_pick_tools(default, registry))
        update["tool_approval"] = st.checkbox(
            "Ask me before each tool call",
            value=default.tool_approval,
            key="form-approval",
            help=_APPROVAL_HELP[worker == "planner"],
        )
    else:
        framework = _framework_of(registry, agent)
        if framework is None:
            st.caption("Your agent gets the model chosen here and brings its own tools.")
        else:
            st.caption(
                f"Your {framework} agent runs on its own model and tools: the model chosen "
                "here is not used."
            )
        update["tool_approval"] = st.checkbox(
            "Ask me before each tool call",
            value=default.tool_approval,
            key="form-approval",
            help=_USER_AGENT_APPROVAL_HELP,
        )
        update["tools"] = ()
    try:
        return AgentSpec.from_registry(registry, **{**default.model_dump(), **update})
    except ValidationError as exc:  # The registry changed under us (a reload elsewhere).
        reason = "; ".join(error["msg"] for error in exc.errors(include_url=False))
        show_message("warning", reason, headline="That agent is not available any more:")
        return AgentSpec()


def _create_checked(spec: AgentSpec, text: str, images: Sequence[ImagePart] = ()) -> bool:
    """Create the task; False, with the user's traceback shown, if their code fails to build."""
    try:
        runtime.runner_for(spec)
    except UserCodeError as exc:
        render_code_error(exc, headline="Your agent could not be built:")
        return False
    except AgentCoreError:
        pass  # No key, say: `attempt` reports it after the rerun, as for any action.
    attempt(lambda: _create(spec, text, images), where=_FORM)
    return True


def render_create_form() -> None:
    """The form that starts a task."""
    st.header("New task", anchor=False)
    render_intro()  # A first visit lands here: say what Stepwise is.
    _render_scenarios()
    st.divider()
    registry = default_registry()
    your_code = st.container()  # Drawn once the picks below have loaded what they name.
    spec = _pick_agent(state.form_spec(), registry)
    _load_picked(registry, spec)
    with your_code:
        render_user_code(registry)
    framework = _framework_of(registry, spec.agent) if spec.agent is not None else None
    model = f"the {framework} agent's own" if framework else model_label(spec)
    st.text(f"Model: {model}")  # a typed model name is not markdown
    if spec.agent is not None:
        st.text(f"Agent: {agent_label(spec)}")  # the user's names and paths are not markdown
    text = st.text_area("Task", placeholder="What should the agent do?", key="form-task")
    takes_images = spec.agent is None and spec.worker == "multimodal_react"
    images = pick_images(key="form-images") if takes_images else []
    # Never disabled: a browser sends the text area's value with the click, but a button
    # disabled until the text is committed would swallow that first click.
    if st.button("Create task", type="primary", key="form-create"):
        if not text.strip():
            st.warning("Type the task first: what should the agent do?")
            return
        if problem := _server_address_problem(spec) or _planner_problem(spec):
            st.error(problem)
            return
        if images is None:
            return  # The uploader says which image was refused, and why.
        # The choices are this task's (its spec keeps them): the next form in this session
        # starts from them, but only Settings saves the defaults. The reply cap is this
        # task's own: Settings keeps deciding the cap new tasks start from.
        state.set_form_spec(spec.model_copy(update={"max_tokens": state.agent_spec().max_tokens}))
        if _create_checked(spec, text, images):
            st.rerun()
    show_notice(where=_FORM)  # What the last Create task said, under the button.
