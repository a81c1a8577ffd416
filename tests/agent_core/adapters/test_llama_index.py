"""LlamaIndex agent workflows stepped in Stepwise, one step per model call and per tool call.

The agents are what a LlamaIndex user writes today (`llama_index.core.agent.workflow`): the
example's `FunctionAgent` with `multiply`, `add` and a `confirm` tool that asks a person
(`InputRequiredEvent`), and an `AgentWorkflow` whose "triage" agent hands off to "math". Their
LLM is LlamaIndex's `MockFunctionCallingLLM` with a reply function that reads the tool results
it is sent. The loopback OpenAI server test is in `test_llama_index_openai.py`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.types import INTERRUPT_KEY, StepKind, StepStatus
from agent_core.user_code import UserCodeRegistry
from tests.agent_core._user_projects import isolated_imports, write_project  # noqa: F401

pytestmark = pytest.mark.usefixtures("isolated_imports")

QUESTION = "What is (121 * 3) + 42?"
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "llama_index_agent.py"

HANDOFF_FILE = '''
"""Triage hands the question to math, which multiplies and answers."""

import re

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def _call(name, call_id, **args):
    block = ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs=args)
    return ChatMessage(role="assistant", blocks=[block])


def triage_model(messages, **kwargs):
    return _call("handoff", "call_handoff", to_agent="math", reason="it is arithmetic")


def math_model(messages, **kwargs):
    question = next(m for m in messages if m.role == "user" and m.content)
    a, b = (int(n) for n in re.findall(r"\\d+", question.content)[:2])
    products = [m.content for m in messages if m.role == "tool" and m.content.isdigit()]
    if not products:
        return _call("multiply", "call_multiply", a=a, b=b)
    return ChatMessage(role="assistant", content=f"The product is {products[-1]}.")


triage = FunctionAgent(
    name="triage", description="Routes questions.", can_handoff_to=["math"],
    llm=MockFunctionCallingLLM(response_generator=triage_model),
)
math = FunctionAgent(
    name="math", description="Does arithmetic.", tools=[multiply],
    llm=MockFunctionCallingLLM(response_generator=math_model),
)
workflow = AgentWorkflow(agents=[triage, math], root_agent="triage")
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = write_project(tmp_path / "project", {"handoff.py": HANDOFF_FILE})
    shutil.copy(EXAMPLE, folder / "agent.py")
    return folder


def runner_for(project: Path, target: str = "agent.py:agent", *, db: Path | None = None):
    """A runner on the user's LlamaIndex agent, built as the app builds it (registry, spec)."""
    registry = UserCodeRegistry(project=project, agents={"li": target})
    spec = AgentSpec.from_registry(registry, agent="li")
    return spec.build_runner(store=SQLiteStore(db or project / "stepwise.db"), registry=registry)


def run_to_question(runner, task_id: str):
    return [runner.run_step(task_id) for _ in range(6)]


def test_one_step_per_model_call_and_tool_call_then_the_question_and_the_answer(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    (first,) = runner.get_upcoming_steps(task.task_id)
    assert (first.kind, first.name, first.input) == (StepKind.LLM, "model call", QUESTION)

    outputs = run_to_question(runner, task.task_id)
    assert [(o.task_step.kind, o.task_step.name) for o in outputs] == [
        (StepKind.LLM, "model call"),
        (StepKind.TOOL, "multiply"),
        (StepKind.LLM, "model call"),
        (StepKind.TOOL, "add"),
        (StepKind.LLM, "model call"),
        (StepKind.TOOL, "confirm"),
    ]
    assert outputs[0].output == 'multiply({"a": 121, "b": 3})'
    assert [(c.tool_name, c.args, c.content) for c in outputs[3].tool_calls] == [
        ("add", {"a": 363, "b": 42}, "405")
    ]
    sent = runner.get_messages_sent(task.task_id, outputs[2].task_step.step_id)
    assert [m.role for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[-1].content == "363"

    (ask,) = runner.get_upcoming_steps(task.task_id)
    assert ask.kind is StepKind.HUMAN and ask.awaits_answer
    assert ask.step_state[INTERRUPT_KEY]["prefix"] == "Send '405'?"
    answered = runner.run_step(task.task_id, input="yes, send it")
    assert not answered.is_last and answered.tool_calls[0].content == "yes, send it"
    final = runner.run_step(task.task_id)
    assert final.is_last and final.output == "The answer is 405. (yes, send it)"
    assert runner.finalize_response(task.task_id).response == final.output
    memory = runner.get_task(task.task_id).memory.get_all()
    assert memory[0].content == QUESTION and memory[-1].content == final.output


def test_undo_a_tool_step_and_run_again_gives_the_same_result_and_edits_reach_the_tool(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    for _ in range(3):
        runner.run_step(task.task_id)
    before = runner.get_task(task.task_id).extra_state
    added = runner.run_step(task.task_id)
    assert added.tool_calls[0].content == "405"

    step = runner.undo_step(task.task_id)
    assert runner.get_task(task.task_id).extra_state == before  # The Context from before it.
    assert (step.kind, step.name, step.status) == (StepKind.TOOL, "add", StepStatus.UPCOMING)
    again = runner.run_step(task.task_id)
    assert again.tool_calls[0].content == "405" and again.output == added.output

    runner.undo_step(task.task_id)
    edited = runner.run_step(task.task_id, input={"tool": "add", "args": {"a": 363, "b": 58}})
    assert edited.task_step.edited and edited.tool_calls[0].content == "421"
    assert runner.run_step(task.task_id).output == 'confirm({"answer": "421"})'


def test_a_fork_at_step_two_goes_on_from_there_and_leaves_the_original(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    outputs = run_to_question(runner, task.task_id)
    fork = runner.fork_task(task.task_id, outputs[1].task_step.step_id)
    (upcoming,) = runner.get_upcoming_steps(fork.task_id)
    assert (upcoming.kind, upcoming.name) == (StepKind.LLM, "model call")
    rest = [runner.run_step(fork.task_id) for _ in range(4)]
    assert [o.task_step.name for o in rest] == ["model call", "add", "model call", "confirm"]
    assert rest[1].tool_calls[0].content == "405"
    (ask,) = runner.get_upcoming_steps(task.task_id)  # The original still waits for its answer.
    assert ask.awaits_answer


def test_a_handoff_of_an_agent_workflow_is_a_delegate_step(project):
    runner = runner_for(project, "handoff.py:workflow")
    task = runner.create_task("What is 6 * 7?")
    (first,) = runner.get_upcoming_steps(task.task_id)
    assert first.name == "triage: model call"
    outputs = [runner.run_step(task.task_id) for _ in range(5)]
    assert [(o.task_step.kind, o.task_step.name) for o in outputs] == [
        (StepKind.LLM, "triage: model call"),
        (StepKind.DELEGATE, "handoff to math"),
        (StepKind.LLM, "math: model call"),
        (StepKind.TOOL, "multiply"),
        (StepKind.LLM, "math: model call"),
    ]
    assert outputs[1].task_step.input["args"]["to_agent"] == "math"
    assert outputs[-1].is_last and outputs[-1].output == "The product is 42."


def test_a_new_runner_on_the_same_database_continues_the_task(project):
    db = project / "shared.db"
    runner = runner_for(project, db=db)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)

    again = runner_for(project, db=db)  # Another process: the agent rebuilt from its target.
    outputs = [again.run_step(task.task_id) for _ in range(4)]
    assert [o.task_step.name for o in outputs] == ["model call", "add", "model call", "confirm"]
    again.run_step(task.task_id, input="ok")
    assert again.run_step(task.task_id).output == "The answer is 405. (ok)"


def test_the_users_agent_is_left_alone_and_a_step_cannot_be_skipped(project):
    from agent_core.adapters.llama_index import LlamaIndexWorker
    from agent_core.errors import UserError

    registry = UserCodeRegistry(project=project, agents={"li": "agent.py:agent"})
    (entry,) = registry.agents()
    worker = registry.build_agent("li", llm=None, tool_approval=False)
    assert isinstance(worker, LlamaIndexWorker) and worker.workflow is entry.agent
    assert type(entry.agent).__name__ == "FunctionAgent"  # Gates sit on Stepwise's copy.
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    (step,) = runner.get_upcoming_steps(task.task_id)
    with pytest.raises(UserError) as refused:
        runner.skip_step(task.task_id, step.step_id)
    assert refused.value.code == "step_action_unsupported"
