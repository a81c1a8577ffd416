"""A task's workspace files as a person sees them: listed with the step that wrote each,
previewed, zipped and deleted, never through a symbolic link."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from agent_core import ParallelAgentRunner
from agent_core.errors import UserError
from agent_core.llms import ScriptedLLM
from agent_core.spec import AgentSpec
from agent_core.task_files import (
    delete_workspace,
    list_files,
    read_preview,
    workspace_folder,
    zip_bytes,
)
from agent_core.types import Task, TaskState

from .conftest import action, answer


def _write(path: str, content: str) -> str:
    return action("write_file", json.dumps({"path": path, "content": content}))


def _python(code: str) -> str:
    return action("run_python", json.dumps({"code": code}))


def _run(
    tmp_path: Path, replies: list[str], *, tools=("files",)
) -> tuple[ParallelAgentRunner, TaskState]:
    spec = AgentSpec(tools=tools, workspace=str(tmp_path / "workspaces"))
    runner = spec.build_runner()
    runner.agent_worker.llm = ScriptedLLM(replies)  # type: ignore[attr-defined]
    task = runner.create_task("Write some files.")
    for _ in replies:
        runner.run_step(task.task_id)
    return runner, runner.get_task_state(task.task_id)


def _task(tmp_path: Path, task_id: str = "t1", **spec) -> Task:
    return Task(task_id=task_id, input="x", spec={"workspace": str(tmp_path / "ws"), **spec})


def _folder(task: Task) -> Path:
    folder = workspace_folder(task)
    assert folder is not None
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_the_folder_is_the_spec_workspace_and_the_task_id(tmp_path, monkeypatch):
    task = _task(tmp_path, "abc")
    assert workspace_folder(task) == (tmp_path / "ws" / "abc").resolve()
    monkeypatch.setenv("STEPWISE_WORKSPACES", str(tmp_path / "env"))
    no_folder = Task(task_id="abc", input="x", spec={"worker": "react"})  # An older spec.
    assert workspace_folder(no_folder) == (tmp_path / "env" / "abc").resolve()
    assert workspace_folder(Task(task_id="abc", input="x", spec=None)) is None
    assert workspace_folder(Task(task_id="../up", input="x", spec={})) is None


def test_files_are_listed_with_the_step_that_last_wrote_each(tmp_path):
    replies = [
        _write("notes/a.txt", "one"),
        _write("b.txt", "two"),
        _write("notes/a.txt", "three!"),
        answer("done"),
    ]
    runner, state = _run(tmp_path, replies)
    files = {f.path: f for f in list_files(state)}
    assert {path: (f.size, f.step_number) for path, f in files.items()} == {
        "b.txt": (3, 2),
        "notes/a.txt": (6, 3),
    }
    assert files["b.txt"].modified.tzinfo is not None

    runner.undo_step(state.task_id)  # The answer.
    runner.undo_step(state.task_id)  # The rewrite of a.txt.
    state = runner.get_task_state(state.task_id)
    files = {f.path: f for f in list_files(state)}
    assert (files["notes/a.txt"].size, files["notes/a.txt"].step_number) == (3, 1)


def test_a_file_written_by_run_python_is_credited_to_the_step_that_ran_it(tmp_path):
    code = "open('made.txt', 'w').write('by python')"
    _, state = _run(tmp_path, [_write("a.txt", "x"), _python(code)], tools=("files", "python"))
    by_path = {f.path: f.step_number for f in list_files(state)}
    assert by_path["a.txt"] == 1
    assert by_path["made.txt"] == 2


def test_a_file_nobody_journaled_has_no_step(tmp_path):
    _, state = _run(tmp_path, [_write("a.txt", "x")])
    folder = workspace_folder(state.task)
    assert folder is not None
    (folder / "dropped-in.txt").write_text("by hand")
    by_path = {f.path: f.step_number for f in list_files(state)}
    assert by_path == {"a.txt": 1, "dropped-in.txt": None}


def test_no_folder_and_no_spec_list_nothing(tmp_path):
    assert list_files(TaskState(task=_task(tmp_path))) == []
    assert list_files(TaskState(task=Task(input="x", spec=None))) == []


def test_links_are_neither_listed_nor_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    task = _task(tmp_path)
    folder = _folder(task)
    (folder / "real.txt").write_text("real")
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    (folder / "linked-dir").symlink_to(outside, target_is_directory=True)
    assert [f.path for f in list_files(TaskState(task=task))] == ["real.txt"]


def test_a_preview_is_the_first_bytes_and_the_size(tmp_path):
    task = _task(tmp_path)
    folder = _folder(task)
    (folder / "sub").mkdir()
    (folder / "sub" / "long.txt").write_text("0123456789")
    preview = read_preview(task, "sub/long.txt", 4)
    assert (preview.path, preview.data, preview.size, preview.truncated) == (
        "sub/long.txt",
        b"0123",
        10,
        True,
    )
    assert not read_preview(task, "./sub/long.txt", 100).truncated


@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "/etc/passwd", "sub/../../x", "", "link.txt", "linked/x"]
)
def test_a_preview_refuses_paths_out_of_the_folder_and_through_links(tmp_path, path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (outside / "x").write_text("secret")
    task = _task(tmp_path)
    folder = _folder(task)
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    (folder / "linked").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UserError):
        read_preview(task, path, 100)


def test_a_preview_refuses_a_folder_a_missing_file_and_a_linked_workspace(tmp_path):
    task = _task(tmp_path)
    folder = _folder(task)
    (folder / "sub").mkdir()
    with pytest.raises(UserError, match="not a regular file"):
        read_preview(task, "sub", 100)
    with pytest.raises(UserError, match="no such file"):
        read_preview(task, "missing.txt", 100)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.txt").write_text("a")
    linked = _task(tmp_path, "linked")
    (tmp_path / "ws" / "linked").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UserError, match="symbolic link"):
        read_preview(linked, "a.txt", 100)


def test_the_zip_holds_every_file_and_no_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    task = _task(tmp_path)
    folder = _folder(task)
    (folder / "a.txt").write_text("a")
    (folder / "deep" / "er").mkdir(parents=True)
    (folder / "deep" / "er" / "b.bin").write_bytes(b"\x00\x01")
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    (folder / "linked").symlink_to(outside, target_is_directory=True)
    archive = zipfile.ZipFile(io.BytesIO(zip_bytes(task)))
    assert sorted(archive.namelist()) == ["a.txt", "deep/er/b.bin"]
    assert archive.read("deep/er/b.bin") == b"\x00\x01"


def test_an_empty_workspace_zips_to_an_empty_archive(tmp_path):
    assert zipfile.ZipFile(io.BytesIO(zip_bytes(_task(tmp_path)))).namelist() == []


def test_delete_removes_the_folder_but_never_what_its_links_point_to(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    task = _task(tmp_path)
    folder = _folder(task)
    (folder / "sub").mkdir()
    (folder / "sub" / "a.txt").write_text("a")
    (folder / "linked").symlink_to(outside, target_is_directory=True)
    (folder / "link.txt").symlink_to(outside / "keep.txt")
    sibling = _folder(_task(tmp_path, "t2"))
    assert delete_workspace(task) is True
    assert not folder.exists()
    assert (outside / "keep.txt").read_text() == "keep"
    assert sibling.is_dir()  # Other tasks' folders stay.
    assert delete_workspace(task) is False  # Nothing left to delete.


def test_delete_of_a_linked_workspace_removes_the_link_only(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep")
    task = _task(tmp_path, "linked")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "linked").symlink_to(elsewhere, target_is_directory=True)
    assert delete_workspace(task) is True
    assert not (tmp_path / "ws" / "linked").is_symlink()
    assert (elsewhere / "keep.txt").read_text() == "keep"


def test_delete_refuses_a_task_id_that_is_not_a_folder_name(tmp_path):
    (tmp_path / "ws").mkdir()
    for task_id in ("..", "../ws", "a/b", ""):
        with pytest.raises(UserError, match="refused"):
            delete_workspace(Task(task_id=task_id, input="x", spec={"workspace": str(tmp_path)}))
    assert (tmp_path / "ws").is_dir()
    assert delete_workspace(Task(input="x", spec=None)) is False


def test_delete_task_deletes_its_workspace(tmp_path):
    """The runner's delete_task removes the task's files too (runtime contract item 8)."""
    runner, state = _run(tmp_path, [_write("a.txt", "x")])
    folder = workspace_folder(state.task)
    assert folder is not None and (folder / "a.txt").is_file()
    runner.delete_task(state.task_id)
    assert not folder.exists()
