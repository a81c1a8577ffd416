"""The registry of the user's own agents and tools, and specs that name them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pydantic
import pytest

from agent_core.demos import DEMO_MODEL_NAME
from agent_core.errors import AgentCoreError, UserCodeError, UserError
from agent_core.llms import ScriptedLLM
from agent_core.spec import REGISTRY_CONTEXT, AgentSpec
from agent_core.store import SQLiteStore
from agent_core.tools.base import FunctionTool
from agent_core.user_code.registry import (
    AGENTS_ENV,
    TOOLS_ENV,
    UserCodeRegistry,
    default_registry,
    parse_entry,
)
from agent_core.workers import CustomSimpleAgentWorker, FunctionCallingAgentWorker
from tests.agent_core._user_projects import isolated_imports, write_project

pytestmark = pytest.mark.usefixtures(isolated_imports.__name__)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

ECHO = """
from agent_core.workers import CustomSimpleAgentWorker

GREETING = "hello"


class EchoWorker(CustomSimpleAgentWorker):
    def _run_step(self, state, task, input):
        return f"{GREETING} {input}", True


def build(llm):
    return EchoWorker(llm=llm)


def build_plain():
    return EchoWorker()


INSTANCE = EchoWorker()
"""

TOOLS_BY_FUNCTIONS = '''
from os.path import join  # imported: not a tool

def shout(text: str) -> str:
    """Shout a text."""
    return text.upper()

def whisper(text: str) -> str:
    """Whisper a text."""
    return text.lower()

def _helper() -> None:
    pass
'''


def registry(folder: Path, **entries: dict[str, str]) -> UserCodeRegistry:
    return UserCodeRegistry(project=folder, **entries)


def answer(worker, text: str = "world") -> str:
    runner = worker.as_agent()
    task = runner.create_task(text)
    return runner.run_step(task.task_id).output


# ----------------------------------------------------------------------------- targets


def test_a_file_target_is_recorded_absolute_and_imported_with_its_siblings(tmp_path):
    write_project(
        tmp_path,
        {
            "agents/helper.py": "WORD = 'sibling'\n",
            "agents/mine.py": ECHO.replace(
                'GREETING = "hello"', "from helper import WORD as GREETING"
            ),
        },
    )
    reg = registry(tmp_path, agents={"mine": "agents/mine.py:build"})
    (entry,) = reg.agents()
    assert entry.ok and entry.target == f"{tmp_path / 'agents' / 'mine.py'}:build"
    assert answer(reg.build_agent("mine", llm=ScriptedLLM([]))) == "sibling world"


def test_a_module_target_is_imported_from_the_project_folder(tmp_path):
    write_project(tmp_path, {"acme_bots/__init__.py": "", "acme_bots/echo.py": ECHO})
    reg = registry(tmp_path, agents={"echo": "acme_bots.echo:build_plain"})
    assert reg.agent_target("echo") == "acme_bots.echo:build_plain"
    assert answer(reg.build_agent("echo", llm=ScriptedLLM([]))) == "hello world"


def test_a_factory_with_one_required_parameter_gets_the_chosen_model(tmp_path):
    write_project(
        tmp_path,
        {
            "ask.py": """
            from agent_core.llms import ChatMessage
            from agent_core.workers import CustomSimpleAgentWorker

            class AskWorker(CustomSimpleAgentWorker):
                async def _arun_step(self, state, task, input):
                    reply = await self.llm.chat([ChatMessage(role="user", content=input)])
                    return reply.text, True

            def build(model):
                return AskWorker(llm=model)
            """
        },
    )
    llm = ScriptedLLM(["the model's reply"])
    worker = registry(tmp_path, agents={"ask": "ask.py:build"}).build_agent("ask", llm=llm)
    assert answer(worker) == "the model's reply"
    assert llm.exhausted and llm.requests[0][0].content == "world"


def test_factories_without_a_model_instances_and_classes(tmp_path):
    write_project(tmp_path, {"echo.py": ECHO})
    reg = registry(
        tmp_path,
        agents={
            "plain": "echo.py:build_plain",
            "instance": "echo.py:INSTANCE",
            "cls": "echo.py:EchoWorker",
        },
    )
    llm = ScriptedLLM([])
    assert reg.build_agent("plain", llm=llm).llm is None  # factory(): no model passed
    instance = reg.build_agent("instance", llm=llm)
    assert instance is reg.build_agent("instance", llm=llm)  # the user's own object
    # A class whose constructor takes an optional `llm` gets it by keyword.
    assert reg.build_agent("cls", llm=llm).llm is llm


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def build(llm, tools):\n    return None\n", r"takes \(llm, tools\)"),
        ("def build():\n    return 42\n", "gave a int, not a worker"),
        ("build = 42\n", "is a int, not an agent"),
    ],
)
def test_a_factory_that_cannot_give_a_worker_says_why(tmp_path, source, message):
    write_project(tmp_path, {"bad.py": source})
    with pytest.raises(UserCodeError, match=message) as caught:
        registry(tmp_path, agents={"bad": "bad.py:build"}).build_agent("bad", llm=ScriptedLLM([]))
    assert "bad.py:build" in caught.value.target


def test_a_factory_that_raises_gives_the_users_traceback(tmp_path):
    write_project(
        tmp_path,
        {"boom.py": "def build(llm):\n    settings = {}\n    return settings['model']\n"},
    )
    reg = registry(tmp_path, agents={"boom": "boom.py:build"})
    with pytest.raises(UserCodeError, match="failed to build: KeyError") as caught:
        reg.build_agent("boom", llm=ScriptedLLM([]))
    trace = caught.value.traceback
    assert 'boom.py", line 3, in build' in trace and "settings['model']" in trace
    assert "user_code.py" not in trace


# ----------------------------------------------------------------------------- tools


def test_a_tools_module_gives_its_public_functions_defined_there(tmp_path):
    write_project(tmp_path, {"speech.py": TOOLS_BY_FUNCTIONS})
    (entry,) = registry(tmp_path, tools={"speech": "speech.py"}).tool_modules()
    assert [tool.name for tool in entry.tools] == ["shout", "whisper"]
    assert entry.tools[0].metadata.description == "Shout a text."


def test_a_tools_module_with_tools_gives_exactly_that_list(tmp_path):
    write_project(
        tmp_path,
        {
            "listed.py": """
            from agent_core.tools import FunctionTool

            def public(a: int) -> int:
                return a

            def double(a: int) -> int:
                return 2 * a

            TOOLS = [FunctionTool.from_defaults(fn=double, name="twice")]
            """
        },
    )
    reg = registry(tmp_path, tools={"listed": "listed.py"})
    assert [tool.name for tool in reg.tools_for("listed")] == ["twice"]


def test_a_tools_module_with_nothing_to_offer_is_an_error(tmp_path):
    write_project(tmp_path, {"empty.py": "from os.path import join\nVALUE = 1\n"})
    (entry,) = registry(tmp_path, tools={"empty": "empty.py"}).tool_modules()
    assert entry.error is not None and "no TOOLS list and no public functions" in str(entry.error)


# ----------------------------------------------------------------------------- configuration


def test_pyproject_and_stepwise_toml_entries_with_the_command_line_winning(tmp_path):
    write_project(
        tmp_path,
        {
            "echo.py": ECHO,
            "speech.py": TOOLS_BY_FUNCTIONS,
            "pyproject.toml": """
            [project]
            name = "mine"

            [tool.stepwise]
            agents = { echo = "echo.py:build", other = "echo.py:build_plain" }
            tools = { speech = "speech.py" }
            """,
            "stepwise.toml": 'agents = { extra = "echo.py:INSTANCE" }\n',
        },
    )
    reg = registry(tmp_path, agents={"other": "echo.py:INSTANCE"})
    assert {e.name: e.target.rpartition(":")[2] for e in reg.agents()} == {
        "echo": "build",
        "extra": "INSTANCE",
        "other": "INSTANCE",  # the command line's
    }
    assert {e.name: e.source for e in reg.agents()}["other"] == "--agent"
    assert reg.tools_module("speech") == str(tmp_path / "speech.py")
    assert all(entry.ok for entry in (*reg.agents(), *reg.tool_modules()))
    assert reg.problems == ()


def test_the_environment_carries_the_command_lines_entries(tmp_path):
    write_project(
        tmp_path, {"echo.py": ECHO, "pyproject.toml": '[tool.stepwise]\nagents = {a = "x.py:y"}\n'}
    )
    environ = {AGENTS_ENV: json.dumps({"a": str(tmp_path / "echo.py") + ":build"})}
    reg = UserCodeRegistry.from_environment(project=tmp_path, environ=environ)
    assert answer(reg.build_agent("a", llm=ScriptedLLM([]))) == "hello world"
    broken = UserCodeRegistry.from_environment(project=tmp_path, environ={TOOLS_ENV: "[1, 2]"})
    assert "must be a JSON object" in str(broken.problems[0])


def test_malformed_settings_are_reported_and_the_rest_still_loads(tmp_path):
    write_project(
        tmp_path,
        {
            "echo.py": ECHO,
            "pyproject.toml": """
            [tool.stepwise]
            agents = { good = "echo.py:build", nocolon = "echo.py", "bad name!" = "echo.py:x" }
            agent = { typo = "echo.py:build" }
            """,
            "stepwise.toml": "agents = [broken\n",
        },
    )
    reg = registry(tmp_path)
    entries = {entry.name: entry for entry in reg.agents()}
    assert entries["good"].ok
    assert "must be path/to/file.py:attr" in str(entries["nocolon"].error)
    problems = " | ".join(str(p) for p in reg.problems)
    assert "'bad name!' is not allowed" in problems
    assert "unknown key 'agent'" in problems
    assert "cannot read" in problems and "stepwise.toml" in problems


def test_command_line_entries_are_checked_before_anything_starts(tmp_path):
    assert parse_entry("me=agents/me.py:build", kind="agent", base=tmp_path) == (
        "me",
        f"{tmp_path / 'agents' / 'me.py'}:build",
    )
    assert parse_entry("pkg=pkg.mod:make", kind="agent", base=tmp_path) == ("pkg", "pkg.mod:make")
    for text, message in [
        ("me", "expected NAME=TARGET"),
        ("me=file.py", "must be path/to/file.py:attr"),
        ("me=not a module:x", "neither a .py file nor a dotted module"),
    ]:
        with pytest.raises(UserError, match=message):
            parse_entry(text, kind="agent")
    with pytest.raises(UserError, match="built-in tool's name"):
        parse_entry("files=my_tools.py", kind="tools")


# ----------------------------------------------------------------------------- failures


def test_an_import_error_names_the_target_with_the_users_traceback_and_spares_the_rest(tmp_path):
    write_project(
        tmp_path,
        {
            "echo.py": ECHO,
            "speech.py": TOOLS_BY_FUNCTIONS,
            "broken.py": "import json\n\nLIMIT = 10 / 0\n",
        },
    )
    reg = registry(
        tmp_path,
        agents={"broken": "broken.py:build", "echo": "echo.py:build", "gone": "missing_mod:x"},
        tools={"speech": "speech.py"},
    )
    entries = {entry.name: entry for entry in reg.agents()}
    error = entries["broken"].error
    assert isinstance(error, UserCodeError) and isinstance(error, AgentCoreError)
    assert error.target == f"{tmp_path / 'broken.py'}:build"
    assert "could not import agent 'broken'" in str(error) and "Reload my code" in str(error)
    assert f'File "{tmp_path / "broken.py"}", line 3, in <module>' in error.traceback
    assert error.traceback.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "importlib" not in error.traceback and "user_code.py" not in error.traceback
    missing = entries["gone"].error
    assert missing is not None and missing.target == "missing_mod:x"
    assert missing.traceback.strip() == "ModuleNotFoundError: No module named 'missing_mod'"
    # The others are untouched.
    assert entries["echo"].ok and reg.tool_modules()[0].ok
    assert answer(reg.build_agent("echo", llm=ScriptedLLM([]))) == "hello world"
    with pytest.raises(UserCodeError) as caught:
        reg.build_agent("broken", llm=ScriptedLLM([]))
    assert caught.value is error


def test_a_missing_attribute_lists_what_the_module_defines(tmp_path):
    write_project(tmp_path, {"echo.py": ECHO})
    (entry,) = registry(tmp_path, agents={"e": "echo.py:buidl"}).agents()
    assert "no 'buidl'" in str(entry.error) and "build, build_plain" in str(entry.error)


# ----------------------------------------------------------------------------- reload


def test_reload_picks_up_an_edited_file_and_its_sibling(tmp_path):
    write_project(
        tmp_path,
        {"words.py": "SUFFIX = '!'\n", "echo.py": ECHO + "\nfrom words import SUFFIX\n"},
    )
    source = (tmp_path / "echo.py").read_text()
    reg = registry(tmp_path, agents={"echo": "echo.py:build"})
    before = reg.build_agent("echo", llm=ScriptedLLM([]))
    first_generation = reg.generation
    assert sys.modules["words"].SUFFIX == "!"

    (tmp_path / "echo.py").write_text(source.replace('"hello"', '"good morning"'))
    (tmp_path / "words.py").write_text("SUFFIX = '?!'\n")
    assert reg.reload() == reg.generation != first_generation
    after = reg.build_agent("echo", llm=ScriptedLLM([]))

    assert answer(after) == "good morning world"
    assert sys.modules["words"].SUFFIX == "?!"
    assert answer(before) == "hello world"  # a worker built earlier keeps its code


def test_reload_reads_new_entries_and_mends_a_broken_one(tmp_path):
    write_project(tmp_path, {"echo.py": "raise RuntimeError('half written')\n"})
    reg = registry(tmp_path, agents={"echo": "echo.py:build"})
    assert not reg.agents()[0].ok
    write_project(
        tmp_path, {"echo.py": ECHO, "stepwise.toml": 'tools = { speech = "speech.py" }\n'}
    )
    write_project(tmp_path, {"speech.py": TOOLS_BY_FUNCTIONS})
    reg.reload()
    assert reg.agents()[0].ok and [e.name for e in reg.tool_modules()] == ["speech"]


# ----------------------------------------------------------------------------- specs


def test_a_spec_records_the_agents_target_and_rebuilds_after_the_registry_forgot_it(
    tmp_path, monkeypatch
):
    write_project(tmp_path / "project", {"echo.py": ECHO})
    monkeypatch.chdir(tmp_path / "project")
    monkeypatch.setenv(AGENTS_ENV, json.dumps({"echo": "echo.py:build"}))
    spec = AgentSpec.from_registry(
        default_registry(), agent="echo", tools=(), workspace=str(tmp_path / "ws")
    )
    assert spec.agent_target == f"{tmp_path / 'project' / 'echo.py'}:build"
    runner = spec.build_runner(store=SQLiteStore(tmp_path / "s.db"), registry=default_registry())
    task = runner.create_task("world")

    # A restart elsewhere, without the flag: the task's record still builds its agent.
    monkeypatch.delenv(AGENTS_ENV)
    monkeypatch.chdir(tmp_path)
    assert default_registry().agent_target("echo") is None
    recorded = AgentSpec.model_validate(runner.get_task(task.task_id).spec)
    assert recorded == spec
    again = recorded.build_runner(store=SQLiteStore(tmp_path / "s.db"), registry=default_registry())
    assert again.run_step(task.task_id).output == "hello world"
    with pytest.raises(pydantic.ValidationError, match="no agent named 'echo' is registered"):
        AgentSpec.from_registry(default_registry(), agent="echo")


def test_a_spec_takes_registered_tools_modules_beside_the_built_in_tools(tmp_path):
    write_project(tmp_path, {"speech.py": TOOLS_BY_FUNCTIONS})
    reg = registry(tmp_path, tools={"speech": "speech.py"})
    spec = AgentSpec(
        worker="function_calling",
        tools=("arithmetic", "speech"),
        tool_modules={"speech": reg.tools_module("speech")},
    )
    worker = spec.build_worker(registry=reg)
    assert isinstance(worker, FunctionCallingAgentWorker)
    assert sorted(worker.tools) == ["add", "divide", "multiply", "shout", "subtract", "whisper"]
    assert isinstance(worker.tools["shout"], FunctionTool)
    # Unregistered and unrecorded: refused with what to do.
    with pytest.raises(pydantic.ValidationError, match="--tools speech=MODULE"):
        AgentSpec.from_registry(registry(tmp_path), tools=("speech",))
    assert AgentSpec().tool_modules == {} and not AgentSpec().uses_user_code


def test_a_spec_reads_tools_modules_from_the_default_registry(tmp_path, monkeypatch):
    write_project(tmp_path, {"speech.py": TOOLS_BY_FUNCTIONS})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(TOOLS_ENV, json.dumps({"speech": "speech.py"}))
    spec = AgentSpec.from_registry(default_registry(), tools=("speech",))
    assert spec.tool_modules == {"speech": str(tmp_path / "speech.py")} and spec.uses_user_code
    assert sorted(spec.build_worker(registry=default_registry()).tools) == ["shout", "whisper"]


def test_a_spec_reads_no_global_registry_it_is_handed_one(tmp_path, monkeypatch):
    # The working folder registers both names; a spec not given a registry looks neither up.
    write_project(tmp_path, {"echo.py": ECHO, "speech.py": TOOLS_BY_FUNCTIONS})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(AGENTS_ENV, json.dumps({"echo": "echo.py:build"}))
    monkeypatch.setenv(TOOLS_ENV, json.dumps({"speech": "speech.py"}))
    assert default_registry().agent_target("echo") is not None
    with pytest.raises(pydantic.ValidationError, match=r"give its agent_target.*from_registry"):
        AgentSpec(agent="echo")
    with pytest.raises(pydantic.ValidationError, match=r"tool_modules.*from_registry"):
        AgentSpec(tools=("speech",))

    # Another project's registry, passed in, is the one the spec reads.
    other = tmp_path / "other"
    write_project(other, {"echo.py": ECHO.replace('"hello"', '"bonjour"')})
    reg = registry(other, agents={"echo": "echo.py:build"})
    spec = AgentSpec.model_validate({"agent": "echo", "tools": ()}, context={REGISTRY_CONTEXT: reg})
    assert spec.agent_target == f"{other / 'echo.py'}:build"
    with pytest.raises(UserError, match="pass registry="):
        spec.build_runner()
    runner = spec.build_runner(registry=reg)
    task = runner.create_task("world")
    assert runner.run_step(task.task_id).output == "bonjour world"


def test_the_example_agent_runs_two_steps_on_the_demo_model(tmp_path, monkeypatch):
    monkeypatch.chdir(EXAMPLES)
    spec = AgentSpec.from_registry(
        default_registry(), agent="headline", tools=(), workspace=str(tmp_path / "ws")
    )
    runner = spec.build_runner(registry=default_registry())
    task = runner.create_task("Write about llamas visiting the seaside for the very first time")
    first = runner.run_step(task.task_id)
    assert not first.is_last and "stand-in model" in first.output
    assert DEMO_MODEL_NAME not in first.output
    second = runner.run_step(task.task_id)
    assert second.is_last and "word_count: 12 words, so shorten cut it to 8" in second.output
    assert isinstance(runner.agent_worker, CustomSimpleAgentWorker)
