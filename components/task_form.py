"""Create a task: its input, the agent (worker, model, tools), or a demo scenario in one click."""

from __future__ import annotations

import streamlit as st

from agent_core.demos import SCENARIOS
from agent_core.spec import DEFAULT_MODELS, AgentSpec
from components import runtime, state
from components.actions import attempt

__all__ = ["PROVIDERS", "TOOLS", "WORKERS", "model_label", "render_create_form"]

WORKERS = {"react": "ReAct", "function_calling": "Function calling", "planner": "Planner"}
PROVIDERS = {
    "demo": "Demo model (scripted replies)",
    "human": "You are the model",
    "openai": "OpenAI / compatible",
    "anthropic": "Anthropic",
}
TOOLS = ("arithmetic", "calculator", "files", "python", "image")
_REAL_PROVIDERS = ("openai", "anthropic")


def model_label(spec: AgentSpec) -> str:
    """How the model is named on screen; the scripted demo always says so."""
    if spec.provider == "demo":
        return "Demo model — scripted replies, not a real LLM"
    if spec.provider == "human":
        return "You are the model — you type each reply"
    where = f" at {spec.base_url}" if spec.base_url else ""
    return f"{PROVIDERS[spec.provider]} · {spec.model_name}{where}"


def _create(spec: AgentSpec, text: str) -> None:
    task = runtime.runner_for(spec).create_task(text)
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
                attempt(lambda s=scenario: _create(s.spec, s.task))
                st.rerun()


def _pick_model(default: AgentSpec, provider: str) -> tuple[str, str | None]:
    """The model name and server address for a real provider ("" and None: the defaults)."""
    if provider not in _REAL_PROVIDERS:
        return "", None
    model_col, url_col = st.columns(2)
    keep = default.provider == provider
    model = model_col.text_input(
        "Model",
        default.model if keep else "",
        key=f"form-model-{provider}",
        placeholder=DEFAULT_MODELS[provider],
    )
    base_url = url_col.text_input(
        "Server address (optional)",
        (default.base_url or "") if keep else "",
        key=f"form-base-url-{provider}",
        placeholder="the provider's API" if provider == "anthropic" else "e.g. ollama, vllm",
        help="For an OpenAI-compatible server: a URL or a preset (ollama, vllm, llama.cpp, "
        "lm-studio).",
    )
    return model.strip(), base_url.strip() or None


def _pick_agent(default: AgentSpec) -> AgentSpec:
    worker_col, provider_col = st.columns(2)
    worker = worker_col.selectbox(
        "Worker",
        list(WORKERS),
        format_func=WORKERS.__getitem__,
        key="form-worker",
        index=list(WORKERS).index(default.worker),
    )
    provider = provider_col.selectbox(
        "Model provider",
        list(PROVIDERS),
        format_func=PROVIDERS.__getitem__,
        key="form-provider",
        index=list(PROVIDERS).index(default.provider),
    )
    if provider == "human" and worker != "react":
        # Typed replies are text: only ReAct reads its tool calls from text.
        st.caption(
            "You are the model: the agent is a ReAct agent, which reads tool calls from text."
        )
        worker = "react"
    model, base_url = _pick_model(default, provider)
    tools = st.multiselect("Tools", TOOLS, default=list(default.tools), key="form-tools")
    approval = st.checkbox(
        "Ask me before each tool call", value=default.tool_approval, key="form-approval"
    )
    return default.model_copy(
        update={
            "worker": worker,
            "provider": provider,
            "model": model,
            "base_url": base_url,
            "tools": tuple(tools),
            "tool_approval": approval,
        }
    )


def render_create_form() -> None:
    """The form that starts a task."""
    st.header("New task", anchor=False)
    _render_scenarios()
    st.divider()
    spec = _pick_agent(state.agent_spec())
    st.text(f"Model: {model_label(spec)}")  # a typed model name is not markdown
    text = st.text_area("Task", placeholder="What should the agent do?", key="form-task")
    # Never disabled: a browser sends the text area's value with the click, but a button
    # disabled until the text is committed would swallow that first click.
    if st.button("Create task", type="primary", key="form-create"):
        if not text.strip():
            st.warning("Type the task first: what should the agent do?")
            return
        state.set_agent_spec(spec)
        attempt(lambda: _create(spec, text))
        st.rerun()
