"""The Stepper page's flows, driven through AppTest and checked against the store and the DAG.

Every test drives the real app (`app.py`) on a fresh SQLite file, then opens its own
`SQLiteStore` on that file to check what the page actually did, and reads the DAG both from
the stored state (`build_dag`) and from the data the app gives its graph component.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from agent_core.dag import STATUS_COLORS, build_dag
from agent_core.demos import ARITHMETIC_TASK, PARALLEL_TASK, SCENARIOS
from agent_core.errors import StepError
from agent_core.llms import FunctionLLM, ScriptedLLM
from agent_core.llms.base import Usage
from agent_core.runtime.runner import AgentRunner
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.tools.arithmetic import arithmetic_tools
from agent_core.types import StepKind, StepStatus, TaskState, TaskStatus, TaskStep, TaskStepOutput
from agent_core.workers import ReActAgentWorker
from stepwise.app.components.live_step import shown_text
from stepwise.app.components.memory_view import message_text
from stepwise.app.components.messages import unplain
from stepwise.app.components.step_card import card_title

from .conftest import stored

CARDS_SHOWN = 10
"""The page's window of completed-step cards (app_pages/stepper.py)."""
TASK_KEY = "stepwise.task_id"
"""Where stepwise/app/components/state.py keeps the current task id in session state."""
HOSTILE = "<img src=x onerror=alert(1)>"
ANSWER_405 = "(121 * 3) + 42 = 405"

# ----------------------------------------------------------------------------- helpers


def ok(at: AppTest) -> AppTest:
    """The page ran without a Streamlit traceback."""
    assert not at.exception, [e.value for e in at.exception]
    return at


def click(at: AppTest, label: str) -> AppTest:
    """Click the one button labelled `label` and rerun."""
    buttons = [b for b in at.button if b.label == label]
    assert len(buttons) == 1, f"{len(buttons)} buttons labelled {label!r}"
    buttons[0].click().run()
    return ok(at)


def button(at: AppTest, label: str) -> Any:
    """The one button labelled `label`."""
    (found,) = [b for b in at.button if b.label == label]
    return found


def step_widget(at: AppTest, prefix: str, kind: str = "button", index: int = 0) -> Any:
    """The `index`-th upcoming-step widget whose key starts with `prefix-` (run-, input-...)."""
    widgets = [w for w in getattr(at, kind) if w.key and w.key.startswith(f"{prefix}-")]
    assert len(widgets) > index, f"no {kind} keyed {prefix}-… (have {len(widgets)})"
    return widgets[index]


def run_first_step(at: AppTest) -> AppTest:
    step_widget(at, "run").click().run()
    return ok(at)


def task_id(at: AppTest) -> str:
    value = at.session_state[TASK_KEY]
    assert isinstance(value, str)
    return value


def completed(state: TaskState) -> list[str]:
    return [state.steps[s].kind.value for s in state.completed]


def codes(at: AppTest) -> list[str]:
    """Text the page shows as code blocks (model and tool text, the task, step errors)."""
    return [c.value for c in at.code]


def texts(at: AppTest) -> list[str]:
    """Plain text the page shows (`st.text`: the task's model and agent, say)."""
    return [t.value for t in at.text]


def messages(at: AppTest) -> list[str]:
    """The app's messages as read on the page: each coloured box (its markdown escapes undone,
    see `stepwise.app.components.messages.plain`) and each toast."""
    boxes = [e.value for e in [*at.error, *at.warning, *at.info, *at.success]]
    return [unplain(text) for text in boxes] + toasts(at)


def toasts(at: AppTest) -> list[str]:
    """The toasts the last run showed (an action that worked says so in one)."""
    return [t.value for t in at.toast]


def popover(at: AppTest, key: str) -> Any:
    """The popover block keyed `key` (its proto holds label, help and disabled)."""
    found = [p for p in at.get("popover") if p.proto.id.endswith(f"-{key}")]
    assert len(found) == 1, f"{len(found)} popovers keyed {key}"
    return found[0].proto.popover


def expander(at: AppTest, label: str) -> Any:
    (found,) = [e for e in at.expander if e.label == label]
    return found


def card_titles(at: AppTest) -> list[str]:
    return [e.label for e in at.expander if e.label.startswith("Step ")]


def _dag_data(at: AppTest, name: str) -> list[dict[str, Any]]:
    graphs = at.get("component_instance")
    assert len(graphs) == 1, "the page shows no DAG"
    return json.loads(json.loads(graphs[0].proto.json_args)["graph"])[name]


def dag_nodes(at: AppTest) -> dict[str, dict[str, Any]]:
    """The nodes of the DAG the app gave its graph component, by step id."""
    return {node["id"]: node for node in _dag_data(at, "nodes")}


def dag_edges(at: AppTest) -> set[tuple[str, str]]:
    """The edges of the DAG the app gave its graph component."""
    return {(edge["from"], edge["to"]) for edge in _dag_data(at, "edges")}


def fill(node: dict[str, Any]) -> str:
    color = node["color"]
    return color["background"] if isinstance(color, dict) else color


def assert_dag_matches(at: AppTest, state: TaskState) -> None:
    """The drawn DAG has one node per stored step, coloured by its stored status."""
    graph = build_dag(state)
    drawn = dag_nodes(at)
    assert set(drawn) == set(graph.nodes)
    for step_id, node in drawn.items():
        assert fill(node) == STATUS_COLORS[state.steps[step_id].status.value]
    assert dag_edges(at) == set(graph.edges)


def type_task(at: AppTest, text: str, **choices: Any) -> AppTest:
    """Fill the create form: `worker`, `provider`, `tools`, `approval`, then the task text."""
    at.run()
    if "worker" in choices:
        at.selectbox(key="form-worker").set_value(choices["worker"])
    if "provider" in choices:
        at.selectbox(key="form-provider").set_value(choices["provider"])
    if "tools" in choices:
        at.multiselect(key="form-tools").set_value(choices["tools"])
    if choices.get("approval"):
        at.checkbox(key="form-approval").check()
    at.text_area(key="form-task").input(text)
    return click(at, "Create task")


def start_scenario(at: AppTest, name: str) -> str:
    ok(at.run())
    at.button(key=f"scenario-{name}").click().run()
    ok(at)
    return task_id(at)


def spec_of(state: TaskState) -> AgentSpec:
    assert state.task.spec is not None
    return AgentSpec.model_validate(state.task.spec)


# ----------------------------------------------------------------------------- create


def test_create_from_the_form_with_the_demo_model(app: AppTest, db_path: Path) -> None:
    type_task(app, ARITHMETIC_TASK, worker="react", provider="demo", tools=["arithmetic"])

    state = stored(db_path, task_id(app))
    assert state.task.input == ARITHMETIC_TASK
    assert state.task.status is TaskStatus.ACTIVE
    spec = spec_of(state)
    assert (spec.worker, spec.provider, spec.tools) == ("react", "demo", ("arithmetic",))
    (first,) = state.step_queue
    assert first.input == ARITHMETIC_TASK
    assert ARITHMETIC_TASK in codes(app)  # the header and the editable input
    assert any("Demo model" in text for text in texts(app))
    assert step_widget(app, "input", "text_area").value == ARITHMETIC_TASK
    assert_dag_matches(app, state)
    assert [fill(n) for n in dag_nodes(app).values()] == [STATUS_COLORS["upcoming"]]


def test_create_refuses_an_empty_task(app: AppTest, db_path: Path) -> None:
    app.run()
    click(app, "Create task")

    assert TASK_KEY not in app.session_state or app.session_state[TASK_KEY] is None
    assert any("Type the task first" in w.value for w in app.warning)
    store = SQLiteStore(db_path)
    assert store.list_tasks() == []
    store.close()


def test_you_are_the_model_makes_a_react_agent(app: AppTest, db_path: Path) -> None:
    type_task(app, "Hello?", worker="function_calling", provider="human")

    spec = spec_of(stored(db_path, task_id(app)))
    assert (spec.provider, spec.worker) == ("human", "react")


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_scenario_button_creates_its_task(app: AppTest, db_path: Path, name: str) -> None:
    scenario = SCENARIOS[name]

    state = stored(db_path, start_scenario(app, name))

    assert state.task.input == scenario.task
    assert spec_of(state) == scenario.spec
    assert len(state.queue) == 1
    assert step_widget(app, "run").label == "Run step"
    assert_dag_matches(app, state)


# ----------------------------------------------------------------------------- run and edit


def test_run_one_step_shows_a_card_with_tokens_and_latency(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")

    run_first_step(app)

    state = stored(db_path, task)
    assert completed(state) == ["llm"]
    (output,) = state.completed_steps
    # The model wrote 121 and 3: the product is shown as the integer it is.
    assert [(c.tool_name, c.content) for c in output.tool_calls] == [("multiply", "363")]
    (title,) = card_titles(app)
    assert title.startswith("Step 1 · llm")
    assert f"{output.usage.total_tokens:,} tokens" in title and output.usage.total_tokens > 0
    assert re.search(r"· \d[\d,]* ms", title)
    card = expander(app, title)
    card_codes = [c.value for c in card.code]
    assert "First I multiply 121 by 3." in card_codes  # thought
    assert "363" in card_codes  # observation
    assert_dag_matches(app, state)
    colours = sorted(fill(n) for n in dag_nodes(app).values())
    assert colours == sorted([STATUS_COLORS["completed"], STATUS_COLORS["upcoming"]])


def test_edit_the_input_then_run_shows_proposed_next_to_what_ran(
    app: AppTest, db_path: Path
) -> None:
    task = start_scenario(app, "arithmetic")
    steered = f"{ARITHMETIC_TASK} Multiply first, please."

    step_widget(app, "input", "text_area").input(steered)
    run_first_step(app)

    step = stored(db_path, task).completed_steps[0].task_step
    assert (step.edited, step.proposed_input, step.input) == (True, ARITHMETIC_TASK, steered)
    (title,) = card_titles(app)
    assert "edited" in title
    card = expander(app, title)
    captions = [c.value for c in card.caption]
    assert "Proposed by the agent" in captions and "What ran (edited by you)" in captions
    card_codes = [c.value for c in card.code]
    assert card_codes.index(ARITHMETIC_TASK) < card_codes.index(steered)


def test_clearing_the_input_runs_the_step_with_no_input(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")

    step_widget(app, "input", "text_area").input("")
    run_first_step(app)

    step = stored(db_path, task).completed_steps[0].task_step
    assert (step.edited, step.proposed_input, step.input) == (True, ARITHMETIC_TASK, None)


def test_save_edit_keeps_the_new_input_without_running(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")

    step_widget(app, "input", "text_area").input("Just add 1 and 2.")
    step_widget(app, "save").click().run()
    ok(app)

    state = stored(db_path, task)
    assert state.completed == []
    assert state.step_queue[0].input == "Just add 1 and 2."
    assert step_widget(app, "input", "text_area").value == "Just add 1 and 2."


def test_the_preview_shows_an_edit_typed_but_not_saved(app: AppTest, db_path: Path) -> None:
    # It showed the step's saved input until Save edit: not what Run step would send.
    task = start_scenario(app, "arithmetic")
    typed = "Just add 1 and 2, please."

    step_widget(app, "input", "text_area").input(typed).run()
    ok(app)

    seen = [c.value for c in expander(app, "What the model sees next").code]
    assert typed in seen and ARITHMETIC_TASK not in seen
    assert stored(db_path, task).step_queue[0].input == ARITHMETIC_TASK  # Nothing saved.


# ----------------------------------------------------------------------------- tool approval


def _awaiting_approval(app: AppTest, db_path: Path) -> str:
    """A ReAct arithmetic task made with "Ask me before each tool call", past its first step."""
    type_task(app, ARITHMETIC_TASK, worker="react", provider="demo", approval=True)
    task = task_id(app)
    assert spec_of(stored(db_path, task)).tool_approval
    run_first_step(app)
    (call,) = stored(db_path, task).step_queue
    assert call.kind is StepKind.TOOL and call.needs_approval
    assert call.input == {"tool": "multiply", "args": {"a": 121, "b": 3}}
    return task


def test_approve_a_tool_call_with_edited_arguments(app: AppTest, db_path: Path) -> None:
    task = _awaiting_approval(app, db_path)
    assert json.loads(step_widget(app, "args", "text_area").value) == {"a": 121, "b": 3}
    assert "multiply" in codes(app)

    step_widget(app, "args", "text_area").input('{"a": 121, "b": 4}')
    click(app, "Approve and run step")

    state = stored(db_path, task)
    assert completed(state) == ["llm", "tool"]
    tool_output = state.completed_steps[-1]
    assert [(c.args, c.content) for c in tool_output.tool_calls] == [({"a": 121, "b": 4}, "484")]
    step = tool_output.task_step
    assert step.edited and step.proposed_input == {"tool": "multiply", "args": {"a": 121, "b": 3}}
    # The model's next request says what the person changed, and the edited result.
    memory = [m.content for m in state.task.memory.get_all()]
    assert any("The user changed this call" in m and "484" in m for m in memory)
    assert "edited" in card_titles(app)[0]


def test_reject_a_tool_call_with_a_reason(app: AppTest, db_path: Path) -> None:
    task = _awaiting_approval(app, db_path)
    reason = "Use add for this, not multiply."

    step_widget(app, "reason", "text_input").input(reason)
    click(app, "Reject")

    state = stored(db_path, task)
    assert completed(state) == ["llm", "tool"]
    rejected = state.completed_steps[-1]
    step = rejected.task_step
    # A rejection is recorded as such: not an edit, and the call's input is left as proposed.
    assert step.rejection == reason
    assert not step.edited
    assert step.input == {"tool": "multiply", "args": {"a": 121, "b": 3}}
    assert rejected.tool_calls[0].is_error and rejected.tool_calls[0].rejected
    title = unplain(card_titles(app)[0])
    assert f'rejected: "{reason}"' in title and "edited" not in title
    # What the model sees next (the page's memory view) holds the reason...
    seen = [c.value for c in expander(app, "What the model sees next").code]
    assert any(reason in text for text in seen)
    # ...and the request the model gets on the next step does too.
    run_first_step(app)
    after = stored(db_path, task)
    messages = after.task.memory.get_all()
    last_reply = max(i for i, m in enumerate(messages) if m.role == "assistant")
    assert any(reason in m.content for m in messages[:last_reply])


def test_invalid_json_arguments_show_an_error_and_run_nothing(app: AppTest, db_path: Path) -> None:
    task = _awaiting_approval(app, db_path)

    step_widget(app, "args", "text_area").input('{"a": 121, "b": ')
    click(app, "Approve and run step")

    # One error box, beside the call: the headline and the parser's reason inside it.
    (error,) = [e for e in app.error if "nothing ran" in e.value]
    assert "not valid JSON" in unplain(error.value)
    state = stored(db_path, task)
    assert completed(state) == ["llm"]
    (call,) = state.step_queue
    assert (call.status, call.attempts, call.edited) == (StepStatus.UPCOMING, 0, False)
    # The person's text is kept to fix, and the other choices are still there.
    assert step_widget(app, "args", "text_area").value == '{"a": 121, "b": '
    assert button(app, "Reject") and step_widget(app, "skip").label == "Skip"


def test_arguments_that_are_not_an_object_are_refused(app: AppTest, db_path: Path) -> None:
    task = _awaiting_approval(app, db_path)

    step_widget(app, "args", "text_area").input("[1, 2]")
    click(app, "Approve and run step")

    (error,) = [e for e in app.error if "nothing ran" in e.value]
    assert "must be a JSON object" in unplain(error.value)
    assert completed(stored(db_path, task)) == ["llm"]


# ----------------------------------------------------------------------------- undo, abandon


def test_undo_drops_the_step_and_the_dag_keeps_it_undone(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")
    run_first_step(app)
    run_first_step(app)
    assert len(stored(db_path, task).completed) == 2

    click(app, "Undo")

    state = stored(db_path, task)
    assert completed(state) == ["llm"]
    undone = [s for s in state.steps.values() if s.status is StepStatus.UNDONE]
    assert len(undone) == 1
    graph = build_dag(state)
    assert graph.nodes[undone[0].step_id]["undone"]
    assert fill(dag_nodes(app)[undone[0].step_id]) == STATUS_COLORS["undone"]
    assert_dag_matches(app, state)
    assert any("undone" in title for title in card_titles(app))
    assert "Undid the last step." in toasts(app)


def test_abandon_disables_the_controls(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")
    run_first_step(app)

    assert popover(app, "abandon").label == "Abandon"  # it asks first: a second click
    click(app, "Abandon for good")

    assert stored(db_path, task).task.status is TaskStatus.ABANDONED
    assert "Task abandoned." in toasts(app)
    for label in ("Run ready steps", "Run until", "Undo", "Finalize"):
        assert button(app, label).disabled, label
    # Its popover stays open over the page's notice after the click: it says the result too.
    assert not popover(app, "abandon").disabled
    assert any(m.value.startswith("Task abandoned. Its steps stay") for m in app.success)
    assert not [b for b in app.button if b.label == "Abandon for good"]
    assert not [b for b in app.button if b.key and b.key.startswith("run-")]
    assert not [b for b in app.button if b.label == "Add feedback"]
    assert any("abandoned" in i.value for i in app.info)
    assert len(card_titles(app)) == 1  # its steps stay to inspect


# ----------------------------------------------------------------------------- run until


def test_run_until_the_last_step_then_finalize(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")
    assert button(app, "Finalize").disabled

    click(app, "Run until")

    state = stored(db_path, task)
    assert completed(state) == ["llm", "llm", "llm"]
    assert state.last_output is not None and state.last_output.is_last
    assert any("last step ran" in text for text in messages(app))
    assert not button(app, "Finalize").disabled

    click(app, "Finalize")

    state = stored(db_path, task)
    assert state.task.status is TaskStatus.COMPLETED
    assert "Task finished." in toasts(app)
    assert ANSWER_405 in codes(app)
    assert button(app, "Run until").disabled


@pytest.mark.parametrize(
    ("kind", "key", "value", "steps"),
    [
        ("checkbox", "bp-tools", True, 1),  # any tool: step 1 called multiply
        ("text_input", "bp-tool", "add", 2),  # step 2 called add
        ("number_input", "bp-step", 1, 1),
        ("number_input", "bp-cost", 0.5, 3),  # the demo model has no price: never over
    ],
)
def test_run_until_stops_at_each_kind_of_breakpoint(
    app: AppTest, db_path: Path, kind: str, key: str, value: Any, steps: int
) -> None:
    task = start_scenario(app, "arithmetic")

    getattr(app, kind)(key=key).set_value(value)
    click(app, "Run until")

    assert len(stored(db_path, task).completed) == steps
    if steps < 3:
        assert any("breakpoint" in text for text in messages(app))


def test_run_until_continues_past_the_breakpoint_it_stopped_at(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")

    app.text_input(key="bp-tool").input("add")
    click(app, "Run until")

    state = stored(db_path, task)
    # The step that chose add ran, and its call waits, held, before it runs: not the answer.
    assert completed(state) == ["llm", "llm"]
    assert state.completed_steps[-1].tool_calls == []
    (held,) = state.step_queue
    assert held.kind is StepKind.TOOL and held.step_state.get("held")
    assert held.input == {"tool": "add", "args": {"a": 363, "b": 42}}
    assert state.last_output is not None and not state.last_output.is_last
    assert any("breakpoint" in text and "'add'" in text for text in messages(app))

    click(app, "Run until")  # like a debugger's continue: past the breakpoint, to the end

    state = stored(db_path, task)
    assert completed(state) == ["llm", "llm", "tool", "llm"]
    assert [(c.tool_name, c.content) for c in state.completed_steps[2].tool_calls] == [
        ("add", "405")
    ]
    assert state.last_output is not None and state.last_output.is_last


def test_run_until_stops_at_a_tool_call_awaiting_approval(app: AppTest, db_path: Path) -> None:
    type_task(app, ARITHMETIC_TASK, worker="react", provider="demo", approval=True)

    click(app, "Run until")

    state = stored(db_path, task_id(app))
    assert completed(state) == ["llm"]
    assert state.step_queue[0].needs_approval
    assert any("awaits your approval" in text for text in messages(app))


def test_run_ready_steps_runs_parallel_tool_calls(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "parallel")
    assert stored(db_path, task).task.input == PARALLEL_TASK
    run_first_step(app)
    queued = stored(db_path, task).step_queue
    assert [s.kind for s in queued] == [StepKind.TOOL, StepKind.TOOL, StepKind.LLM]
    assert any("waits for earlier steps" in m.value for m in app.markdown)

    click(app, "Run ready steps")

    state = stored(db_path, task)
    assert completed(state) == ["llm", "tool", "tool"]  # the two calls, together
    assert sorted(c.content for o in state.completed_steps for c in o.tool_calls) == ["14", "84"]
    (waiting,) = state.step_queue
    assert waiting.kind is StepKind.LLM and state.is_ready(waiting)
    seen = "\n".join(c.value for c in expander(app, "What the model sees next").code)
    assert "→ calls multiply" in seen and "→ calls add" in seen  # as text, not captions
    assert_dag_matches(app, state)


# ----------------------------------------------------------------------------- feedback


def test_feedback_becomes_a_human_step_the_model_sees(app: AppTest, db_path: Path) -> None:
    task = start_scenario(app, "arithmetic")
    run_first_step(app)
    note = "Please double-check the product before adding."

    (box,) = [t for t in app.text_input if t.label.startswith("Add feedback")]
    box.input(note)
    click(app, "Add feedback")

    state = stored(db_path, task)
    assert completed(state) == ["llm", "human"]
    human = state.completed_steps[-1].task_step
    assert human.input == note
    assert state.task.memory.get_all()[-1].content == note
    seen = [c.value for c in expander(app, "What the model sees next").code]
    assert note in seen
    assert_dag_matches(app, state)
    assert build_dag(state).nodes[human.step_id]["kind"] == "human"


# ----------------------------------------------------------------------------- you are the model


def test_a_failing_step_shows_a_readable_error_then_a_typed_reply_runs(
    app: AppTest, db_path: Path
) -> None:
    question = "What is 2 + 3?"
    type_task(app, question, worker="react", provider="human", tools=["arithmetic"])
    task = task_id(app)

    # The exact prompt: the runtime's preview, the worker's system prompt then the question.
    prompt = [c.value for c in expander(app, "The exact prompt the model gets").code]
    store = SQLiteStore(db_path)
    runner = AgentSpec(provider="human", tools=("arithmetic",)).build_runner(store=store)
    preview = runner.preview_messages(task)
    assert [m.role for m in preview] == ["system", "user"]
    assert prompt == [message_text(m) for m in preview]
    assert prompt[-1] == question

    run_first_step(app)  # no reply typed: refused beside the box, nothing runs

    assert any("Type the model's reply first" in w.value for w in app.warning)
    state = stored(db_path, task)
    (waiting,) = state.step_queue
    assert (waiting.status, waiting.attempts) == (StepStatus.UPCOMING, 0)
    assert state.task.status is TaskStatus.ACTIVE

    # Run from Python with no reply, the step fails; the page shows why, as text.
    with pytest.raises(StepError):
        runner.run_step(task)
    store.close()
    ok(app.run())
    state = stored(db_path, task)
    (failed,) = state.step_queue
    assert failed.status is StepStatus.FAILED and "type the model's reply" in (failed.error or "")
    assert state.task.status is TaskStatus.FAILED
    assert any("This step failed" in e.value for e in app.error)
    assert any("type the model's reply" in text for text in codes(app))

    reply = "Thought: I can answer without using any more tools.\nAnswer: 5"
    step_widget(app, "reply", "text_area").input(reply)
    run_first_step(app)

    state = stored(db_path, task)
    assert state.task.status is TaskStatus.ACTIVE
    assert completed(state) == ["llm"]
    assert state.last_output is not None and state.last_output.is_last
    assert state.last_output.output == "5"
    # The model got the prompt the page showed: the same system prompt, then the question.
    assert [m.content for m in state.task.memory.get_all()] == [question, reply]
    assert not [e for e in app.error if "This step failed" in e.value]


# ----------------------------------------------------------------------------- reload


def test_a_reload_shows_the_same_task_and_it_continues(
    app: AppTest, db_path: Path, make_app: Callable[[], AppTest]
) -> None:
    task = start_scenario(app, "arithmetic")
    run_first_step(app)
    before = card_titles(app)

    again = make_app()
    again.session_state[TASK_KEY] = task
    ok(again.run())

    assert card_titles(again) == before
    assert_dag_matches(again, stored(db_path, task))
    run_first_step(again)
    assert len(stored(db_path, task).completed) == 2


def test_a_server_restart_finds_the_task_from_the_url(
    app: AppTest, db_path: Path, make_app: Callable[[], AppTest]
) -> None:
    task = start_scenario(app, "arithmetic")
    run_first_step(app)
    assert app.query_params.get("task") == task  # the URL remembers the task

    st.cache_resource.clear()  # a new server process: no runner, no store object
    st.cache_data.clear()
    again = make_app()
    again.query_params["task"] = task
    ok(again.run())

    assert again.session_state[TASK_KEY] == task
    assert len(card_titles(again)) == 1
    click(again, "Run until")
    assert completed(stored(db_path, task)) == ["llm", "llm", "llm"]


def test_new_task_leaves_the_task_and_forgets_the_url(app: AppTest) -> None:
    start_scenario(app, "arithmetic")

    click(app, "New task")

    assert "task" not in app.query_params
    assert button(app, "Create task")


def test_an_unknown_task_id_is_a_message_not_a_traceback(app: AppTest) -> None:
    app.query_params["task"] = "no-such-task"
    ok(app.run())

    assert any("could not be shown" in e.value for e in app.error)
    click(app, "Back to a new task")
    assert button(app, "Create task")


def test_a_task_whose_model_has_no_key_is_shown_read_only(
    app: AppTest, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    worker = ReActAgentWorker([], FunctionLLM(lambda m, t: "Answer: hi"))
    spec = AgentSpec(provider="openai").model_dump(mode="json")
    store = SQLiteStore(db_path)
    task = AgentRunner(worker, store=store, spec=spec).create_task("Say hi.")
    store.close()

    app.session_state[TASK_KEY] = task.task_id
    ok(app.run())

    assert any("Read only" in w.value for w in app.warning)
    assert any("OPENAI_API_KEY" in text for text in messages(app))
    assert "Say hi." in codes(app)
    assert button(app, "Run until").disabled
    assert not [b for b in app.button if b.key and b.key.startswith("run-")]


# ----------------------------------------------------------------------------- no markup


def test_hostile_text_is_never_rendered_as_markdown(app: AppTest, db_path: Path) -> None:
    type_task(app, HOSTILE, worker="react", provider="demo")
    task = task_id(app)
    # Feedback first: once the demo model has answered, feedback is no longer offered.
    (box,) = [t for t in app.text_input if t.label.startswith("Add feedback")]
    box.input(HOSTILE)
    click(app, "Add feedback")
    run_first_step(app)

    state = stored(db_path, task)
    assert state.task.input == HOSTILE
    assert completed(state) == ["human", "llm"]  # the feedback, then the model's step
    markdown_elements = [
        *app.markdown,
        *app.caption,
        *app.header,
        *app.subheader,
        *app.title,
        *app.error,
        *app.warning,
        *app.info,
        *app.success,
        *app.toast,
    ]
    assert markdown_elements
    for element in markdown_elements:
        assert "<img" not in element.value, element.value
    labels = [e.label for e in app.expander] + [b.label for b in app.button]
    assert not [label for label in labels if "<img" in label]
    assert HOSTILE in codes(app)  # shown, as plain text
    assert not app.get("iframe") and not app.get("html")  # The DAG gets the text as data.


# ----------------------------------------------------------------------------- speed, streaming


def test_only_the_newest_cards_are_drawn_until_asked(
    app: AppTest, db_path: Path, make_app: Callable[[], AppTest]
) -> None:
    store = SQLiteStore(db_path)
    runner = AgentSpec().build_runner(store=store)
    task = runner.create_task("A long task.").task_id
    for n in range(CARDS_SHOWN + 5):
        runner.add_feedback(task, f"note {n}")
    store.close()

    app.session_state[TASK_KEY] = task
    ok(app.run())

    titles = card_titles(app)
    assert len(titles) == CARDS_SHOWN
    assert titles[0].startswith(f"Step {CARDS_SHOWN + 5} ")  # newest first
    app.checkbox(key="show-all").check().run()
    (table,) = ok(app).dataframe  # Every step as a row; no card is built until one is picked.
    assert len(table.value) == CARDS_SHOWN + 5
    assert list(table.value["Step"][:2]) == [CARDS_SHOWN + 5, CARDS_SHOWN + 4]
    assert card_titles(app) == []


def test_a_reply_is_shown_as_it_streams() -> None:
    reply = 'Thought: First I multiply.\nAction: multiply\nAction Input: {"a": 2, "b": 3}'
    runner = ReActAgentWorker(arithmetic_tools(), ScriptedLLM([reply])).as_agent()
    task = runner.create_task("What is 2 * 3?")

    events = list(runner.stream_step(task.task_id))
    texts = [shown_text(events[:n]) for n in range(1, len(events) + 1)]

    assert len(set(texts)) > 3  # word by word, not all at once
    assert all(b.startswith(a) or a.startswith("…") for a, b in pairwise(texts))
    assert texts[-1].startswith(reply)
    assert "→ running multiply" in texts[-1] and "← multiply: 6" in texts[-1]


def test_a_card_title_says_tokens_cost_and_latency() -> None:
    step = TaskStep(task_id="t", number=4, kind=StepKind.LLM, status=StepStatus.COMPLETED)
    priced = TaskStepOutput(
        task_step=step,
        usage=Usage(prompt_tokens=1200, completion_tokens=34, cost_usd=0.00123),
        latency_ms=1530.4,
    )
    assert card_title(priced) == "Step 4 · llm · 1,234 tokens · $0.0012 · 1,530 ms"
    tool = TaskStepOutput(task_step=step.model_copy(update={"kind": StepKind.TOOL}))
    # No model ran: no tokens and no cost, only the time.
    assert card_title(tool) == "Step 4 · tool · 0 ms"
    one = TaskStepOutput(task_step=step, usage=Usage(prompt_tokens=1), latency_ms=2)
    assert card_title(one) == "Step 4 · llm · 1 token · cost unknown · 2 ms"


def test_a_server_address_holding_a_password_is_refused_and_nothing_is_stored(
    app: AppTest, db_path: Path
) -> None:
    ok(app.run())
    app.selectbox(key="form-provider").set_value("openai").run()
    app.text_input(key="form-model-openai").input("llama3.2")
    app.text_input(key="form-base-url-openai").input("http://me:hunter2@localhost:11434/v1")
    app.text_area(key="form-task").input("What is 2 + 2?")
    app.button(key="form-create").click().run()

    assert "must not hold a user name or password" in ok(app).error[0].value
    assert TASK_KEY not in app.session_state or app.session_state[TASK_KEY] is None
    assert b"hunter2" not in db_path.read_bytes()


def test_a_card_reads_the_messages_its_step_sent_from_the_store(
    app: AppTest, make_app: Callable[[], AppTest], db_path: Path
) -> None:
    task = start_scenario(app, "arithmetic")
    run_first_step(app)
    reload = make_app()  # A new session: nothing of the run is in its memory.
    reload.query_params["task"] = task
    ok(reload.run())

    (toggle,) = [t for t in reload.toggle if t.label == "Messages sent to the model"]
    toggle.set_value(True).run()

    shown = [c.value for c in reload.code]
    sent = stored(db_path, task).completed[0]
    from agent_core.store import SQLiteStore

    store = SQLiteStore(db_path)
    try:
        messages = store.load_messages_sent(task, sent)
    finally:
        store.close()
    assert messages and messages[0].role == "system"
    assert all(m.content in shown for m in messages)  # The prompt, exactly as sent.
