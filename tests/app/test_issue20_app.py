"""Issue 20's app fixes: reply limits, estimated tokens, notes and errors on their own cards."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from agent_core import AgentRunner
from agent_core.dag import STATUS_COLORS, TOOL_ERROR, build_dag, status_group
from agent_core.llms import ChatMessage, ScriptedLLM
from agent_core.llms.base import ChatResponse, Usage
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.tools import FunctionTool
from agent_core.types import StepKind, StepStatus
from agent_core.workers import FunctionCallingAgentWorker, ReActAgentWorker
from stepwise.app.components.task_version import CHANGED

from .conftest import saved_spec, stored
from .test_stepper import (
    TASK_KEY,
    card_titles,
    click,
    codes,
    dag_nodes,
    fill,
    messages,
    ok,
    start_scenario,
    step_widget,
    task_id,
    texts,
    type_task,
)

BAD_ACTION = "Thought: I will add.\nAction: add\nAction Input: {not json"


def _reply(text: str, *, estimated: bool = False) -> ChatResponse:
    usage = Usage(prompt_tokens=1000, completion_tokens=234, estimated=estimated)
    return ChatResponse(message=ChatMessage(role="assistant", content=text), usage=usage)


def _broken(a: int, b: int) -> int:
    """Add two numbers (it always fails)."""
    raise RuntimeError("the adder is broken")


def _ran_task(db_path: Path, *replies: ChatResponse) -> str:
    """A task in the app's database whose steps ran through the runtime, one per reply."""
    tools = [FunctionTool.from_defaults(fn=_broken, name="add")]
    worker = ReActAgentWorker.from_tools(tools, llm=ScriptedLLM(list(replies)))
    runner = AgentRunner(worker, store=SQLiteStore(db_path))
    task = runner.create_task("What is 2 + 3?").task_id
    for _ in replies:
        runner.run_step(task)
    return task


def _open(app: AppTest, task: str) -> AppTest:
    app.session_state[TASK_KEY] = task
    return ok(app.run())


_ITEM = '{"id": "a", "agent": "%s", "prompt": "Write hi to a.txt", "depends_on": []}'


def _plan(agent: str) -> str:
    return '{"plan": [' + _ITEM % agent + "]}"


def test_an_invalid_plan_then_a_valid_one_runs_without_a_stale_tab(
    app: AppTest, db_path: Path
) -> None:
    task = start_scenario(app, "haiku")
    step_widget(app, "input", "text_area").input(_plan("nobody"))
    step_widget(app, "run").click().run()
    ok(app)
    (plan_step,) = stored(db_path, task).step_queue
    assert plan_step.status is StepStatus.FAILED  # the invalid plan was refused...
    assert any("unknown agent 'nobody'" in m for m in messages(app))  # ...and said why
    assert not any("could not be shown" in m for m in messages(app))

    step_widget(app, "input", "text_area").input(_plan("file"))
    step_widget(app, "run").click().run()
    ok(app)

    assert CHANGED not in messages(app)
    state = stored(db_path, task)
    assert [state.steps[s].kind for s in state.completed] == [StepKind.PLAN]
    assert [s.kind for s in state.step_queue] == [StepKind.DELEGATE, StepKind.FINALIZE]


def test_estimated_tokens_show_approx_on_the_card_the_task_and_the_tasks_page(
    app: AppTest, db_path: Path
) -> None:
    task = _ran_task(db_path, _reply("Thought: done.\nAnswer: 5", estimated=True))
    _open(app, task)
    assert card_titles(app)[0].startswith("Step 1 · llm · ≈1,234 tokens")
    assert any("≈1,234 tokens" in c.value for c in app.caption)  # the task's totals
    app.switch_page("app_pages/tasks.py").run()
    ok(app)
    assert any("≈1,234 tokens" in c.value for c in app.caption if " · id " in c.value)


def test_exact_tokens_show_no_approx(app: AppTest, db_path: Path) -> None:
    _open(app, _ran_task(db_path, _reply("Thought: done.\nAnswer: 5")))
    assert card_titles(app)[0].startswith("Step 1 · llm · 1,234 tokens")


def test_a_react_parse_error_shows_on_its_own_card(app: AppTest, db_path: Path) -> None:
    task = _ran_task(db_path, _reply(BAD_ACTION))
    assert "unclosed" in stored(db_path, task).task.memory.get_all()[-1].content  # model told
    _open(app, task)
    assert any("could not be read as ReAct" in c.value for c in app.caption)
    assert any(text.startswith("Action Input has an unclosed '{'") for text in codes(app))


def test_a_failed_tool_call_is_not_drawn_green(app: AppTest, db_path: Path) -> None:
    call = 'Thought: I will add.\nAction: add\nAction Input: {"a": 2, "b": 3}'
    task = _ran_task(db_path, _reply(call))
    state = stored(db_path, task)
    (output,) = state.completed_steps
    assert output.tool_calls[0].is_error  # the tool did fail
    assert status_group(output.task_step, output) == TOOL_ERROR
    _open(app, task)
    (node,) = [n for n in dag_nodes(app).values() if n["status"] != "upcoming"]
    assert fill(node) == STATUS_COLORS[TOOL_ERROR] != STATUS_COLORS["completed"]
    assert build_dag(state).nodes[output.task_step.step_id]["group"] == TOOL_ERROR


def _spec_of(db_path: Path, task: str) -> AgentSpec:
    spec = stored(db_path, task).task.spec
    assert spec is not None
    return AgentSpec.model_validate(spec)


def test_max_tokens_from_settings_is_each_new_tasks_default_and_a_task_may_change_it(
    app: AppTest, db_path: Path
) -> None:
    ok(app.run())
    app.switch_page("app_pages/settings.py").run()
    app.number_input(key="settings-max-tokens").set_value(512).run()
    app.button(key="settings-save-model").click().run()
    assert saved_spec(db_path).max_tokens == 512

    app.switch_page("app_pages/stepper.py").run()
    assert app.number_input(key="form-max-tokens").value == 512  # Settings' cap by default
    type_task(app, "What is 2 + 3?")
    first = task_id(app)
    assert _spec_of(db_path, first).max_tokens == 512
    assert any("replies up to 512 tokens" in t for t in texts(app))

    click(app, "New task")
    app.number_input(key="form-max-tokens").set_value(64)
    app.text_area(key="form-task").input("What is 4 + 5?")
    click(app, "Create task")
    second = task_id(app)

    assert second != first
    assert _spec_of(db_path, second).max_tokens == 64  # this task's own cap...
    assert saved_spec(db_path).max_tokens == 512  # ...never Settings'
    click(app, "New task")
    assert app.number_input(key="form-max-tokens").value == 512


def test_a_model_that_did_not_call_a_tool_says_so_on_its_card(app: AppTest, db_path: Path) -> None:
    tools = [FunctionTool.from_defaults(fn=_broken, name="add")]
    worker = FunctionCallingAgentWorker.from_tools(tools, llm=ScriptedLLM(["2 + 3 = 5"]))
    runner = AgentRunner(worker, store=SQLiteStore(db_path))
    task = runner.create_task("What is 2 + 3?").task_id
    output = runner.run_step(task)
    assert [note.code for note in output.notes] == ["no_tool_call"]  # the runtime noted it
    _open(app, task)
    assert any("The model did not call a tool" in i.value for i in app.info)
