"""Every code block of the README and the manual (docs/) runs as written, or is checked.

- `python`: run in a fresh folder; a block that prints says what in a comment on each print
  (`print(x)  # 405`), and prints exactly those lines. A block that needs something around it
  (a server, a file, a task) names it in the comment just above its fence,
  `<!-- test: setup=NAME -->`, and `SETUPS[NAME]` provides it: the block's text is not changed
  but for the addresses the setup's servers listen on.
- `sh`, `bash`: each `stepwise` command is parsed by the CLI's own parser (an option that does
  not exist fails), and each `make` target exists in the Makefile. Nothing is run.
- `toml`: parses. `text` and unlabelled blocks are output or pictures, not code.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
SETUP = re.compile(r"<!-- test: setup=(\w+) -->")
CHECKED = {"python", "sh", "bash", "toml"}
NOT_CODE = {"text", ""}


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text, the setup it names."""

    page: Path
    line: int
    language: str
    code: str
    setup: str | None

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opened = FENCE.match(lines[index])
        if not opened:
            index += 1
            continue
        indent, language = opened.groups()
        end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
        body = [line.removeprefix(indent) for line in lines[index + 1 : end]]
        above = next((line for line in reversed(lines[:index]) if line.strip()), "")
        setup = SETUP.search(above)
        found.append(
            Block(page, index + 1, language, "\n".join(body) + "\n", setup and setup.group(1))
        )
        index = end + 1
    return found


BLOCKS = [block for page in PAGES for block in _blocks(page)]


def _of(*languages: str) -> list[pytest.ParameterSet]:
    return [pytest.param(b, id=b.name) for b in BLOCKS if b.language in languages]


# --- setups: what a block needs around it ---------------------------------------------------


@dataclass
class Around:
    """What a setup gives a block: names it may use, and addresses to swap in its text."""

    names: dict[str, object] = field(default_factory=dict)
    addresses: dict[str, str] = field(default_factory=dict)


Setup = Callable[[Path, pytest.MonkeyPatch], contextlib.AbstractContextManager[Around]]
SETUPS: dict[str, Setup] = {}


def setup(function: Callable[[Path, pytest.MonkeyPatch], Iterator[Around]]) -> Callable:
    SETUPS[function.__name__] = contextlib.contextmanager(function)
    return function


@setup
def openai_key(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Around]:
    """A key in the environment, as a user has; the root conftest keeps any call off the net."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-test")
    yield Around()


@setup
def a_photo(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Around]:
    """`photo.jpg` in the folder, and a key for the OpenAI model the block builds."""
    from PIL import Image

    Image.new("RGB", (8, 8), "white").save(folder / "photo.jpg", "JPEG")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-test")
    yield Around()


@setup
def a_project(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Around]:
    """A project folder whose pyproject.toml names the agent `mine` (a scripted one)."""
    (folder / "pyproject.toml").write_text(
        '[tool.stepwise]\nagents = { mine = "my_agent.py:build_agent" }\n'
    )
    (folder / "my_agent.py").write_text(
        "from agent_core.llms import ScriptedLLM\n"
        "from agent_core.workers import ReActAgentWorker\n\n\n"
        "def build_agent(llm):\n"
        "    answer = 'Thought: I can answer without using any more tools.\\nAnswer: done'\n"
        "    return ReActAgentWorker.from_tools([], llm=ScriptedLLM([answer]))\n"
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-test")
    yield Around()


@setup
def a_task(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Around]:
    """`runner` and the `task_id` of a task on it with one step to run."""
    from agent_core import AgentRunner
    from agent_core.llms import ScriptedLLM
    from agent_core.workers import ReActAgentWorker

    answer = "Thought: I can answer without using any more tools.\nAnswer: hello"
    runner = AgentRunner(ReActAgentWorker.from_tools([], llm=ScriptedLLM([answer])))
    yield Around(names={"runner": runner, "task_id": runner.create_task("Say hello").task_id})


@setup
def stepwise_serve(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Around]:
    """`stepwise serve` on a free port (the scripted demo model), for 127.0.0.1:8000."""
    from stepwise.http.listening import uvicorn_options
    from stepwise.server import ServerSettings
    from tests.stepwise.server.conftest import running_server

    settings = ServerSettings(db=folder / "served.db", token=None)
    with running_server(settings, **uvicorn_options()) as url:
        yield Around(addresses={"127.0.0.1:8000": url.removeprefix("http://")})


@setup
def quickstart_models(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Around]:
    """`OpenAILLM(...)` plays the services quickstart's parts offline (its example's script)."""
    import agent_core.llms.openai
    from agent_core.llms import FunctionLLM
    from tests.stepwise.services._system import load_example

    example = load_example("services_quickstart")

    def reply(messages, tools):  # One model for all three parts, told apart by its tools.
        names = {tool.name for tool in tools}
        if "get_the_secret_fact" in names:
            return example._secret_agent(messages, tools)
        return example._orchestrate(messages, tools) if names else "Llamas hum to each other."

    monkeypatch.setattr(
        agent_core.llms.openai, "OpenAILLM", lambda model, **_: FunctionLLM(reply, model=model)
    )
    yield Around()


@setup
def a_control_plane(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Around]:
    """The services quickstart served on scripted models, for http://127.0.0.1:8100."""
    from tests.stepwise.services._system import free_port, load_example, served

    example = load_example("services_quickstart")
    services, control_plane, queue = example.build(example.scripted_llms(), port=free_port())
    with served(services, control_plane, queue) as url:
        yield Around(addresses={"http://127.0.0.1:8100": url})


# --- the tests -------------------------------------------------------------------------------


def test_every_block_is_in_a_language_these_tests_know() -> None:
    unknown = [b.name for b in BLOCKS if b.language not in CHECKED | NOT_CODE]
    assert not unknown, f"a test for these blocks' language: {unknown}"
    assert {b.setup for b in BLOCKS if b.setup} <= set(SETUPS), "a setup named nowhere here"


def test_the_readme_has_the_quickstart() -> None:
    readme = [b for b in BLOCKS if b.page.name == "README.md" and b.language == "python"]
    assert any("agent.undo_step(" in b.code for b in readme)


@pytest.mark.parametrize("block", _of("python"))
def test_python_block_runs_and_prints_what_it_promises(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    promised = re.findall(r"print\(.*\)\s+# (.+)", block.code)
    printed = io.StringIO()
    around = SETUPS[block.setup] if block.setup else SETUPS["nothing"]
    with around(tmp_path, monkeypatch) as given:
        code = block.code
        for address, served_at in given.addresses.items():
            code = code.replace(address, served_at)
        with contextlib.redirect_stdout(printed):
            exec(compile(code, block.name, "exec"), {"__name__": "docs_example", **given.names})
    assert printed.getvalue().splitlines() == promised


@setup
def nothing(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Around]:
    """No setup: the block stands alone."""
    yield Around()


def _commands(code: str) -> Iterator[list[str]]:
    pending = ""
    for line in code.replace("\\\n", " ").splitlines():
        pending += line + "\n"
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # A quote opened on this line closes on a later one.
            continue
        pending = ""
        while words and re.fullmatch(r"\w+=.*", words[0]):
            words = words[1:]  # FOO=bar stepwise ...: the variables, then the command.
        if words:
            yield words


@pytest.mark.parametrize("block", _of("sh", "bash"))
def test_shell_block_names_commands_and_options_that_exist(block: Block) -> None:
    from stepwise.cli.main import build_parser

    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    for words in _commands(block.code):
        program, arguments = Path(words[0]).name, words[1:]
        if program == "stepwise":
            try:
                build_parser().parse_args(arguments)
            except SystemExit as refused:
                pytest.fail(f"{block.name}: `{shlex.join(words)}` is refused ({refused})")
        elif program == "make":
            assert set(arguments) <= targets, f"{block.name}: no such target in {arguments}"


@pytest.mark.parametrize("block", _of("toml"))
def test_toml_block_parses(block: Block) -> None:
    tomllib.loads(block.code)
