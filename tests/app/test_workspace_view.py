"""The workspace panel: files with their size and writer, previews that never run what a model
wrote (SVG as an image, HTML as source), and downloads one by one or as a zip."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from agent_core.llms import ScriptedLLM
from agent_core.spec import AgentSpec
from agent_core.types import Task, TaskState

from .conftest import TIMEOUT

HOSTILE_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script>'
    '<rect width="10" height="10" fill="red"/></svg>'
)
HOSTILE_HTML = "<!doctype html><script>alert(1)</script><h1>Hi</h1>"


def _script(state_json: str) -> None:
    from agent_core.types import TaskState
    from stepwise.app.components.workspace_view import render_workspace

    render_workspace(TaskState.model_validate_json(state_json))


def _app(task_state: TaskState) -> AppTest:
    app = AppTest.from_function(
        _script, args=(task_state.model_dump_json(),), default_timeout=TIMEOUT
    )
    app.run()
    assert not app.exception
    return app


def _task_with(tmp_path: Path, files: dict[str, bytes | str]) -> TaskState:
    task = Task(task_id="t1", input="x", spec={"workspace": str(tmp_path / "ws")})
    folder = tmp_path / "ws" / "t1"
    folder.mkdir(parents=True)
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content)
        else:
            path.write_bytes(content)
    return TaskState(task=task)


def _preview(app: AppTest, path: str) -> AppTest:
    app.selectbox(key="ws-preview-t1").select(path).run()
    assert not app.exception
    return app


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), "blue").save(buffer, format="PNG")
    return buffer.getvalue()


def test_files_show_their_size_and_the_step_that_wrote_them(tmp_path: Path):
    spec = AgentSpec(tools=("files",), workspace=str(tmp_path / "ws"))
    runner = spec.build_runner()
    write = 'Thought: t\nAction: write_file\nAction Input: {"path": "%s", "content": "%s"}'
    runner.agent_worker.llm = ScriptedLLM(  # type: ignore[attr-defined]
        [write % ("notes/plan.md", "# plan"), write % ("b.txt", "0123456789" * 150)]
    )
    task = runner.create_task("Write two files.")
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)
    app = _app(runner.get_task_state(task.task_id))
    texts = [t.value for t in app.text]
    assert texts[:3] == ["b.txt", "1.5 kB", "step 2"]
    assert texts[3:] == ["notes/plan.md", "6 B", "step 1"]
    assert str(tmp_path / "ws" / task.task_id) in [c.value for c in app.code]


def test_an_empty_workspace_says_so_in_one_line_and_shows_its_path(tmp_path: Path):
    task = Task(task_id="t1", input="x", spec={"workspace": str(tmp_path / "ws")})
    app = _app(TaskState(task=task))
    assert [c.value for c in app.caption] == [
        "No files yet: the files the agent's tools write appear here."
    ]
    assert [c.value for c in app.code] == [str((tmp_path / "ws" / "t1").resolve())]
    assert not app.get("download_button") and not app.selectbox


def test_a_task_without_a_spec_has_no_workspace(tmp_path: Path):
    app = _app(TaskState(task=Task(task_id="t1", input="x", spec=None)))
    assert "no files" in app.caption[0].value
    assert not app.code


def test_an_svg_is_shown_as_an_image_and_as_source_never_as_markup(tmp_path: Path):
    app = _preview(_app(_task_with(tmp_path, {"a.svg": HOSTILE_SVG, "b.txt": "b"})), "a.svg")
    (image,) = app.image
    (url,) = image.value
    prefix = "data:image/svg+xml;base64,"
    assert url.startswith(prefix)
    assert base64.b64decode(url.removeprefix(prefix)).decode() == HOSTILE_SVG
    assert (app.code[-1].value, app.code[-1].language) == (HOSTILE_SVG, "xml")
    assert not app.markdown and not app.get("html") and not app.get("iframe")


def test_html_is_shown_as_source_never_rendered(tmp_path: Path):
    app = _preview(
        _app(_task_with(tmp_path, {"index.html": HOSTILE_HTML, "a.txt": "a"})), "index.html"
    )
    assert (app.code[-1].value, app.code[-1].language) == (HOSTILE_HTML, "html")
    # Never in the page itself: the preview is a sandboxed frame (test_workspace_preview.py).
    assert not app.markdown and not app.get("html") and not app.image


@pytest.mark.parametrize(
    ("name", "language"), [("run.py", "python"), ("data.json", "json"), ("notes.txt", "plaintext")]
)
def test_code_and_text_get_a_language_from_the_extension(tmp_path: Path, name, language):
    content = json.dumps({"a": 1}) if name.endswith(".json") else "print('hi')"
    app = _preview(_app(_task_with(tmp_path, {name: content, "zzz.md": "z"})), name)
    assert (app.code[-1].value, app.code[-1].language) == (content, language)


def test_a_png_is_shown_as_an_image(tmp_path: Path):
    app = _preview(_app(_task_with(tmp_path, {"pic.png": _png(), "a.txt": "a"})), "pic.png")
    (image,) = app.image
    assert not image.value[0].startswith("data:image/svg")


def test_a_binary_file_is_not_shown_but_offered_for_download(tmp_path: Path):
    app = _preview(
        _app(_task_with(tmp_path, {"blob.bin": b"\x00\x01\x02", "a.txt": "a"})), "blob.bin"
    )
    assert any("binary file of 3 B" in c.value for c in app.caption)
    assert app.code[-1].value != "\x00\x01\x02"


def test_a_long_text_is_cut_and_says_so(tmp_path: Path):
    app = _app(_task_with(tmp_path, {"big.log": "x" * 100_000}))
    assert len(app.code[-1].value) == 64 * 1024
    assert any("The first 65.5 kB of 100.0 kB" in c.value for c in app.caption)


def test_every_file_and_the_whole_folder_can_be_downloaded(tmp_path: Path):
    app = _app(_task_with(tmp_path, {"a.txt": "a", "sub/b.txt": "bb"}))
    buttons = app.get("download_button")
    assert [b.help for b in buttons[:2]] == ["Download a.txt", "Download sub/b.txt"]  # type: ignore[attr-defined]
    assert buttons[2].label == "Download all (zip) · 2 files, 3 B"  # type: ignore[attr-defined]


def test_a_file_linked_out_of_the_workspace_is_not_listed(tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    state = _task_with(tmp_path, {"a.txt": "a"})
    (tmp_path / "ws" / "t1" / "link.txt").symlink_to(secret)
    app = _app(state)
    assert "link.txt" not in [t.value for t in app.text]
    assert "secret" not in [c.value for c in app.code]


def test_an_imported_task_says_its_files_did_not_come_with_it(tmp_path: Path):
    state = _task_with(tmp_path, {"a.txt": "a"})
    state.task.imported = True
    app = _app(state)
    assert "Imported from a trace" in app.caption[0].value
    assert not app.text and not app.get("download_button")
