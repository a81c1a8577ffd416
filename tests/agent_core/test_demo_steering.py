"""The demo model answers to steering: it reads the conversation it is sent, not a fixed script.

Each test drives an `AgentRunner` over a demo scenario's spec, steers it as a person does in
the app (an edited call, a rejected call with a reason, feedback, an edited question, undo),
and checks that the demo model's next reply follows from what actually happened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_core import AgentRunner
from agent_core.demos import ARITHMETIC_TASK, DEMO_MODEL_NAME, HAIKU_TASK, SCENARIOS, demo_llm
from agent_core.llms import ChatMessage
from agent_core.types import StepKind

ANSWER_405 = "(121 * 3) + 42 = 405"


def _runner(name: str, tmp_path: Path, **spec: Any) -> AgentRunner:
    scenario = SCENARIOS[name]
    return scenario.spec.model_copy(
        update={"workspace": str(tmp_path / "ws"), **spec}
    ).build_runner()


def _task(agent: AgentRunner, name: str) -> str:
    return agent.create_task(SCENARIOS[name].task).task_id


def _held_call(agent: AgentRunner, task_id: str, index: int = 0) -> Any:
    step = agent.get_upcoming_steps(task_id)[index]
    assert step.kind is StepKind.TOOL and step.needs_approval
    return step


def _approve(agent: AgentRunner, task_id: str, args: dict[str, Any] | None = None) -> str:
    """Run the call awaiting approval, with `args` instead of the proposed ones if given."""
    step = _held_call(agent, task_id)
    edited = None if args is None else {**step.input, "args": args}
    return agent.run_step(task_id, edited, step_id=step.step_id).output


# ----------------------------------------------------------------------------- ReAct


def test_an_edited_multiply_feeds_its_real_result_into_add_and_the_answer(tmp_path):
    agent = _runner("arithmetic", tmp_path, tool_approval=True)
    task = _task(agent, "arithmetic")
    agent.run_step(task)
    assert _held_call(agent, task).input["args"] == {"a": 121, "b": 3}

    assert _approve(agent, task, {"a": 121, "b": 4}).endswith("484")
    chose_add = agent.run_step(task)
    assert "You changed my call to multiply(121, 4); it returned 484." in (chose_add.thought or "")
    assert _held_call(agent, task).input == {"tool": "add", "args": {"a": 484, "b": 42}}
    assert _approve(agent, task) == "526"

    answer = agent.run_step(task)
    assert answer.is_last and answer.output == "(121 * 4) + 42 = 526"
    assert str(agent.finalize_response(task)) == "(121 * 4) + 42 = 526"


def test_a_rejected_add_answers_with_the_product_alone_and_says_so(tmp_path):
    agent = _runner("arithmetic", tmp_path, tool_approval=True)
    task = _task(agent, "arithmetic")
    agent.run_step(task)
    _approve(agent, task)
    agent.run_step(task)
    agent.reject_step(task, message="just multiply")

    answer = agent.run_step(task)

    assert answer.is_last
    assert answer.output == (
        '121 * 3 = 363. You rejected my call of add(363, 42) ("just multiply"), so I stop there.'
    )


def test_a_rejected_multiply_says_the_demo_cannot_answer_without_it(tmp_path):
    agent = _runner("arithmetic", tmp_path, tool_approval=True)
    task = _task(agent, "arithmetic")
    agent.run_step(task)
    agent.reject_step(task, message="no tools today")

    answer = agent.run_step(task)

    assert answer.is_last and answer.output.startswith("I cannot answer: you rejected")
    assert '("no tools today")' in answer.output and "405" not in answer.output


def test_a_call_edited_into_an_error_is_reported_not_papered_over(tmp_path):
    agent = _runner("arithmetic", tmp_path, tool_approval=True)
    task = _task(agent, "arithmetic")
    agent.run_step(task)
    _approve(agent, task, {"a": 121, "b": "three"})

    answer = agent.run_step(task)

    assert answer.is_last and "failed: Error: invalid arguments for tool `multiply`" in (
        answer.output
    )


def test_feedback_is_acknowledged_and_the_plan_goes_on(tmp_path):
    agent = _runner("arithmetic", tmp_path)
    task = _task(agent, "arithmetic")
    agent.run_step(task)
    wish = "Show your work in Roman numerals."
    agent.add_feedback(task, wish)

    after = agent.run_step(task)

    assert f'You wrote "{wish}"; as the scripted demo model I cannot act on requests' in (
        after.thought or ""
    )
    assert after.tool_calls[0].tool_name == "add"  # It carries on with its plan...
    final = agent.run_step(task)
    assert final.output == ANSWER_405  # ...and acknowledges the feedback once, not again.


def test_feedback_just_before_the_answer_is_acknowledged_below_it(tmp_path):
    agent = _runner("arithmetic", tmp_path)
    task = _task(agent, "arithmetic")
    agent.run_step(task)
    agent.run_step(task)
    agent.add_feedback(task, "Answer in French.")

    answer = agent.run_step(task)

    assert answer.is_last
    assert answer.output.startswith(f'{ANSWER_405}\n\nYou wrote "Answer in French."; as the')


def test_an_edited_question_is_the_one_answered(tmp_path):
    agent = _runner("arithmetic", tmp_path)
    task = _task(agent, "arithmetic")
    agent.run_step(task, "What is (7 * 6) + 0.5?")

    result = agent.run_until(task)

    assert result.reason == "last_step"
    assert result.outputs[-1].output == "(7 * 6) + 0.5 = 42.5"


def test_undo_and_rerun_replay_the_same_reply(tmp_path):
    agent = _runner("arithmetic", tmp_path, tool_approval=True)
    task = _task(agent, "arithmetic")
    agent.run_step(task)
    _approve(agent, task, {"a": 121, "b": 4})
    first = agent.run_step(task)
    assert '{"a": 484, "b": 42}' in first.output

    agent.undo_step(task)
    again = agent.run_step(task)

    assert again.task_step.step_id != first.task_step.step_id  # A re-run, on a new branch.
    assert (again.output, again.thought) == (first.output, first.thought)
    # Undo the edited call too and run it as proposed: the reply is the unsteered one.
    agent.undo_step(task, steps=2)
    _approve(agent, task, {"a": 121, "b": 3})
    assert agent.run_step(task).output == (
        'Thought: Now I add 42 to 363.\nAction: add\nAction Input: {"a": 363, "b": 42}'
    )
    _approve(agent, task)
    assert agent.run_step(task).output == ANSWER_405


# ----------------------------------------------------------------------------- native calls


def test_function_calling_reads_an_edited_and_a_rejected_parallel_call(tmp_path):
    agent = _runner("parallel", tmp_path, tool_approval=True)
    task = _task(agent, "parallel")
    agent.run_step(task)
    multiply, add = _held_call(agent, task, 0), _held_call(agent, task, 1)
    agent.run_step(task, {**multiply.input, "args": {"a": 12, "b": 8}}, step_id=multiply.step_id)
    agent.reject_step(task, add.step_id, message="no adding")

    answer = agent.run_step(task)

    assert answer.is_last
    assert answer.output == (
        '12 * 8 = 96. You rejected my call of add(5, 9) ("no adding"), so I did not add the '
        "two results."
    )


def test_function_calling_adds_the_results_that_actually_came_back(tmp_path):
    agent = _runner("parallel", tmp_path, tool_approval=True)
    task = _task(agent, "parallel")
    agent.run_step(task)
    multiply = _held_call(agent, task, 0)
    agent.run_step(task, {**multiply.input, "args": {"a": 12, "b": 8}}, step_id=multiply.step_id)
    _approve(agent, task)

    chose = agent.run_step(task)
    assert _held_call(agent, task).input["args"] == {"a": 96, "b": 14}
    assert chose.thought == "You changed my call to multiply(12, 8); it returned 96."
    _approve(agent, task)

    assert agent.run_step(task).output == "12 * 8 = 96 and 5 + 9 = 14; together 110."


@pytest.mark.parametrize(
    ("name", "worker", "answer"),
    [
        ("arithmetic", "function_calling", ANSWER_405),
        ("parallel", "react", "12 * 7 = 84 and 5 + 9 = 14; together 98."),
    ],
)
def test_each_scenario_plays_on_either_protocol(tmp_path, name, worker, answer):
    agent = _runner(name, tmp_path, worker=worker)
    task = _task(agent, name)

    result = agent.run_until(task)

    assert result.reason == "last_step" and result.outputs[-1].output == answer
    assert agent.finalize_response(task).response == answer


# ----------------------------------------------------------------------------- the planner


async def test_the_planner_reports_what_its_agents_did_when_it_went_off_plan():
    results = (
        "The agents' results:\n\n[haiku] file: Write a haiku.\nResult: I did not finish: you "
        'rejected my call of write_file(...) ("not now").\n\n[drawing] image: Draw.\n'
        "Result: Drew the llama in llama.svg.\n\nNote from the user: make it rhyme\n\n"
        "Combine these into the final answer to my request."
    )
    messages = [
        ChatMessage(role="user", content=HAIKU_TASK),
        ChatMessage(role="assistant", content="{}"),
        ChatMessage(role="user", content=results),
    ]

    reply = await demo_llm().chat(messages)

    assert reply.model == DEMO_MODEL_NAME
    assert reply.text.startswith("Not everything went to plan.")
    assert '- haiku: I did not finish: you rejected my call of write_file(...) ("not now").' in (
        reply.text
    )
    assert 'You wrote "make it rhyme"' in reply.text


async def test_feedback_before_the_question_does_not_hide_the_question():
    messages = [
        ChatMessage(role="user", content="Be brief."),
        ChatMessage(role="user", content=ARITHMETIC_TASK),
    ]

    reply = await demo_llm().chat(messages)

    assert reply.text.startswith('Thought: You wrote "Be brief."')
    assert reply.text.endswith('Action: multiply\nAction Input: {"a": 121, "b": 3}')
