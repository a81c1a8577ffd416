"""Links and races against the workspace: nothing outside it is read, written or restored.

Each attack needs something running beside the tools to plant a link (the Python sandbox, a
parallel step, another process); here a test or a thread plays that part. Every file
operation goes through directory descriptors with O_NOFOLLOW at each level, so a link
swapped in at any moment is refused, never followed.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from agent_core import AgentRunner
from agent_core.effects import FileWriteEffect
from agent_core.llms import FunctionLLM, ScriptedLLM
from agent_core.store import SQLiteStore
from agent_core.tools.files import file_tools
from agent_core.tools.image import image_tool
from agent_core.tools.workspace import Workspace
from agent_core.workers import ReActAgentWorker

SECRET = "top secret"
DRAWING = '<svg xmlns="http://www.w3.org/2000/svg"><circle r="4" fill="red"/></svg>'


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "workspaces")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET)
    return folder


def _call(tool: str, **args: object) -> str:
    return f"Action: {tool}\nAction Input: {json.dumps(args)}"


def _agent(workspace: Workspace, replies: list[str], db: Path) -> AgentRunner:
    worker = ReActAgentWorker.from_tools(file_tools(workspace), llm=ScriptedLLM(replies))
    return AgentRunner(worker, store=SQLiteStore(db / "stepwise.db"))


def _fresh(workspace: Workspace, db: Path) -> AgentRunner:
    """Another runner on the same file: undo works from what was stored."""
    return _agent(workspace, [], db)


def _untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == SECRET


def _tools(workspace: Workspace) -> dict:
    return {tool.name: tool for tool in file_tools(workspace)}


async def test_a_hard_link_to_an_outside_file_is_neither_read_nor_written(workspace, outside):
    folder = workspace.folder()
    os.link(outside / "secret.txt", folder / "notes.txt")
    tools = _tools(workspace)

    read = await tools["read_file"].acall({"path": "notes.txt"})
    write = await tools["write_file"].acall({"path": "notes.txt", "content": "owned"})

    assert read.is_error and "hard links" in read.content and SECRET not in read.content
    assert write.is_error and "hard links" in write.content
    _untouched(outside)


def test_undo_does_not_restore_through_a_link_swapped_in_since(workspace, outside, tmp_path):
    agent = _agent(workspace, [_call("write_file", path="notes.txt", content="after")], tmp_path)
    task_id = agent.create_task("write").task_id
    folder = workspace.folder(task_id)
    (folder / "notes.txt").write_text("before")
    agent.run_step(task_id)
    assert (folder / "notes.txt").read_text() == "after"

    (folder / "notes.txt").unlink()  # The sandbox swaps the file for a link out.
    (folder / "notes.txt").symlink_to(outside / "secret.txt")
    fresh = _fresh(workspace, tmp_path)
    fresh.undo_step(task_id)

    _untouched(outside)
    [undone] = [s for s in fresh.get_task_state(task_id).steps.values() if s.undo_warnings]
    assert "could not restore" in undone.undo_warnings[0]


def test_undo_does_not_restore_through_a_parent_folder_swapped_for_a_link(
    workspace, outside, tmp_path
):
    agent = _agent(workspace, [_call("write_file", path="sub/secret.txt", content="new")], tmp_path)
    task_id = agent.create_task("write").task_id
    agent.run_step(task_id)
    folder = workspace.folder(task_id)
    (folder / "sub" / "secret.txt").unlink()
    (folder / "sub").rmdir()
    (folder / "sub").symlink_to(outside, target_is_directory=True)

    # Undo removes the file the step created: not the outside one of the same name.
    _fresh(workspace, tmp_path).undo_step(task_id)

    _untouched(outside)


def test_the_undo_snapshot_is_not_read_through_a_link(outside, tmp_path):
    link = tmp_path / "link.txt"
    link.symlink_to(outside / "secret.txt")
    with pytest.raises(OSError, match="symbolic link"):
        FileWriteEffect.before_writing(link)


async def test_a_parent_folder_swapped_for_a_link_during_writes_sends_nothing_outside(
    workspace, outside
):
    folder = workspace.folder()
    (folder / "sub").mkdir()
    stop = threading.Event()

    def swap() -> None:  # Folder, link out, folder, ... as fast as it can.
        while not stop.is_set():
            shutil.rmtree(folder / "sub", ignore_errors=True)
            try:
                (folder / "sub").symlink_to(outside, target_is_directory=True)
                (folder / "sub").unlink()
                (folder / "sub").mkdir()
            except OSError:
                continue

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    write_file = _tools(workspace)["write_file"]
    outcomes = {"written": 0, "refused": 0}
    try:
        for n in range(300):
            out = await write_file.acall({"path": f"sub/file{n}.txt", "content": "owned"})
            outcomes["refused" if out.is_error else "written"] += 1
    finally:
        stop.set()
        swapper.join()

    assert sum(outcomes.values()) == 300
    _untouched(outside)


async def test_the_image_tool_checks_the_folder_again_when_it_writes(workspace, outside):
    folder = workspace.folder()
    (folder / "pics").mkdir()

    def draw(messages, tools) -> str:  # While the model draws, the folder becomes a link.
        (folder / "pics").rmdir()
        (folder / "pics").symlink_to(outside, target_is_directory=True)
        return DRAWING

    tool = image_tool(workspace, llm=FunctionLLM(draw))
    out = await tool.acall({"description": "a dot", "path": "pics/dot.svg"})

    assert out.is_error and "symbolic link" in out.content
    _untouched(outside)
