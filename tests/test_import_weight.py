"""What importing a layer loads: the app no provider SDK, the runtime no face's framework.

Each import runs in a fresh interpreter, since this one has loaded everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SDKS = ("openai", "anthropic")
FACE_FRAMEWORKS = ("streamlit", "fastapi", "starlette", "uvicorn", "redis", "opentelemetry")


def _loaded_after(statement: str, watched: tuple[str, ...]) -> list[str]:
    """Which of the `watched` top-level packages `statement` loads, run in a new interpreter."""
    code = (
        f"import json, sys\n{statement}\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({watched!r}))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "module",
    [
        "stepwise.app.components.state",
        "stepwise.app.components.settings_form",
        "stepwise.app.components.task_form",
    ],
)
def test_the_app_loads_no_provider_sdk(module: str) -> None:
    assert _loaded_after(f"import {module}", SDKS) == []


def test_the_runtime_loads_no_face_framework() -> None:
    assert _loaded_after("import agent_core", FACE_FRAMEWORKS) == []


def test_the_check_sees_an_sdk_when_one_loads() -> None:
    # The probe itself works: building a model does load its SDK.
    loaded = _loaded_after(
        "from agent_core.llms.catalog import infer_model\ninfer_model('openai', api_key='sk-x')",
        SDKS,
    )
    assert loaded == ["openai"]
