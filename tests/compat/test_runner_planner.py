"""Structured planner agent test.

Ported from LlamaIndex (llama-index-core 0.12, `tests/agent/runner/test_planner.py`) by
changing imports and the least spelling possible; every change is marked `# stepwise:`.
Typing aliases (`List[...]`, `Optional[...]`) are spelt as builtins, as the linter asks.
"""

# stepwise: imports from agent_core
from agent_core import StructuredPlannerAgent
from agent_core.compat.llamaindex.structured_planner import Plan, SubTask
from agent_core.llms import ChatMessage, FunctionLLM, ToolSpec
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker


# stepwise: LlamaIndex's MockLLM (a CustomLLM answering `complete(prompt)`) is a FunctionLLM
# answering the chat's messages
def complete(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
    prompt = "\n".join(m.content for m in messages)  # stepwise: the prompt is the messages
    if "CREATE A PLAN" in prompt:
        text = Plan(
            sub_tasks=[
                SubTask(name="one", input="one", expected_output="one", dependencies=[]),
                SubTask(name="two", input="two", expected_output="two", dependencies=[]),
                SubTask(
                    name="three",
                    input="three",
                    expected_output="three",
                    dependencies=["one", "two"],
                ),
            ]
        ).model_dump_json()
        return text

    # dummy response for react
    return "Final Answer: All done"


def MockLLM() -> FunctionLLM:
    return FunctionLLM(complete)


def dummy_function(a: int, b: int) -> int:
    """A dummy function that adds two numbers together."""
    return a + b


def test_planner_agent() -> None:
    dummy_tool = FunctionTool.from_defaults(fn=dummy_function)
    dummy_llm = MockLLM()

    worker = ReActAgentWorker.from_tools([dummy_tool], llm=dummy_llm)
    agent = StructuredPlannerAgent(worker, tools=[dummy_tool], llm=dummy_llm)

    # create a plan
    plan_id = agent.create_plan("CREATE A PLAN")
    plan = agent.state.plan_dict[plan_id]
    assert plan is not None
    assert len(plan.sub_tasks) == 3
    assert len(agent.state.get_completed_sub_tasks(plan_id)) == 0
    assert len(agent.state.get_remaining_subtasks(plan_id)) == 3
    assert len(agent.state.get_next_sub_tasks(plan_id)) == 2

    next_tasks = agent.state.get_next_sub_tasks(plan_id)

    for task in next_tasks:
        _response = agent.run_task(task.name)
        agent.state.add_completed_sub_task(plan_id, task)

    assert len(agent.state.get_completed_sub_tasks(plan_id)) == 2

    next_tasks = agent.state.get_next_sub_tasks(plan_id)
    assert len(next_tasks) == 1

    # will insert the original dummy plan again
    agent.refine_plan("CREATE A PLAN", plan_id)

    assert len(plan.sub_tasks) == 3
    assert len(agent.state.get_completed_sub_tasks(plan_id)) == 2
    assert len(agent.state.get_remaining_subtasks(plan_id)) == 1
    assert len(agent.state.get_next_sub_tasks(plan_id)) == 1
