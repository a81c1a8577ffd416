"""A user's project folder for the user-code tests, and imports that do not leak between them."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core.user_code import AGENTS_ENV, TOOLS_ENV
from agent_core.user_code.imports import forget_user_modules


def write_project(folder: Path, files: dict[str, str]) -> Path:
    """Write each of `files` (name -> dedented text) under `folder`; give back `folder`."""
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return folder


@pytest.fixture
def isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test imports its own user modules: none leaks into the next test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv(AGENTS_ENV, raising=False)
    monkeypatch.delenv(TOOLS_ENV, raising=False)
    yield
    forget_user_modules()
