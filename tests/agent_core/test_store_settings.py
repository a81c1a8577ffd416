"""A store's settings: small JSON values by name, beside the tasks, kept like them."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.store import InMemoryStore, SettingsStore, SQLiteStore, Store
from agent_core.store.sqlite import _LAYOUT_VERSION
from agent_core.workers import ReActAgentWorker

SPEC = {"provider": "openai", "model": "qwen2.5", "base_url": "http://gpu-box:8000/v1"}


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SettingsStore]:
    opened = SQLiteStore(tmp_path / "x.db") if request.param == "sqlite" else InMemoryStore()
    yield opened
    opened.close()


def test_both_stores_keep_tasks_and_settings(store: SettingsStore) -> None:
    assert isinstance(store, SettingsStore) and isinstance(store, Store)


class _TasksOnly:
    """A user's own task store: it need not keep an app's settings."""

    def commit(self, change): ...
    def load_task(self, task_id): ...
    def task_version(self, task_id): ...
    def load_messages_sent(self, task_id, step_id): ...
    def list_tasks(self): ...
    def delete_task(self, task_id): ...
    def load_conversation(self, conversation_id):
        return []

    def write_conversation(self, conversation_id, write): ...
    def add_commit_listener(self, listener): ...
    def close(self): ...


def test_a_task_store_need_not_keep_settings() -> None:
    assert isinstance(_TasksOnly(), Store) and not isinstance(_TasksOnly(), SettingsStore)
    AgentRunner(ReActAgentWorker([], ScriptedLLM([])), store=_TasksOnly())


@pytest.mark.parametrize(
    "value", [SPEC, {"gpt-4o-mini": [0.2, 0.6]}, ["a", 1, 2.5, True, None], "text", 0, False]
)
def test_a_setting_round_trips_as_json(store: SettingsStore, value: Any) -> None:
    store.put_setting("name", value)
    assert store.get_setting("name") == value


def test_a_missing_setting_is_none_and_none_removes_one(store: SettingsStore) -> None:
    assert store.get_setting("nothing here") is None
    store.put_setting("spec", SPEC)
    store.put_setting("spec", None)
    assert store.get_setting("spec") is None
    store.put_setting("spec", None)  # Removing what is not there is fine.


def test_a_setting_is_replaced_and_others_are_left_alone(store: SettingsStore) -> None:
    store.put_setting("spec", SPEC)
    store.put_setting("prices", {"m": [1.0, 2.0]})
    store.put_setting("spec", {"provider": "demo"})
    assert store.get_setting("spec") == {"provider": "demo"}
    assert store.get_setting("prices") == {"m": [1.0, 2.0]}


def test_a_read_setting_is_a_copy(store: SettingsStore) -> None:
    store.put_setting("spec", SPEC)
    got = store.get_setting("spec")
    assert isinstance(got, dict)
    got["model"] = "changed"
    assert store.get_setting("spec") == SPEC


@pytest.mark.parametrize("value", [{"price": math.nan}, {"price": math.inf}, {1, 2}, object()])
def test_a_value_that_is_not_plain_json_is_refused_and_nothing_is_saved(
    store: SettingsStore, value: Any
) -> None:
    store.put_setting("spec", SPEC)
    with pytest.raises(TypeError, match="must be plain JSON data"):
        store.put_setting("spec", value)
    assert store.get_setting("spec") == SPEC


def test_settings_outlive_the_process(tmp_path: Path) -> None:
    first = SQLiteStore(tmp_path / "x.db")
    first.put_setting("spec", SPEC)
    first.close()
    again = SQLiteStore(tmp_path / "x.db")
    assert again.get_setting("spec") == SPEC
    again.close()


def test_a_file_from_before_settings_opens_keeps_its_tasks_and_gains_settings(
    tmp_path: Path,
) -> None:
    path = tmp_path / "layout1.db"
    runner = AgentRunner(ReActAgentWorker([], ScriptedLLM(["Answer: 3"])), store=SQLiteStore(path))
    task_id = runner.create_task("What is 1 + 2?").task_id
    runner.run_step(task_id)
    runner.store.close()
    with sqlite3.connect(path) as db:  # What the layout before settings wrote.
        db.execute("DROP TABLE settings")
        db.execute("PRAGMA user_version = 1")

    store = SQLiteStore(path)

    assert store._db.execute("PRAGMA user_version").fetchone() == (_LAYOUT_VERSION,)
    assert [t.task_id for t in store.list_tasks()] == [task_id]
    loaded = store.load_task(task_id)
    assert loaded is not None and len(loaded.completed) == 1
    assert store.get_setting("spec") is None
    store.put_setting("spec", SPEC)
    assert store.get_setting("spec") == SPEC
    store.close()


def test_deleting_a_task_leaves_the_settings(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "x.db")
    runner = AgentRunner(ReActAgentWorker([], ScriptedLLM([])), store=store)
    task_id = runner.create_task("Say hi.").task_id
    store.put_setting("spec", SPEC)
    assert store.delete_task(task_id)
    assert store.get_setting("spec") == SPEC
    store.close()
