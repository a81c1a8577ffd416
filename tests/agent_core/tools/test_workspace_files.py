"""Workspace folders and the file tools: confinement, clear errors, and writes that undo reverts."""

from __future__ import annotations

import json
import os

import pytest

from agent_core import AgentRunner
from agent_core.effects import step_context
from agent_core.errors import ToolError
from agent_core.llms import ScriptedLLM
from agent_core.tools.base import FunctionTool
from agent_core.tools.files import MAX_FILE_BYTES, MAX_LIST_ENTRIES, file_tools
from agent_core.tools.workspace import Workspace
from agent_core.workers import ReActAgentWorker


@pytest.fixture
def workspace(tmp_path):
    return Workspace(tmp_path / "workspaces")


@pytest.fixture
def tools(workspace) -> dict[str, FunctionTool]:
    return {tool.name: tool for tool in file_tools(workspace)}


@pytest.fixture
def outside(tmp_path):
    """A folder beside the workspaces, holding a file no tool may touch."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret")
    return folder


def _call(tool_name: str, **args: object) -> str:
    return f"Action: {tool_name}\nAction Input: {json.dumps(args)}"


def _agent(workspace: Workspace, replies: list[str]) -> tuple[AgentRunner, ScriptedLLM]:
    llm = ScriptedLLM(replies)
    return AgentRunner(ReActAgentWorker.from_tools(file_tools(workspace), llm=llm)), llm


# --- Workspace folders ---------------------------------------------------------------------


def test_outside_a_step_tools_use_the_default_folder(workspace):
    assert workspace.folder() == workspace.root / "default"
    assert workspace.folder().is_dir()


def test_a_step_uses_its_outermost_task_folder(workspace):
    with step_context("task-a", "s1"):
        assert workspace.folder() == workspace.root / "task-a"
        with step_context("sub-task", "s2"):  # a planner's sub-agent shares the folder
            assert workspace.folder() == workspace.root / "task-a"
    assert workspace.folder("task-b") == workspace.root / "task-b"


@pytest.mark.parametrize("workspace_id", ["../up", "a/b", ".hidden", "x" * 200])
def test_a_workspace_id_that_is_not_a_plain_name_is_refused(workspace, workspace_id):
    with pytest.raises(ToolError, match="cannot name a folder"):
        workspace.folder(workspace_id)


# --- Path checks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../x", "'..' part"),
        ("a/../../x", "'..' part"),
        ("notes/../../../etc/passwd", "'..' part"),
        ("..\\x", "'..' part"),
        ("/etc/passwd", "absolute"),
        ("\\etc\\passwd", "absolute"),
        ("", "empty"),
        ("   ", "empty"),
        ("a\x00b", "NUL byte"),
        ("x" * 2000, "2000 characters long"),
        ("a/" + "n" * 300, "over 255 bytes"),
        ("\ud800.txt", "not valid Unicode"),
    ],
)
def test_resolve_refuses_paths_that_could_leave_the_workspace(workspace, path, reason):
    with pytest.raises(ToolError, match=reason) as caught:
        workspace.resolve(path)
    assert "relative to the task's workspace, e.g. notes/haiku.txt" in str(caught.value)


def test_resolve_accepts_ordinary_relative_paths(workspace):
    folder = workspace.folder()
    assert workspace.resolve("notes/haiku.txt") == folder / "notes" / "haiku.txt"
    assert workspace.resolve("./a/./b.txt") == folder / "a" / "b.txt"
    assert workspace.resolve(".") == folder


def test_a_file_symlink_pointing_outside_is_refused(workspace, tools, outside):
    (workspace.folder() / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="outside the task's workspace through a symbolic link"):
        workspace.resolve("link.txt")


async def test_tools_cannot_read_or_write_through_a_symlink_out(workspace, tools, outside):
    folder = workspace.folder()
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    (folder / "linked_dir").symlink_to(outside, target_is_directory=True)

    read = await tools["read_file"].acall({"path": "link.txt"})
    assert read.is_error and "symbolic link" in read.content
    assert "top secret" not in read.content

    write = await tools["write_file"].acall({"path": "linked_dir/secret.txt", "content": "owned"})
    assert write.is_error and "symbolic link" in write.content
    new = await tools["write_file"].acall({"path": "linked_dir/new.txt", "content": "owned"})
    assert new.is_error
    assert (outside / "secret.txt").read_text() == "top secret"
    assert not (outside / "new.txt").exists()

    listing = await tools["list_files"].acall({"path": "linked_dir"})
    assert listing.content == "linked_dir (link)"  # Described, never entered.


async def test_a_symlink_is_never_followed_even_one_that_stays_inside(workspace, tools):
    # A link that points inside now may point outside a moment later: none is followed.
    folder = workspace.folder()
    (folder / "real.txt").write_text("inside")
    (folder / "alias.txt").symlink_to(folder / "real.txt")
    (folder / "alias_dir").symlink_to(folder, target_is_directory=True)
    read = await tools["read_file"].acall({"path": "alias.txt"})
    assert read.is_error and "symbolic link" in read.content
    write = await tools["write_file"].acall({"path": "alias_dir/real.txt", "content": "x"})
    assert write.is_error and "'alias_dir' is a symbolic link" in write.content
    assert (folder / "real.txt").read_text() == "inside"


async def test_a_symlink_loop_is_an_error_not_a_hang(workspace, tools):
    folder = workspace.folder()
    (folder / "a").symlink_to(folder / "b")
    (folder / "b").symlink_to(folder / "a")
    out = await tools["read_file"].acall({"path": "a"})
    assert out.is_error


# --- read_file / write_file ----------------------------------------------------------------


async def test_write_then_read_round_trips_and_creates_folders(workspace, tools):
    write = await tools["write_file"].acall(
        {"path": "notes/poems/haiku.txt", "content": "old pond\nfrog\r\n"}
    )
    assert write.content == "wrote 15 characters to notes/poems/haiku.txt"
    target = workspace.folder() / "notes" / "poems" / "haiku.txt"
    assert target.read_bytes() == b"old pond\nfrog\r\n"
    read = await tools["read_file"].acall({"path": "notes/poems/haiku.txt"})
    assert (read.content, read.is_error) == ("old pond\nfrog\r\n", False)


async def test_reading_what_is_not_a_text_file_says_what_to_do(workspace, tools):
    folder = workspace.folder()
    (folder / "dir").mkdir()
    (folder / "image.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    (folder / "nul.txt").write_bytes(b"abc\x00def")
    (folder / "big.txt").write_bytes(b"a" * (MAX_FILE_BYTES + 1))
    os.mkfifo(folder / "pipe")
    cases = {
        "missing.txt": "there is no file 'missing.txt' in the workspace; list_files",
        "dir": "'dir' is a folder, not a file; call list_files",
        "image.bin": "not UTF-8 text",
        "nul.txt": "not UTF-8 text",
        "big.txt": "over the 1,000,000-byte limit",
        "pipe": "not a regular file",
    }
    for path, message in cases.items():
        out = await tools["read_file"].acall({"path": path})
        assert out.is_error, path
        assert message in out.content, (path, out.content)


async def test_writing_too_much_or_onto_a_folder_is_refused(workspace, tools):
    (workspace.folder() / "dir").mkdir()
    big = await tools["write_file"].acall(
        {"path": "big.txt", "content": "a" * (MAX_FILE_BYTES + 1)}
    )
    assert big.is_error and "writes at most 1,000,000 bytes" in big.content
    assert not (workspace.folder() / "big.txt").exists()
    onto_dir = await tools["write_file"].acall({"path": "dir", "content": "x"})
    assert onto_dir.is_error and "is a folder" in onto_dir.content
    (workspace.folder() / "file").write_text("x")
    under_file = await tools["write_file"].acall({"path": "file/child.txt", "content": "x"})
    assert under_file.is_error and "cannot write 'file/child.txt'" in under_file.content


async def test_a_file_too_big_to_keep_for_undo_is_not_overwritten(workspace, tools):
    target = workspace.folder() / "huge.log"
    target.write_bytes(b"a" * (MAX_FILE_BYTES + 1))
    out = await tools["write_file"].acall({"path": "huge.log", "content": "small"})
    assert out.is_error and "too big to keep for undo" in out.content
    assert target.stat().st_size == MAX_FILE_BYTES + 1


def test_the_tools_describe_themselves_to_the_model(tools):
    specs = {name: tool.metadata.to_spec() for name, tool in tools.items()}
    assert specs["read_file"].parameters["required"] == ["path"]
    assert specs["write_file"].parameters["required"] == ["path", "content"]
    assert specs["list_files"].parameters["required"] == []
    assert specs["list_files"].parameters["properties"]["path"]["default"] == "."
    assert "notes/haiku.txt" in specs["read_file"].parameters["properties"]["path"]["description"]
    assert tools["write_file"].metadata.side_effects
    assert not tools["read_file"].metadata.side_effects


# --- list_files ----------------------------------------------------------------------------


async def test_list_files_lists_recursively_with_relative_paths_and_sizes(workspace, tools):
    folder = workspace.folder()
    (folder / "notes" / "deep").mkdir(parents=True)
    (folder / "notes" / "deep" / "b.txt").write_text("bb")
    (folder / "notes" / "a.txt").write_text("a")
    (folder / "top.txt").write_text("top!")
    (folder / "link").symlink_to(folder / "notes")
    out = await tools["list_files"].acall({})
    assert out.content.splitlines() == [
        "6 entries in the workspace:",
        "link (link)",
        "notes/",
        "notes/a.txt (1 bytes)",
        "notes/deep/",
        "notes/deep/b.txt (2 bytes)",
        "top.txt (4 bytes)",
    ]
    sub = await tools["list_files"].acall({"path": "notes/deep"})
    assert sub.content.splitlines() == ["1 entries in notes/deep/:", "notes/deep/b.txt (2 bytes)"]


async def test_list_files_on_empty_missing_or_a_file(workspace, tools):
    assert (await tools["list_files"].acall({})).content == "the workspace is empty"
    missing = await tools["list_files"].acall({"path": "nope"})
    assert missing.is_error and "there is no folder 'nope'" in missing.content
    (workspace.folder() / "f.txt").write_text("abc")
    assert (await tools["list_files"].acall({"path": "f.txt"})).content == "f.txt (3 bytes)"


async def test_list_files_caps_a_big_tree(workspace, tools):
    folder = workspace.folder()
    for i in range(MAX_LIST_ENTRIES + 20):
        (folder / f"f{i:04}.txt").touch()
    out = await tools["list_files"].acall({})
    lines = out.content.splitlines()
    assert lines[0].startswith(f"the first {MAX_LIST_ENTRIES} entries in the workspace")
    assert len(lines) == MAX_LIST_ENTRIES + 1


# --- In a real agent run: per-task folders, and undo -------------------------------------


def test_undo_removes_a_file_the_step_created(workspace):
    agent, llm = _agent(workspace, [_call("write_file", path="notes/haiku.txt", content="pond")])
    task = agent.create_task("write a haiku")
    out = agent.run_step(task.task_id)
    target = workspace.folder(task.task_id) / "notes" / "haiku.txt"
    assert target.read_text() == "pond"
    assert [effect.kind for effect in out.effects] == ["file_write"]
    assert out.tool_calls[0].content == "wrote 4 characters to notes/haiku.txt"

    agent.undo_step(task.task_id)
    assert not target.exists()
    assert agent.get_task_state(task.task_id).steps[out.task_step.step_id].undo_warnings == []
    assert llm.remaining == 0


def test_undo_puts_back_the_content_a_step_overwrote(workspace):
    replies = [
        _call("write_file", path="poem.txt", content="first draft"),
        _call("write_file", path="poem.txt", content="second draft"),
    ]
    agent, _ = _agent(workspace, replies)
    task = agent.create_task("write and revise")
    agent.run_step(task.task_id)
    agent.run_step(task.task_id)
    target = workspace.folder(task.task_id) / "poem.txt"
    assert target.read_text() == "second draft"
    agent.undo_step(task.task_id)
    assert target.read_text() == "first draft"
    agent.undo_step(task.task_id)
    assert not target.exists()


def test_two_tasks_write_the_same_path_into_different_folders(workspace):
    agent, _ = _agent(
        workspace,
        [
            _call("write_file", path="out.txt", content="from A"),
            _call("write_file", path="out.txt", content="from B"),
            _call("read_file", path="out.txt"),
        ],
    )
    task_a = agent.create_task("A")
    task_b = agent.create_task("B")
    agent.run_step(task_a.task_id)
    agent.run_step(task_b.task_id)
    assert (workspace.root / task_a.task_id / "out.txt").read_text() == "from A"
    assert (workspace.root / task_b.task_id / "out.txt").read_text() == "from B"
    read = agent.run_step(task_a.task_id)
    assert read.tool_calls[0].content == "from A"


def test_a_refused_write_leaves_nothing_for_undo_to_warn_about(workspace):
    agent, _ = _agent(workspace, [_call("write_file", path="../outside.txt", content="x")])
    task = agent.create_task("write outside")
    out = agent.run_step(task.task_id)
    assert out.tool_calls[0].is_error  # Refused: nothing was written...

    agent.undo_step(task.task_id)
    step = agent.get_task_state(task.task_id).steps[out.task_step.step_id]
    assert step.undo_warnings == []  # ...so undo has nothing it could not revert.
