"""`pip install "stepwise[app]"` in a fresh venv outside the checkout gives a working `stepwise ui`.

One wheel is built from the checkout's packages (copied to a temporary folder first, so the
build writes nothing into the checkout) and installed with its app extra into a new venv by uv,
offline, from the cache `make test`'s install filled, at the lock's versions: no test reaches
the network. The user's project is a folder of its own holding one agent file; `stepwise ui
--agent ...` runs there from the venv, and Chromium creates a task with that agent and runs a
step. The venv must hold nothing of the checkout: no `app.py`, no `app_pages/`, no path into it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import ARTIFACTS, CHROMIUM_ARGS, ROOT, _free_port, idle, serving
from .test_stepper_in_browser import click, groups, wait_for_dag
from .test_user_code_in_browser import choose

PACKAGES = (
    "agent_core",
    "components",
    "stepwise",
    "agent_services",
    "stepwise_cli",
    "stepwise_server",
)
TASK = "Make this loud"
AGENT = '''
"""A user's own agent, in a project that knows nothing of Stepwise's checkout."""

from agent_core.workers import CustomSimpleAgentWorker


class Shout(CustomSimpleAgentWorker):
    def _run_step(self, state, task, input):
        return f"SHOUTED BY MY AGENT: {input.upper()}", True


def build_agent():
    return Shout()
'''
# Where everything the venv's Python sees comes from, as JSON.
_WHERE = """
import importlib.util, json, sys
import agent_core, stepwise, stepwise.app.components as components
from stepwise.app import entry_script
print(json.dumps({
    "modules": [m.__file__ for m in (agent_core, components, stepwise)],
    "entry": str(entry_script()),
    "path": sys.path,
    "app_module": importlib.util.find_spec("app") is not None,
    "pages_module": importlib.util.find_spec("app_pages") is not None,
}))
"""
_WITHOUT_ANTHROPIC = """
from agent_core.extras import MissingExtraError
try:
    from agent_core.llms import AnthropicLLM
except MissingExtraError as exc:
    print(exc)
"""


def uv(*args: object) -> None:
    command = [sys.executable, "-m", "uv", *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    dist = tmp_path_factory.mktemp("dist")
    uv("build", "--wheel", "--offline", "--out-dir", dist, source)
    (built,) = dist.glob("stepwise-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its app extra, at the lock's versions."""
    folder = tmp_path_factory.mktemp("venv") / "venv"
    uv("venv", "--offline", "--quiet", "--python", sys.executable, folder)
    python = folder / "bin" / "python"
    requirement = f"stepwise[app] @ {wheel.as_uri()}"
    lock = ROOT / "requirements.lock"
    uv("pip", "install", "--offline", "--quiet", "--python", python, "-c", lock, requirement)
    return folder


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's project: a folder of its own with one agent file."""
    folder = tmp_path_factory.mktemp("project")
    (folder / "my_agent.py").write_text(AGENT, encoding="utf-8")
    return folder


def _environment(project: Path) -> dict[str, str]:
    """This environment, less anything that points Python at the checkout or its venv."""
    env = {**os.environ, "STEPWISE_WORKSPACES": str(project / "workspaces")}
    for variable in ("PYTHONPATH", "VIRTUAL_ENV", "STEPWISE_AGENTS", "STEPWISE_TOOLS"):
        env.pop(variable, None)
    return env


def _run(venv: Path, project: Path, code: str) -> str:
    done = subprocess.run(
        [venv / "bin" / "python", "-c", code],
        cwd=project,
        env=_environment(project),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def app_url(venv: Path, project: Path) -> Iterator[str]:
    """`stepwise ui --agent ...`, from the venv, in the user's project folder."""
    port = _free_port()
    command = [
        venv / "bin" / "stepwise", "ui", "--agent", "shout=my_agent.py:build_agent",
        "--port", str(port), "--db", project / "runs.db",
    ]  # fmt: skip
    log = project / "stepwise-ui.log"
    with serving(command, cwd=project, env=_environment(project), log=log, port=port) as url:
        yield url


def test_the_venv_holds_the_installed_package_and_nothing_of_the_checkout(venv, project):
    where = json.loads(_run(venv, project, _WHERE))

    site = venv / "lib"
    for module in (*where["modules"], where["entry"]):
        assert Path(module).is_relative_to(site), module
    assert Path(where["entry"]).is_file()
    for entry in where["path"]:
        folder = Path(entry or project).resolve()
        assert not folder.is_relative_to(ROOT), entry
        assert not (folder / "app.py").exists() and not (folder / "app_pages").exists(), entry
    assert not where["app_module"] and not where["pages_module"]
    # The app extra brings no Anthropic SDK: asking for its model names the extra to install.
    assert 'pip install "stepwise[anthropic]"' in _run(venv, project, _WITHOUT_ANTHROPIC)


def test_stepwise_ui_runs_the_users_agent_a_step_in_chromium(chromium_path, app_url):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1500, "height": 1500}).new_page()
            page.goto(app_url)
            page.get_by_text("Demo scenarios").wait_for(timeout=30_000)
            choose(page, "Worker", "Your agent: shout")
            task = page.get_by_placeholder("What should the agent do?")
            task.fill(TASK)
            task.press("Control+Enter")
            page.wait_for_timeout(500)
            click(page, "Create task")
            # The first task imports the user's agent in the fresh venv: slow under load.
            wait_for_dag(page, lambda n: groups(n) == ["upcoming"], timeout=90)

            click(page, "Run step")
            wait_for_dag(page, lambda n: groups(n) == ["completed"])
            page.get_by_text(f"SHOUTED BY MY AGENT: {TASK.upper()}").first.wait_for(timeout=10_000)
            idle(page)  # The picture shows the page drawn, not a rerun half done.
            page.screenshot(path=ARTIFACTS / "wheel-user-agent-step.png", full_page=True)

            # Every page serves at its own URL from the installed page functions.
            for path, heading in (
                ("home", "Stepwise"),
                ("tasks", "Tasks"),
                ("playground", "Playground"),
                ("services", "Services"),
                ("settings", "Settings"),
            ):
                page.goto(f"{app_url}/{path}")
                # The first: a page may also hold a section of its name (Services lists services).
                page.get_by_role("heading", name=heading, exact=True).first.wait_for(timeout=30_000)
                assert page.get_by_test_id("stException").count() == 0, path
                if path == "tasks":
                    page.get_by_text(TASK).first.wait_for(timeout=10_000)
        finally:
            browser.close()
