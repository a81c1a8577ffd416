"""The runtime's data round-trips through JSON and behaves as the API promises."""

from __future__ import annotations

import time

from agent_core import StepKind, StepStatus, Task, TaskState, TaskStep, TaskStepOutput, ToolOutput
from agent_core.llms import ChatMessage, ToolCall, Usage
from agent_core.memory import ChatMemoryBuffer
from agent_core.types import new_id, short_id


def _state() -> TaskState:
    task = Task(
        input="q",
        memory=ChatMemoryBuffer(
            messages=[
                ChatMessage(role="user", content="q"),
                ChatMessage(
                    role="assistant", tool_calls=(ToolCall(id="1", name="add", args={"a": 1}),)
                ),
            ],
            token_limit=500,
        ),
        extra_state={"nested": {"list": [1, "two", None]}},
    )
    first = TaskStep(task_id=task.task_id, input="q")
    call = first.get_next_step(kind=StepKind.TOOL, input={"tool": "add", "args": {"a": 1}})
    first.status = StepStatus.COMPLETED
    output = TaskStepOutput(
        output="thinking",
        task_step=first,
        next_steps=[call],
        tool_calls=[ToolOutput(tool_name="add", args={"a": 1}, content="1")],
        usage=Usage(prompt_tokens=3, completion_tokens=2, cost_usd=0.001),
    )
    return TaskState(
        task=task,
        steps={first.step_id: first, call.step_id: call},
        outputs={first.step_id: output},
        queue=[call.step_id],
        completed=[first.step_id],
    )


def test_task_state_round_trips_through_json():
    state = _state()
    again = TaskState.model_validate_json(state.model_dump_json())
    assert again == state
    assert again.task.memory.get_all() == state.task.memory.get_all()
    assert again.task.memory.token_limit == 500
    assert again.step_queue[0].input == {"tool": "add", "args": {"a": 1}}
    assert again.completed_steps[0].usage.cost_usd == 0.001


def test_get_next_step_links_by_id_on_the_same_branch():
    step = TaskStep(task_id="t", input="x", branch_id="b2")
    child = step.get_next_step(kind=StepKind.TOOL, depends_on=["other"], needs_approval=True)
    assert child.prev_step_ids == [step.step_id] and child.branch_id == "b2"
    assert child.task_id == "t" and child.depends_on == ["other"] and child.needs_approval
    assert child.step_id != step.step_id


def test_set_input_keeps_the_first_proposal_only():
    step = TaskStep(task_id="t", input="proposed")
    step.set_input("proposed")
    assert not step.edited
    step.set_input("first edit")
    step.set_input("second edit")
    assert step.edited and step.proposed_input == "proposed" and step.input == "second edit"


def test_an_edit_typed_back_to_the_proposal_is_no_edit():
    """Issue 32: the "edited" badge stayed on a step whose input no longer differed."""
    step = TaskStep(task_id="t", input={"a": 1})
    step.set_input({"a": 2})
    step.set_input({"a": 1})
    assert not step.edited and step.proposed_input is None and step.input == {"a": 1}


def test_usage_adds_and_subtracts_with_unknown_cost():
    known = Usage(prompt_tokens=10, completion_tokens=5, cost_usd=0.5)
    unknown = Usage(prompt_tokens=1, completion_tokens=1)
    total = known + unknown
    assert (total.total_tokens, total.cost_usd) == (17, 0.5)
    assert (unknown + unknown).cost_usd is None
    assert (total - known).total_tokens == 2 and (total - known).cost_usd == 0.0


def test_ids_sort_in_creation_order_and_their_short_form_tells_them_apart():
    ids = [new_id() for _ in range(200)]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert len(set(ids)) == len(ids)
    later = new_id()
    time.sleep(0.002)
    assert new_id() > later  # A later millisecond sorts after.
    assert len({short_id(i) for i in ids}) == len(ids)  # Same minute, distinct short ids.
