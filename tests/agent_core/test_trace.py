"""Traces: a task exported to JSON and imported back reads exactly as it ran, as a new task."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_core import AgentRunner, StepStatus, TaskStatus
from agent_core.errors import TaskNotActiveError, UserError
from agent_core.llms import ScriptedLLM
from agent_core.store import InMemoryStore, SQLiteStore
from agent_core.store.base import Store
from agent_core.trace import MAX_TRACE_BYTES, TRACE_FORMAT, export_trace, import_trace
from agent_core.types import TaskState
from agent_core.workers import ReActAgentWorker

from .conftest import action, answer

QUESTION = "What is (121 * 3) + 42?"
MULTIPLY = action("multiply", '{"a": 121, "b": 3}')
ADD = action("add", '{"a": 363, "b": 42}')
HOSTILE = "<img src=x onerror=alert(1)> </script>\u202e **bold** 🦙 \x00 \\u0041 ${x}"


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path) -> Store:
    return InMemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "trace.db")


def _run_with_undo(agent: AgentRunner, text: str = QUESTION) -> str:
    """A task with an undone step (an extra branch), a steered step and a last step."""
    task_id = agent.create_task(text).task_id
    agent.run_step(task_id)
    agent.undo_step(task_id)
    agent.run_step(task_id, input="Multiply first, please.")
    agent.run_until(task_id)
    return task_id


def _fresh_reader(tools, store: Store) -> AgentRunner:
    return AgentRunner(ReActAgentWorker.from_tools(tools, llm=ScriptedLLM([])), store=store)


def _view(state: TaskState) -> dict[str, Any]:
    """Everything a person sees of a task, with step ids replaced by their position."""
    position = {step_id: i for i, step_id in enumerate(state.steps)}

    def where(ids: list[str]) -> list[int]:
        return [position[i] for i in ids]

    steps = [
        {
            **step.model_dump(
                include={"kind", "status", "input", "proposed_input", "edited", "number"}
            ),
            "branch_id": step.branch_id,
            "prev": where(step.prev_step_ids),
            "next": where(step.next_step_ids),
            "depends_on": where(step.depends_on),
        }
        for step in state.steps.values()
    ]
    outputs = {
        position[step_id]: output.model_dump(
            mode="json", include={"output", "thought", "tool_calls", "usage", "is_last", "error"}
        )
        for step_id, output in state.outputs.items()
    }
    return {
        "input": state.task.input,
        "memory": state.task.memory.get_all(),
        "token_limit": state.task.memory.token_limit,
        "extra_state": state.task.extra_state,
        "usage": state.task.usage,
        "spec": state.task.spec,
        "steps": steps,
        "outputs": outputs,
        "queue": where(state.queue),
        "completed": where(state.completed),
        "snapshots": {
            position[k]: s.model_dump(exclude={"step_id"}) for k, s in state.snapshots.items()
        },
    }


def test_round_trip_gives_a_new_task_that_reads_exactly_like_the_original(make_agent, tools, store):
    agent, _ = make_agent([MULTIPLY, MULTIPLY, ADD, answer("405")], store=store)
    task_id = _run_with_undo(agent)
    original = agent.get_task_state(task_id)
    assert [s.status for s in original.steps.values()].count(StepStatus.UNDONE) == 1

    new_id = import_trace(export_trace(original), store)

    assert new_id != task_id
    reader = _fresh_reader(tools, store)
    imported = reader.get_task_state(new_id)
    assert _view(imported) == _view(original)
    assert imported.task.status is TaskStatus.ACTIVE  # As the original: not "abandoned".
    assert imported.task.imported
    assert {s.task_id for s in imported.steps.values()} == {new_id}
    assert not set(imported.steps) & set(original.steps)
    # What a person reads in the step list is the same, step by step.
    assert [o.output for o in reader.get_completed_steps(new_id)] == [
        o.output for o in agent.get_completed_steps(task_id)
    ]
    assert reader.get_task_output(new_id).output == "405"


def test_the_original_task_is_untouched_and_two_imports_make_two_tasks(make_agent, tools, store):
    agent, _ = make_agent([MULTIPLY, MULTIPLY, ADD, answer("405")], store=store)
    task_id = _run_with_undo(agent)
    trace = export_trace(agent.get_task_state(task_id))
    before = _view(agent.get_task_state(task_id))

    first, second = import_trace(trace, store), import_trace(trace, store)

    assert len({task_id, first, second}) == 3
    assert {t.task_id for t in store.list_tasks()} == {task_id, first, second}
    reader = _fresh_reader(tools, store)
    assert _view(reader.get_task_state(task_id)) == before
    assert _view(reader.get_task_state(first)) == _view(reader.get_task_state(second)) == before
    reader.delete_task(first)
    assert _view(reader.get_task_state(second)) == before


def test_import_into_another_store_kind(make_agent, tools, tmp_path):
    agent, _ = make_agent([MULTIPLY, MULTIPLY, ADD, answer("405")], store=InMemoryStore())
    task_id = _run_with_undo(agent)
    original = agent.get_task_state(task_id)
    target = SQLiteStore(tmp_path / "other.db")

    new_id = import_trace(export_trace(original).encode(), target)

    assert _view(
        _fresh_reader(tools, SQLiteStore(tmp_path / "other.db")).get_task_state(new_id)
    ) == (_view(original))


def test_an_imported_task_is_read_only_but_a_finished_one_stays_completed(make_agent, tools):
    agent, _ = make_agent([MULTIPLY, ADD, answer("405")])
    running = agent.create_task(QUESTION).task_id
    agent.run_step(running)
    finished = agent.create_task(QUESTION).task_id
    agent.run_until(finished)
    agent.finalize_response(finished)
    store = InMemoryStore()

    imported_running = import_trace(export_trace(agent.get_task_state(running)), store)
    imported_finished = import_trace(export_trace(agent.get_task_state(finished)), store)

    reader = _fresh_reader(tools, store)
    assert reader.get_task(imported_running).imported
    assert reader.get_task(imported_running).status is TaskStatus.ACTIVE  # Not "abandoned".
    assert {t.task_id for t in reader.list_tasks() if t.imported} == {
        imported_running,
        imported_finished,
    }
    queued = reader.get_upcoming_steps(imported_running)[0].step_id
    for refused in (
        lambda: reader.skip_step(imported_running, queued),
        lambda: reader.edit_step(imported_running, queued, "x"),
        lambda: reader.add_feedback(imported_running, "x"),
        lambda: reader.abandon_task(imported_running),
    ):
        with pytest.raises(TaskNotActiveError, match="imported copy, read only"):
            refused()
    assert reader.get_task(imported_finished).status is TaskStatus.COMPLETED
    assert reader.get_upcoming_steps(imported_running)  # Queued steps stay visible...
    with pytest.raises(TaskNotActiveError):
        reader.run_step(imported_running)  # ...but never run.
    with pytest.raises(TaskNotActiveError):
        reader.undo_step(imported_running)
    with pytest.raises(TaskNotActiveError):
        reader.undo_step(imported_finished)
    assert reader.finalize_response(imported_finished).response == "405"


def test_hostile_text_round_trips_unchanged_and_the_file_is_ascii(tools, store):
    llm = ScriptedLLM([action("multiply", '{"a": 2, "b": 3}', thought=HOSTILE), answer(HOSTILE)])
    agent = AgentRunner(ReActAgentWorker.from_tools(tools, llm=llm), store=store)
    task_id = agent.create_task(HOSTILE).task_id
    agent.run_step(task_id)
    agent.add_feedback(task_id, HOSTILE)
    agent.run_until(task_id)

    trace = export_trace(agent.get_task_state(task_id))
    new_id = import_trace(trace, store)

    assert trace.isascii()
    imported = _fresh_reader(tools, store).get_task_state(new_id)
    assert imported.task.input == HOSTILE
    assert _view(imported) == _view(agent.get_task_state(task_id))
    assert sum(HOSTILE in m.content for m in imported.task.memory.get_all()) >= 3


def test_export_document_has_the_format_header_and_worker_state(make_agent):
    agent, _ = make_agent()
    task = agent.create_task(QUESTION, extra_state={"notes": ["a", 1, None]})

    document = json.loads(export_trace(agent.get_task_state(task.task_id)))

    assert document["format"] == TRACE_FORMAT
    assert document["version"] == 1
    assert document["exported_at"].startswith("20")
    assert document["task"]["task"]["task_id"] == task.task_id
    assert document["task"]["task"]["extra_state"] == {"notes": ["a", 1, None]}
    assert document["task"]["task"]["memory"]["messages"] == []


def test_worker_state_is_restored_from_the_trace(make_agent, tools, store):
    agent, _ = make_agent(store=store)
    task = agent.create_task(QUESTION, extra_state={"notes": {"k": [1, 2]}})

    new_id = import_trace(export_trace(agent.get_task_state(task.task_id)), store)

    assert _fresh_reader(tools, store).get_task(new_id).extra_state == {"notes": {"k": [1, 2]}}


def test_as_new_false_keeps_the_id_but_refuses_a_task_the_store_has(make_agent, tools, tmp_path):
    agent, _ = make_agent(store=SQLiteStore(tmp_path / "a.db"))
    task_id = agent.create_task(QUESTION).task_id
    trace = export_trace(agent.get_task_state(task_id))

    with pytest.raises(UserError, match="already has task"):
        import_trace(trace, agent.store, as_new=False)
    restored = SQLiteStore(tmp_path / "b.db")
    assert import_trace(trace, restored, as_new=False) == task_id
    assert _fresh_reader(tools, restored).get_task(task_id).input == QUESTION


# ------------------------------------------------------------------------- bad input


@pytest.fixture
def trace(make_agent) -> dict[str, Any]:
    agent, _ = make_agent([MULTIPLY, MULTIPLY, ADD, answer("405")])
    return json.loads(export_trace(agent.get_task_state(_run_with_undo(agent))))


def _edited(trace: dict[str, Any], edit) -> str:
    edit(trace)
    return json.dumps(trace)


def _first_step_id(trace: dict[str, Any]) -> str:
    return next(iter(trace["task"]["steps"]))


@pytest.mark.parametrize(
    ("make_text", "message"),
    [
        (lambda t: json.dumps(t)[:-40], "not valid JSON .* line"),
        (lambda t: "", "not valid JSON"),
        (lambda t: "[1, 2]", "not a Stepwise trace"),
        (lambda t: _edited(t, lambda d: d.update(format="langsmith")), "'langsmith'"),
        (lambda t: _edited(t, lambda d: d.update(version=2)), "version 2.*upgrade Stepwise"),
        (lambda t: _edited(t, lambda d: d.update(version="1")), "version is '1'"),
        (lambda t: _edited(t, lambda d: d.pop("task")), "holds no task"),
        (
            lambda t: _edited(
                t, lambda d: d["task"]["steps"][_first_step_id(d)].update(status="exploded")
            ),
            r"task\.steps\.[0-9a-f]{32}\.status: Input should be",
        ),
        (
            lambda t: _edited(t, lambda d: d["task"]["task"].pop("input")),
            r"task\.task\.input: Field required",
        ),
        (
            lambda t: _edited(t, lambda d: d["task"]["task"].update(spec={"provider": "skynet"})),
            r"task\.task\.spec\.provider",
        ),
        (
            lambda t: _edited(t, lambda d: d["task"]["queue"].append("f" * 32)),
            "inconsistent .*queue name step 'ffff",
        ),
        (
            lambda t: _edited(t, lambda d: d["task"]["task"]["extra_state"].update(x=1)).replace(
                '"x": 1', '"x": NaN'
            ),
            "NaN is not a JSON value",
        ),
        (lambda t: "[" * 100_000 + "]" * 100_000, "not a JSON trace"),
    ],
    ids=[
        "cut-short",
        "empty",
        "json-list",
        "other-format",
        "newer-version",
        "version-as-text",
        "no-task",
        "bad-step-status",
        "missing-field",
        "unknown-provider",
        "dangling-queue-id",
        "nan",
        "deeply-nested",
    ],
)
def test_a_bad_trace_is_refused_with_a_message_that_says_why(trace, make_text, message):
    store = InMemoryStore()
    with pytest.raises(UserError, match=message):
        import_trace(make_text(trace), store)
    assert store.list_tasks() == []


def test_a_trace_over_the_size_limit_is_refused_before_it_is_parsed():
    with pytest.raises(UserError, match="traces over 50 MB are refused"):
        import_trace(b" " * (MAX_TRACE_BYTES + 1), InMemoryStore())


def test_a_file_that_is_not_utf8_is_refused():
    with pytest.raises(UserError, match="not UTF-8"):
        import_trace(b'{"format": "\xff"}', InMemoryStore())


def test_validation_messages_do_not_echo_the_bad_values(trace):
    secretish = "<script>" + "x" * 500
    bad = _edited(trace, lambda d: d["task"]["task"].update(status=secretish))
    with pytest.raises(UserError) as caught:
        import_trace(bad, InMemoryStore())
    assert "<script>" not in str(caught.value)
    assert len(str(caught.value)) < 600


def test_a_trace_does_not_say_which_host_and_process_ran_a_step(tools):
    llm = ScriptedLLM([action("multiply", '{"a": 2, "b": 3}')])
    agent = AgentRunner(ReActAgentWorker.from_tools(tools, llm=llm))
    task_id = agent.create_task("2 * 3?").task_id
    state = agent.get_task_state(task_id)
    next(iter(state.steps.values())).claimed_by = "myhost:4242:abcd"  # As if it were running.
    assert "myhost" not in export_trace(state)


@pytest.mark.parametrize("task_id", ["../../etc", "", "conversation:x", "A" * 32])
def test_as_new_false_refuses_a_task_id_stepwise_does_not_make(make_agent, task_id):
    agent, _ = make_agent()
    trace = json.loads(export_trace(agent.get_task_state(agent.create_task(QUESTION).task_id)))
    trace["task"]["task"]["task_id"] = task_id

    with pytest.raises(UserError, match="not one Stepwise makes"):
        import_trace(json.dumps(trace), InMemoryStore(), as_new=False)


def test_a_trace_whose_version_is_true_is_refused(make_agent):
    agent, _ = make_agent()
    trace = json.loads(export_trace(agent.get_task_state(agent.create_task(QUESTION).task_id)))
    trace["version"] = True

    with pytest.raises(UserError, match="version"):
        import_trace(json.dumps(trace), InMemoryStore())


def _nested(depth: int) -> Any:
    value: Any = "core"
    for _ in range(depth):
        value = {"k": value}
    return value


def test_a_trace_nested_deeper_than_a_task_can_load_is_refused_before_storing(make_agent):
    """A step input 230 deep was stored, then the task could not be loaded (issue 23, item 4)."""
    agent, _ = make_agent()
    task_id = agent.create_task(QUESTION).task_id
    document = json.loads(export_trace(agent.get_task_state(task_id)))
    (step,) = document["task"]["steps"].values()
    store = SQLiteStore(":memory:")

    step["input"] = _nested(230)
    with pytest.raises(UserError, match="nests more than 150 levels"):
        import_trace(json.dumps(document), store)
    assert store.list_tasks() == []

    step["input"] = _nested(60)  # As deep as a step input may be: imported, and it loads.
    imported = import_trace(json.dumps(document), store)
    loaded = store.load_task(imported)
    assert loaded is not None and len(loaded.steps) == 1
