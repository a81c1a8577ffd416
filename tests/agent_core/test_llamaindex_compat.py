"""The LlamaIndex-compatible surface beyond LlamaIndex's own tests (see tests/compat/)."""

from __future__ import annotations

import pytest

from agent_core import (
    AgentRunner,
    FunctionCallingAgent,
    ReActAgent,
    StructuredPlannerAgent,
    TaskStep,
)
from agent_core.errors import StepNotFoundError, UserError
from agent_core.llms import (
    ChatMessage,
    ChatResponse,
    FunctionLLM,
    MessageRole,
    ScriptedLLM,
    ToolCall,
)
from agent_core.tools import FunctionTool
from agent_core.types import StepKind, ToolOutput
from agent_core.workers import (
    FunctionCallingAgentWorker,
    ReActAgentWorker,
    ReActChatFormatter,
    ReActOutputParser,
)
from agent_core.workers.react_output_parser import ActionReasoningStep, ResponseReasoningStep

ACTION = 'Thought: add\nAction: add (add two numbers)\nAction Input: {"a": 1, /* one */ "b": 2}'
ANSWER = "Thought: done\nAnswer: 3"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture()
def add_tool() -> FunctionTool:
    return FunctionTool.from_defaults(fn=add)


def test_a_trailing_note_and_a_comment_still_call_the_tool(add_tool):
    llm = ScriptedLLM([ACTION, ANSWER])
    agent = ReActAgent.from_tools([add_tool], llm=llm)
    response = agent.chat("1 + 2?")
    assert str(response) == "3"
    assert [(s.tool_name, s.content) for s in response.sources] == [("add", "3")]
    assert llm.exhausted


def test_run_step_takes_llamaindex_order_a_step_object_and_step_id(add_tool):
    agent = ReActAgent.from_tools([add_tool], llm=ScriptedLLM([ACTION, ANSWER]))
    task = agent.create_task("1 + 2?")
    agent.run_step(task.task_id)
    step = agent.get_upcoming_steps(task.task_id)[0].model_copy()
    step.input = "use add"  # A changed copy runs with its input, as LlamaIndex runs it.
    out = agent.run_step(task.task_id, None, step)
    assert out.task_step.step_id == step.step_id
    assert out.task_step.input == "use add" and out.task_step.edited
    assert agent.get_completed_step(task.task_id, step.step_id).is_last


def test_a_step_id_where_the_input_goes_is_refused_with_the_fix(add_tool):
    agent = ReActAgent.from_tools([add_tool], llm=ScriptedLLM([ACTION]))
    task = agent.create_task("1 + 2?")
    step_id = agent.get_upcoming_steps(task.task_id)[0].step_id
    with pytest.raises(UserError, match="LlamaIndex's order") as error:
        agent.run_step(task.task_id, step_id)
    assert "step_id=" in error.value.hint
    with pytest.raises(UserError, match="disagree"):
        agent.run_step(task.task_id, step=step_id, step_id="other")
    with pytest.raises(StepNotFoundError):
        agent.get_completed_step(task.task_id, step_id)


def test_get_next_step_and_link_step_spell_llamaindex():
    step = TaskStep(task_id="t", input="hi")
    after = step.get_next_step("next-id", "more", {"n": 1})
    assert (after.step_id, after.input, after.step_state) == ("next-id", "more", {"n": 1})
    assert after.prev_step_ids == [step.step_id]
    other = TaskStep(task_id="t")
    step.link_step(other)
    step.link_step(other)
    assert step.next_step_ids == [other.step_id] and other.prev_step_ids == [step.step_id]


def test_constructor_keywords_have_their_meaning(add_tool):
    history = [ChatMessage(role=MessageRole.USER, content="earlier")]
    worker = ReActAgentWorker.from_tools([add_tool], llm=ScriptedLLM([ANSWER]))
    agent = AgentRunner(
        worker,
        chat_history=history,
        init_task_state_kwargs={"tenant": "a"},
        verbose=True,
        callback_manager=object(),
        default_tool_choice="auto",
    )
    assert agent.chat_history == history
    assert agent.llm is worker.llm
    task = agent.create_task("q", extra_state={"mine": 1})
    assert task.extra_state == {"tenant": "a", "mine": 1}
    assert task.memory.get_all()[0].content == "earlier"


async def test_afinalize_response_and_aquery(add_tool):
    agent = ReActAgent.from_tools([add_tool], llm=ScriptedLLM([ANSWER, ANSWER]))
    task = agent.create_task("q")
    out = await agent.arun_step(task.task_id)
    response = await agent.afinalize_response(task.task_id, out)
    assert str(response) == "3"
    assert str(await agent.aquery("again")) == "3"
    assert [m.content for m in agent.chat_history] == ["q", "3", "again", "3"]


def test_chat_history_keyword_replaces_the_conversation(add_tool):
    agent = ReActAgent.from_tools([add_tool], llm=ScriptedLLM([ANSWER]))
    agent.chat("q", chat_history=[ChatMessage(role="user", content="before")])
    assert [m.content for m in agent.chat_history] == ["before", "q", "3"]


def test_from_llm_is_a_react_agent_with_the_tools(add_tool):
    agent = AgentRunner.from_llm([add_tool], llm=ScriptedLLM([]), max_iterations=2)
    assert isinstance(agent, ReActAgent)
    assert agent.agent_worker.max_iterations == 2
    assert list(agent.agent_worker.tools) == ["add"]


def test_handle_reasoning_failure_fn_answers_instead_of_failing(add_tool):
    def give_up(callback_manager, error):
        return ToolOutput(tool_name="none", content=f"gave up: {error}")

    agent = ReActAgent.from_tools(
        [add_tool],
        llm=ScriptedLLM([ACTION]),
        max_iterations=1,
        handle_reasoning_failure_fn=give_up,
    )
    response = agent.chat("1 + 2?")
    assert str(response).startswith("gave up: the agent reached max_iterations=1")
    assert agent.chat_history[-1].content == str(response)


def test_a_formatter_subclass_builds_the_request_and_a_parser_reads_the_reply(add_tool):
    class Formatter(ReActChatFormatter):
        def format(self, tools, chat_history, current_reasoning=None):
            return [ChatMessage(role="system", content="custom"), *chat_history]

    class Parser(ReActOutputParser):
        def parse(self, output, is_streaming=False):
            if output == "go":
                return ActionReasoningStep(thought="", action="add", action_input={"a": 2, "b": 2})
            return ResponseReasoningStep(thought="", response=output.upper())

    llm = ScriptedLLM(["go", "four"])
    agent = ReActAgent.from_tools(
        [add_tool], llm=llm, react_chat_formatter=Formatter(), output_parser=Parser()
    )
    assert str(agent.chat("2 + 2?")) == "FOUR"
    assert all(request[0].content == "custom" for request in llm.requests)
    assert llm.requests[1][-1].content == "Observation: 4"


def _two_calls(messages, tools):
    calls = (ToolCall(id="1", name="add", args={"a": 1, "b": 1}), ToolCall(id="2", name="add"))
    if any(m.role == "tool" for m in messages):
        return "done"
    return ChatResponse(message=ChatMessage(role="assistant", tool_calls=calls))


def test_function_calling_keywords(add_tool):
    prefix = [ChatMessage(role="system", content="be brief")]
    worker = FunctionCallingAgentWorker(
        [add_tool], FunctionLLM(_two_calls), prefix, allow_parallel_tool_calls=False
    )
    agent = FunctionCallingAgent(worker)
    task = agent.create_task("1 + 1?")
    out = agent.run_step(task.task_id)
    assert [s.kind for s in out.next_steps] == [StepKind.TOOL, StepKind.LLM]
    refused = agent.get_task(task.task_id).memory.get_all()[-1]
    assert refused.tool_call_id == "2" and "at most 1 tool call." in refused.content
    assert agent.get_messages_sent(task.task_id, out.task_step.step_id)[0].content == "be brief"
    built = FunctionCallingAgent.from_tools([add_tool], llm=FunctionLLM(_two_calls))
    assert isinstance(built.agent_worker, FunctionCallingAgentWorker)
    assert (
        FunctionCallingAgentWorker([add_tool], ScriptedLLM([]), max_function_calls=3).max_iterations
        == 3
    )


def test_streaming_response_reads_again_once_done(add_tool):
    agent = ReActAgent.from_tools([add_tool], llm=ScriptedLLM([ACTION, ANSWER]))
    response = agent.stream_chat("1 + 2?")
    assert list(response.response_gen) == ["3"]
    assert list(response.response_gen) == ["3"]
    assert [s.content for s in response.sources] == ["3"]
    assert str(response.get_response()) == "3"


PLAN = (
    '{"sub_tasks": [{"name": "a", "input": "do a", "expected_output": "x", "dependencies": []},'
    ' {"name": "b", "input": "do b", "dependencies": ["a"]}]}'
)


def _planner_llm(messages, tools):
    text = messages[-1].content
    if "Overall Task" in text:
        return PLAN if "Completed Sub-Tasks" not in text else "no new plan"
    return f"Answer: {text} done"


def test_structured_planner_chat_runs_the_plan_in_dependency_order(add_tool):
    llm = FunctionLLM(_planner_llm)
    agent = StructuredPlannerAgent(ReActAgentWorker.from_tools([add_tool], llm=llm))
    assert str(agent.chat("the job")) == "do b done"
    (plan_id,) = agent.state.plan_dict
    assert [s.name for s in agent.state.get_completed_sub_tasks(plan_id)] == ["a", "b"]
    assert agent.state.plan_dict[plan_id].sub_tasks[0].expected_output == "x"


def test_structured_planner_refuses_a_cyclic_plan_and_falls_back_to_one_task(add_tool):
    cyclic = '{"sub_tasks": [{"name": "a", "input": "x", "dependencies": ["a2"]},' + (
        ' {"name": "a2", "input": "y", "dependencies": ["a"]}]}'
    )
    llm = FunctionLLM(lambda messages, tools: cyclic)
    agent = StructuredPlannerAgent(ReActAgentWorker.from_tools([add_tool], llm=llm))
    plan_id = agent.create_plan("the job")
    assert [s.input for s in agent.state.plan_dict[plan_id].sub_tasks] == ["the job"]
