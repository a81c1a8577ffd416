"""Stepwise's tests of `PromptTemplate` with its agents, beside LlamaIndex's own (not ported).

What a LlamaIndex user notices: the prompt given to `update_prompts` is what the model is sent
from the next step on, with the tools filled in, and nothing else about the agent changes.
"""

from __future__ import annotations

import pytest

from agent_core import ReActAgent
from agent_core.compat.llamaindex import PromptTemplate
from agent_core.errors import UserError
from agent_core.llms import ScriptedLLM
from agent_core.tools import FunctionTool
from agent_core.workers import ReActChatFormatter

HEADER = "You are {persona}. Tools: {tool_names}\n{tool_desc}\nReply as Thought/Action/Answer."


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_the_model_is_sent_the_updated_prompt_from_the_next_step_on() -> None:
    llm = ScriptedLLM(
        [
            'Thought: add\nAction: add\nAction Input: {"a": 2, "b": 3}',
            "Thought: done\nAnswer: 5",
        ]
    )
    agent = ReActAgent.from_tools([FunctionTool.from_defaults(add)], llm=llm, max_iterations=4)
    task = agent.create_task("2 + 3?")
    agent.run_step(task.task_id)  # Stepwise's own prompt; the tool runs in this step

    template = PromptTemplate(HEADER).partial_format(persona="a careful accountant")
    agent.update_prompts({"agent_worker:system_prompt": template})
    output = agent.run_step(task.task_id)

    assert output.is_last and str(output) == "5"
    before, after = llm.requests[0][0].content, llm.requests[1][0].content
    assert "careful accountant" not in before
    assert after.startswith("You are a careful accountant. Tools: add\n")
    assert "Add two numbers." in after and "{tool_desc}" not in after
    # The rest of the agent is the same: its settings, and the task's conversation so far.
    assert agent.agent_worker.max_iterations == 4
    assert "Observation: 5" in llm.requests[1][-1].content


def test_a_str_prompt_and_get_prompts_round_trip() -> None:
    agent = ReActAgent.from_tools([FunctionTool.from_defaults(add)], llm=ScriptedLLM([]))
    default = agent.get_prompts()["agent_worker:system_prompt"]
    assert "add" in default.get_template()  # Stepwise's prompt, as the model receives it

    agent.update_prompts({"agent_worker:system_prompt": "Be brief. {tool_names}"})
    prompt = agent.get_prompts()["agent_worker:system_prompt"]
    assert prompt.get_template() == "Be brief. {tool_names}"
    assert prompt.template_vars == ["tool_names"]
    task = agent.create_task("hi")
    assert agent.preview_messages(task.task_id)[0].content == "Be brief. add"


def test_a_custom_formatter_keeps_its_class_and_context() -> None:
    class QuietFormatter(ReActChatFormatter):
        pass

    formatter = QuietFormatter.from_defaults(context="Answer in French.")
    agent = ReActAgent.from_tools([], llm=ScriptedLLM([]), react_chat_formatter=formatter)
    agent.update_prompts({"agent_worker:system_prompt": PromptTemplate("Short answers.")})

    assert type(agent.agent_worker.formatter) is QuietFormatter
    task = agent.create_task("hi")
    system = agent.preview_messages(task.task_id)[0].content
    assert system.startswith("Short answers.") and "Answer in French." in system
    assert formatter.system_header is None  # the agent's copy changed, not the caller's


def test_an_unknown_prompt_name_is_refused_and_changes_nothing() -> None:
    agent = ReActAgent.from_tools([], llm=ScriptedLLM([]))
    worker = agent.agent_worker
    with pytest.raises(UserError, match="agent_worker:system_prompt"):
        agent.update_prompts({"agent_worker:sytem_prompt": PromptTemplate("typo")})
    assert agent.agent_worker is worker


def test_partial_format_leaves_the_template_it_came_from_alone() -> None:
    prompt = PromptTemplate("{a} and {b}")
    partial = prompt.partial_format(a="x")
    assert partial.format(b="y") == "x and y"
    assert prompt.format(b="y") == "{a} and y"
    assert prompt.kwargs == {} and partial.kwargs == {"a": "x"}
