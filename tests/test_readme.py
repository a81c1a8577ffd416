"""The README's quickstart runs as written and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _quickstart() -> str:
    text = README.read_text()
    section = text[text.index("## Quickstart") :]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the Quickstart section has no python block"
    return match.group(1)


def test_quickstart_runs_and_prints_what_it_promises(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_quickstart(), "README quickstart", "exec"), {"__name__": "quickstart"})
    promised = re.findall(r"print\(.*\)\s+# (.+)", _quickstart())
    assert printed.getvalue().splitlines() == promised
    assert (tmp_path / "stepwise.db").exists()
