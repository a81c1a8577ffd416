"""Where the user's entries come from: their shape, the project files and the environment.

Nothing here imports the user's code; `agent_core.user_code.registry` does that.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent_core.errors import UserCodeError, UserError
from agent_core.tools.mcp import check_server_spec
from agent_core.tools.names import BUILTIN_TOOLS

AGENTS_ENV = "STEPWISE_AGENTS"
"""JSON object `{"name": "target"}` of the agents given on the command line."""
TOOLS_ENV = "STEPWISE_TOOLS"
"""JSON object `{"name": "module"}` of the tools modules given on the command line."""
MCP_ENV = "STEPWISE_MCP"
"""JSON object `{"name": "command or URL"}` of the MCP servers given on the command line."""
PROJECT_FILES = ("pyproject.toml", "stepwise.toml")
"""Read in this order from the project folder; a later file's entries win."""
RELOAD_HINT = 'then click "Reload my code" in the app (or restart `stepwise ui`)'

EntryKind = Literal["agent", "tools", "mcp"]

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_DOTTED_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_TABLE_KINDS: dict[str, EntryKind] = {"agents": "agent", "tools": "tools", "mcp": "mcp"}
_FLAGS: dict[EntryKind, str] = {
    "agent": "--agent NAME=TARGET",
    "tools": "--tools NAME=MODULE",
    "mcp": "--mcp NAME=SERVER",
}
_EXAMPLES: dict[EntryKind, str] = {
    "agent": "--agent my_agent=my_agent.py:build_agent",
    "tools": "--tools my_tools=my_tools.py",
    "mcp": '--mcp time="uvx mcp-server-time"',
}
_WHAT: dict[EntryKind, str] = {"agent": "agent", "tools": "tools", "mcp": "MCP server"}


def is_file_ref(module: str) -> bool:
    """Whether a module reference is a file path (`x.py`, `dir/x`) rather than a dotted name."""
    return module.endswith(".py") or "/" in module or "\\" in module


def check_entry(name: str, value: str, *, kind: EntryKind) -> None:
    """Raise `UserError` unless `name` and `value` make a well-formed entry of `kind`.

    Only the shape is checked, nothing is imported or started: a name is 1-64 letters, digits,
    `_`, `.` or `-`; an agent target is `file.py:attr` or `package.module:attr`; a tools module
    is `package.module` or `file.py`, and an MCP server a command line or an `http(s)://` URL,
    each under a name that is not a built-in tool's (tools modules and MCP servers are listed
    beside the built-in tools).
    """
    if not _NAME_RE.match(name):
        raise UserError(
            f"{_WHAT[kind]} name {name!r} is not allowed: use 1-64 letters, digits, '_', '.' or "
            f"'-', starting with a letter or digit ({_FLAGS[kind]})"
        )
    if kind == "mcp":
        if name in BUILTIN_TOOLS:
            raise UserError(
                f"MCP server name {name!r} is a built-in tool's name: give the server another "
                f"name, e.g. {_EXAMPLES['mcp']}"
            )
        try:
            check_server_spec(value)
        except UserError as exc:
            raise UserError(f"MCP server {name!r}: {exc}, e.g. {_EXAMPLES['mcp']}") from None
        return
    if kind == "tools":
        if name in BUILTIN_TOOLS:
            raise UserError(
                f"tools name {name!r} is a built-in tool's name: give your tools module another "
                f"name, e.g. {_EXAMPLES['tools']}"
            )
        _check_module_ref(value, what=f"tools module {name!r}", kind=kind)
        return
    module, sep, attr = value.rpartition(":")
    if not sep or not module or not _DOTTED_RE.match(attr):
        raise UserError(
            f"agent {name!r}: target {value!r} must be path/to/file.py:attr or "
            "package.module:attr, where attr is the worker or the function that builds it, "
            f"e.g. {_EXAMPLES['agent']}"
        )
    _check_module_ref(module, what=f"agent {name!r}", kind=kind)


def _check_module_ref(module: str, *, what: str, kind: EntryKind) -> None:
    if is_file_ref(module):
        if not module.endswith(".py"):
            raise UserError(
                f"{what}: {module!r} is a path but not a .py file, e.g. {_EXAMPLES[kind]}"
            )
    elif not _DOTTED_RE.match(module):
        raise UserError(
            f"{what}: {module!r} is neither a .py file nor a dotted module name, "
            f"e.g. {_EXAMPLES[kind]}"
        )


def resolve_target(value: str, base: str | Path) -> str:
    """`value` with a relative file path made absolute against `base`; module names unchanged."""
    if value.endswith(".py"):  # A tools module's file.
        module, suffix = value, ""
    else:
        module, sep, attr = value.rpartition(":")
        if not sep:
            return value
        suffix = f":{attr}"
    if not is_file_ref(module) or Path(module).is_absolute():
        return value
    return f"{(Path(base) / module).resolve()}{suffix}"


def parse_entry(text: str, *, kind: EntryKind, base: str | Path | None = None) -> tuple[str, str]:
    """Split a command-line `NAME=TARGET` (or `NAME=MODULE`) and check its shape.

    An MCP server's command is kept as typed: it runs in the project folder.

    Args:
        text: What was typed after `--agent`, `--tools` or `--mcp`.
        kind: `agent`, `tools` or `mcp`.
        base: The folder relative file paths are resolved against (default: the working one).

    Raises:
        UserError: No `=`, an empty side, or a malformed name or target.
    """
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value:
        flag, _, shape = _FLAGS[kind].partition(" ")
        raise UserError(f"{flag} {text!r}: expected {shape}, e.g. {_EXAMPLES[kind]}")
    check_entry(name, value, kind=kind)
    if kind == "mcp":
        return name, value
    return name, resolve_target(value, base if base is not None else Path.cwd())


@dataclass
class Config:
    """The entries in effect: `name -> (target, source)` per kind, and what is wrong."""

    agents: dict[str, tuple[str, str]] = field(default_factory=dict)
    tools: dict[str, tuple[str, str]] = field(default_factory=dict)
    mcp: dict[str, tuple[str, str]] = field(default_factory=dict)
    malformed: dict[tuple[EntryKind, str], UserCodeError] = field(default_factory=dict)
    """Entries with a usable name but a malformed target: listed with this error."""
    problems: list[UserCodeError] = field(default_factory=list)
    """What cannot be listed under a name: an unreadable file, a bad key or name."""

    def entries(self, kind: EntryKind) -> dict[str, tuple[str, str]]:
        """The well-formed entries of `kind`."""
        return {"agent": self.agents, "tools": self.tools, "mcp": self.mcp}[kind]

    def names(self, kind: EntryKind) -> list[str]:
        """Every name of `kind`, well-formed or not, sorted."""
        return sorted({*self.entries(kind), *(n for k, n in self.malformed if k == kind)})

    def add(self, entries: Mapping[str, Any], *, kind: EntryKind, source: str, base: Path) -> None:
        """Add (or override) `entries` of `kind`; relative paths are resolved against `base`."""
        into = self.entries(kind)
        for name, value in entries.items():
            self.malformed.pop((kind, name), None)
            into.pop(name, None)
            if not isinstance(value, str):
                self.problems.append(
                    UserCodeError(
                        f"{source}: {_WHAT[kind]} {name!r} must be a string, not "
                        f"{type(value).__name__}",
                        target=source,
                    )
                )
                continue
            try:
                check_entry(name, value, kind=kind)
            except UserError as exc:
                error = UserCodeError(f"{source}: {exc}", target=value)
                if _NAME_RE.match(name):
                    self.malformed[(kind, name)] = error
                else:
                    self.problems.append(error)
                continue
            into[name] = (value if kind == "mcp" else resolve_target(value, base), source)

    def check_shared_names(self) -> None:
        """Mark an MCP server malformed when a tools module has its name.

        A spec's `tools` names both, so one name cannot stand for two.
        """
        for name in sorted(self.mcp.keys() & self.tools.keys()):
            spec, source = self.mcp.pop(name)
            self.malformed[("mcp", name)] = UserCodeError(
                f"{source}: MCP server {name!r} has the name of a tools module "
                f"({self.tools[name][0]}): give one of them another name",
                target=spec,
            )


def _read_table(path: Path, config: Config) -> Mapping[str, Any] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        message = f"cannot read {path}: {exc}. Fix the file, {RELOAD_HINT}."
        config.problems.append(UserCodeError(message, target=str(path)))
        return None
    if path.name != "pyproject.toml":
        return data
    tool = data.get("tool")
    table = tool.get("stepwise") if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else None


def _read_project_file(path: Path, config: Config) -> None:
    table = _read_table(path, config)
    if table is None:
        return
    where = "[tool.stepwise] in pyproject.toml" if path.name == "pyproject.toml" else path.name
    for key, value in table.items():
        kind = _TABLE_KINDS.get(key)
        if kind is None:
            message = (
                f'{where}: unknown key {key!r}; use agents = {{name = "file.py:attr"}}, '
                'tools = {name = "module"} and mcp = {name = "command or URL"}'
            )
            config.problems.append(UserCodeError(message, target=str(path)))
        elif not isinstance(value, dict):
            message = f'{where}: {key} must be a table of name = "...", e.g. {key} = {{...}}'
            config.problems.append(UserCodeError(message, target=str(path)))
        else:
            config.add(value, kind=kind, source=str(path), base=path.parent)


def read_config(
    project: Path,
    *,
    agents: Mapping[str, str],
    tools: Mapping[str, str],
    mcp: Mapping[str, str] | None = None,
) -> Config:
    """The project folder's files' entries, overridden by the command line's."""
    config = Config()
    for filename in PROJECT_FILES:
        path = project / filename
        if path.is_file():
            _read_project_file(path, config)
    config.add(agents, kind="agent", source="--agent", base=project)
    config.add(tools, kind="tools", source="--tools", base=project)
    config.add(mcp or {}, kind="mcp", source="--mcp", base=project)
    config.check_shared_names()
    return config


def env_entries(
    variable: str, environ: Mapping[str, str], problems: list[UserCodeError]
) -> dict[str, str]:
    """The JSON object in `environ[variable]` (empty when unset; a problem when malformed)."""
    raw = environ.get(variable, "").strip()
    if not raw:
        return {}
    try:
        entries = json.loads(raw)
    except json.JSONDecodeError:
        entries = None
    if not isinstance(entries, dict):
        problems.append(
            UserCodeError(
                f"${variable} must be a JSON object of name: target, not {raw[:80]!r}; start "
                "the app with `stepwise ui --agent NAME=TARGET --tools NAME=MODULE "
                '--mcp NAME="COMMAND ARGS"`',
                target=variable,
            )
        )
        return {}
    return entries
