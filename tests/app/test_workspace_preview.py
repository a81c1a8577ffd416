"""An HTML file in the workspace gets a sandboxed preview (no scripts, nothing loaded) beside
its source, and the workspace's path wraps instead of being cut off (issue 22, item 8)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from stepwise.app.components.workspace_view import sandboxed_html
from tests.app.test_workspace_view import HOSTILE_HTML, _app, _preview, _task_with


def _iframe_markup(app) -> str:
    (frame,) = app.get("iframe")
    return frame.proto.srcdoc or frame.proto.src


def test_html_gets_a_sandboxed_preview_beside_its_source(tmp_path: Path) -> None:
    task = _task_with(tmp_path, {"index.html": HOSTILE_HTML, "a.txt": "a"})
    app = _preview(_app(task), "index.html")
    assert [t.label for t in app.tabs] == ["Preview (sandboxed: no scripts)", "Source"]
    assert (app.code[-1].value, app.code[-1].language) == (HOSTILE_HTML, "html")
    assert _iframe_markup(app) == sandboxed_html(HOSTILE_HTML)


def test_the_preview_frame_runs_no_script_and_holds_the_page_only_escaped() -> None:
    markup = sandboxed_html(HOSTILE_HTML + '"><script>alert(3)</script>')
    (frame,) = re.findall(r"<iframe[^>]*>", markup)
    assert 'sandbox=""' in frame and "allow-" not in frame
    srcdoc = re.search(r'srcdoc="([^"]*)"', markup)
    assert srcdoc is not None
    assert "<script>" not in markup  # only as &lt;script&gt;, inside the attribute
    page = html.unescape(srcdoc.group(1))
    assert page.endswith(HOSTILE_HTML + '"><script>alert(3)</script>')
    assert "default-src 'none'" in page  # it loads nothing from the network


def test_the_workspace_path_wraps(tmp_path: Path) -> None:
    app = _app(_task_with(tmp_path, {"a.txt": "a"}))
    folder = next(c for c in app.code if c.value.endswith("/t1"))
    assert folder.proto.wrap_lines
