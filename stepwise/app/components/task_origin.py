"""Where a task's model replies came from, as the app names them on the Tasks page and Stepper.

A task's spec names the model the built-in workers run on, but two kinds of task never ran on
it: a framework agent's task (pydantic-ai, Agents SDK, LangGraph) runs on the agent's own
model, and an imported task was recorded elsewhere. Both keep the default demo spec, so
naming their model from the spec would call them "scripted replies".
"""

from __future__ import annotations

from agent_core.spec import AgentSpec
from agent_core.types import ImportSource, Task
from stepwise.app.components.model_choice import model_label

__all__ = ["framework_of_task", "import_text", "model_text", "replay_text"]

_FRAMEWORK_STATE = {
    # The `extra_state` key each adapter keeps its run under (its `STATE_KEY`), named as its
    # users know it; read without importing the adapter, which imports its SDK.
    "pydantic_ai": "pydantic-ai",
    "openai_agents": "OpenAI Agents SDK",
    "langgraph": "LangGraph",
    "llama_index": "LlamaIndex",
}

_FORMATS = {
    "stepwise": "Stepwise",
    "otlp": "OpenTelemetry",
    "openinference": "OpenInference",
    "langfuse": "Langfuse",
    "langsmith": "LangSmith",
}


def framework_of_task(task: Task) -> str | None:
    """The framework whose agent ran the task ("pydantic-ai"...), or None for a built-in one."""
    return next((name for key, name in _FRAMEWORK_STATE.items() if key in task.extra_state), None)


def import_text(source: ImportSource) -> str:
    """Where an imported task came from: "recorded in run.json (a Langfuse trace, pydantic-ai)"."""
    kind = f"a {_FORMATS.get(source.format, source.format)} trace"
    if source.framework:
        kind += f", {source.framework}"
    return f"recorded in {source.file} ({kind})" if source.file else f"recorded in {kind}"


def replay_text(replay_of: str | None) -> str:
    """The label of a task a replay made (`Task.replay_of`): "Replay of case NAME"; else ""."""
    return f"Replay of case {replay_of}" if replay_of else ""


def model_text(task: Task, spec: AgentSpec, *, own_model: str | None = None) -> str:
    """The task's model in words: the recording's, the framework agent's own, else the spec's.

    `own_model` is the model a live framework worker names (`BaseAgentWorker.own_model`).
    """
    if task.imported_from is not None:
        return import_text(task.imported_from)
    if own_model:
        return f"{own_model} (the agent's own)"
    framework = framework_of_task(task)
    if framework is not None:
        return f"the {framework} agent's own"
    return model_label(spec)
