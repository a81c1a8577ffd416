"""A framework's agent is recognised by its type, and a target that cannot run says why."""

from __future__ import annotations

import pytest

from agent_core.adapters import FRAMEWORKS, framework_of
from agent_core.errors import UserError
from agent_core.llms import ScriptedLLM
from agent_core.user_code import UserCodeRegistry
from tests.agent_core._user_projects import isolated_imports, write_project  # noqa: F401


def _pydantic_ai_agent():
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    return Agent(TestModel())


def _openai_agents_agent():
    from agents import Agent

    return Agent(name="helper", instructions="Help.")


def _langgraph_graph():
    from langgraph.graph import END, START, MessagesState, StateGraph

    builder = StateGraph(MessagesState)
    builder.add_node("echo", lambda state: {"messages": []})
    builder.add_edge(START, "echo")
    builder.add_edge("echo", END)
    return builder


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (_pydantic_ai_agent, "pydantic-ai"),
        (_openai_agents_agent, "openai-agents"),
        (lambda: _langgraph_graph().compile(), "langgraph"),
    ],
)
def test_each_frameworks_agent_is_recognised(make, name):
    found = framework_of(make())
    assert found is not None and found.name == name
    assert found.extra in {f.extra for f in FRAMEWORKS}


def test_a_langgraph_builder_is_refused_with_what_to_point_at():
    with pytest.raises(UserError, match=r"compile\(\)"):
        framework_of(_langgraph_graph())


@pytest.mark.parametrize("obj", [object(), "agent", ScriptedLLM(["x"]), lambda llm: None])
def test_other_objects_are_no_frameworks(obj):
    assert framework_of(obj) is None


@pytest.mark.usefixtures("isolated_imports")
def test_an_uncompiled_graph_target_is_an_entry_error_that_says_to_compile(tmp_path):
    write_project(
        tmp_path,
        {
            "graph.py": """
            from langgraph.graph import START, END, MessagesState, StateGraph

            builder = StateGraph(MessagesState)
            builder.add_node("echo", lambda state: {"messages": []})
            builder.add_edge(START, "echo")
            builder.add_edge("echo", END)
            """
        },
    )
    registry = UserCodeRegistry(project=tmp_path, agents={"lg": "graph.py:builder"})
    (entry,) = registry.agents()
    assert entry.error is not None and "builder.compile()" in str(entry.error)


@pytest.mark.usefixtures("isolated_imports")
def test_a_target_whose_framework_is_missing_names_the_extra(tmp_path):
    # The import a missing framework fails with, raised as Python raises it.
    write_project(
        tmp_path,
        {
            "agent.py": """
            raise ModuleNotFoundError("No module named 'langgraph'", name="langgraph")
            """
        },
    )
    registry = UserCodeRegistry(project=tmp_path, agents={"lg": "agent.py:graph"})
    (entry,) = registry.agents()
    assert entry.error is not None
    assert 'pip install "stepwise[langgraph]"' in str(entry.error)


@pytest.mark.usefixtures("isolated_imports")
def test_a_factory_may_return_a_frameworks_agent(tmp_path):
    write_project(
        tmp_path,
        {
            "agent.py": """
            from agents import Agent

            def build():
                return Agent(name="helper", instructions="Help.")
            """
        },
    )
    registry = UserCodeRegistry(project=tmp_path, agents={"oa": "agent.py:build"})
    (entry,) = registry.agents()
    assert entry.ok and entry.framework is None  # Known once the factory is called.
    worker = registry.build_agent("oa", llm=ScriptedLLM([]))
    assert type(worker).__module__ == "agent_core.adapters.openai_agents"
