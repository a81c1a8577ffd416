"""Create a task: its input, the agent (worker, model, tools), or a demo scenario in one click."""

from __future__ import annotations

import streamlit as st

from agent_core.demos import SCENARIOS
from agent_core.spec import AgentSpec
from components import runtime, state
from components.actions import attempt

__all__ = ["model_label", "render_create_form"]

WORKERS = {"react": "ReAct", "function_calling": "Function calling", "planner": "Planner"}
PROVIDERS = {
    "demo": "Demo model (scripted replies)",
    "human": "You are the model",
    "openai": "OpenAI / compatible",
    "anthropic": "Anthropic",
}
TOOLS = ("arithmetic", "calculator", "files", "python", "image")


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
    st.subheader("Demo scenarios")
    st.caption("One click creates the task on the scripted demo model; the tools run for real.")
    columns = st.columns(len(SCENARIOS))
    for column, scenario in zip(columns, SCENARIOS.values(), strict=True):
        with column:
            st.markdown(f"**{scenario.title}**")
            st.caption(scenario.description)
            if st.button("Start", key=f"scenario-{scenario.name}"):
                attempt(lambda s=scenario: _create(s.spec, s.task))
                st.rerun()


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
    tools = st.multiselect("Tools", TOOLS, default=list(default.tools), key="form-tools")
    approval = st.checkbox("Ask me before each tool call", value=default.tool_approval)
    return default.model_copy(
        update={
            "worker": worker,
            "provider": provider,
            "tools": tuple(tools),
            "tool_approval": approval,
        }
    )


def render_create_form() -> None:
    """The form that starts a task."""
    st.header("New task")
    _render_scenarios()
    st.divider()
    spec = _pick_agent(state.agent_spec())
    st.caption(f"Model: {model_label(spec)}")
    text = st.text_area("Task", placeholder="What should the agent do?", key="form-task")
    if st.button("Create task", type="primary", disabled=not text.strip()):
        state.set_agent_spec(spec)
        attempt(lambda: _create(spec, text))
        st.rerun()
