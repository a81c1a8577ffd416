"""The case format, `stepwise.case/1`: a task's recording plus what it is expected to do.

A case is a JSON file a user commits beside their code (`stepwise_cases/NAME.case.json`). It
holds the agent the task ran with (its `AgentSpec` as JSON, key-free), the task's input, every
completed step in order (the exact request its model saw and the reply, each tool call with its
arguments and result, each act of a person) and the expectations a replay is judged by.

Reading one never runs or imports anything: `load_case` parses JSON into these models and
nothing else. A Python check (`Expectations.check`) is imported only when the case runs.
Files are written with sorted keys and an indent of two, so a diff of a re-recorded case shows
what changed, one step per block.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_core.llms.base import ChatMessage, ToolSpec, Usage
from agent_core.recordings._secrets import redact_tree
from agent_core.recordings.errors import CaseFileError
from agent_core.recordings.expectations import Expectations

__all__ = [
    "CASE_FORMAT",
    "CASE_SUFFIX",
    "DEFAULT_CASES_DIR",
    "Case",
    "CaseStep",
    "HumanAct",
    "ModelReply",
    "ModelRequest",
    "RecordedToolCall",
    "ReplayOptions",
    "ToolsMode",
    "case_path",
    "load_case",
    "save_case",
]

CASE_FORMAT = "stepwise.case/1"
"""The format this Stepwise writes and reads."""
CASE_SUFFIX = ".case.json"
DEFAULT_CASES_DIR = "stepwise_cases"

ToolsMode = Literal["auto", "live", "recorded"]
"""How a replay answers tool calls: `live` runs every tool, `recorded` answers every call from
the recording, `auto` answers only the tools that touch the outside (declared with side
effects, MCP tools not marked read-only) from the recording."""

HumanActKind = Literal[
    "edited_input", "approved", "edited_call", "rejected_call", "feedback", "typed_reply", "skipped"
]

_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelRequest(_Model):
    """What a step sent its model: the replay compares the request it sends now with this."""

    messages: list[ChatMessage]
    """The messages exactly as the model got them."""
    tools: list[ToolSpec] | None = None
    """The tools offered beside the messages, with their schemas; None when not recorded
    (a task's store keeps the messages only), and then not compared."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """Settings that change the reply (`tool_choice`), when recorded; compared key by key."""


class ModelReply(_Model):
    """What the model answered; a replay answers the same request with it."""

    message: ChatMessage
    """The assistant message, with its tool calls."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens and cost as recorded, so cost expectations hold in replay too."""


class RecordedToolCall(_Model):
    """One tool call as it ran (or was refused)."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    """The arguments as the model (or the person who edited the call) wrote them."""
    result: str = ""
    """What the tool returned, as the model read it (a refusal's reason when `rejected`)."""
    is_error: bool = False
    rejected: bool = False
    call_id: str = ""


class HumanAct(_Model):
    """Something a person did at a step, replayed at the same step.

    `edited_input` and `edited_call` ran the step with `input` instead of `proposed_input`;
    `approved` ran a call that awaited approval as proposed; `rejected_call` refused it with
    `text`; `feedback` added `text` before the next step; `typed_reply` is a reply a person
    typed as the model (served from `CaseStep.reply` like any other); `skipped` left the step out.
    """

    act: HumanActKind
    input: Any = None
    """The input that ran (edits), or None."""
    proposed_input: Any = None
    """What the agent proposed, for edits."""
    text: str = ""
    """The feedback, or the reason for a rejection."""


class CaseStep(_Model):
    """One completed step of the recorded task."""

    number: int
    """Its position among the task's completed steps, from 1."""
    kind: str
    """`llm`, `tool`, `human`, `plan`, `delegate`, `finalize` or `custom`."""
    name: str | None = None
    """The agent's own name for the step (a framework's node), if any."""
    input: Any = None
    """The input the step ran with."""
    request: ModelRequest | None = None
    """The step's model call; None for a step that called no model."""
    reply: ModelReply | None = None
    """The model's reply to `request`."""
    tool_calls: list[RecordedToolCall] = Field(default_factory=list)
    output: Any = None
    """What the step produced (text, or JSON)."""
    is_last: bool = False
    human: list[HumanAct] = Field(default_factory=list)
    """What a person did at this step, in order."""
    usage: Usage = Field(default_factory=Usage)


class ReplayOptions(_Model):
    """How the case is replayed unless the caller says otherwise."""

    tools: ToolsMode = "auto"
    ignore_system_prompt: bool = False
    """Compare requests without their system messages (a prompt being reworded)."""


class CaseSource(_Model):
    """Where the recording came from, for people."""

    task_id: str = ""
    recorded_at: str = ""
    """When the task was created (ISO 8601)."""


class Case(_Model):
    """A recorded task and its expectations: one regression test."""

    format: Literal["stepwise.case/1"] = CASE_FORMAT
    name: str
    agent: dict[str, Any] = Field(default_factory=dict)
    """The `AgentSpec` the task ran with, as JSON (never a key); `{}` for a runner built
    without a spec, which a replay needs `--agent` (or `agent=`) for."""
    input: str
    """The task's input."""
    steps: list[CaseStep]
    expectations: Expectations = Field(default_factory=Expectations)
    replay: ReplayOptions = Field(default_factory=ReplayOptions)
    source: CaseSource = Field(default_factory=CaseSource)

    @property
    def answer(self) -> str | None:
        """The recorded final answer (the last step's output), if the task reached one."""
        last = self.steps[-1] if self.steps else None
        return None if last is None or not last.is_last else _text(last.output)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def case_path(name: str, directory: str | Path = DEFAULT_CASES_DIR) -> Path:
    """The file a case called `name` is saved to: `directory/NAME.case.json`."""
    safe = _NAME.sub("_", name).strip("._") or "case"
    return Path(directory) / f"{safe}{CASE_SUFFIX}"


def case_text(case: Case) -> str:
    """The case as its file holds it: sorted keys, indent 2, secrets redacted, one newline."""
    data = case.model_dump(mode="json")
    for step in data["steps"]:
        for message in (step.get("request") or {}).get("messages", []):
            _compact(message)
        if step.get("reply"):
            _compact(step["reply"]["message"])
    data = redact_tree(data)
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _compact(message: dict[str, Any]) -> None:
    """Drop a message's empty fields (no tool calls, no name): most messages are text."""
    for key in [k for k, v in message.items() if k not in ("role", "content") and not v]:
        del message[key]


def save_case(case: Case, directory: str | Path = DEFAULT_CASES_DIR) -> Path:
    """Write `case` to `directory/NAME.case.json` (the folder is made); give back the path.

    Keys never reach the file: API keys from the environment, key-looking strings and the
    credentials a URL or a `key=value` pair holds are replaced by `[redacted]`.
    """
    path = case_path(case.name, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(case_text(case), encoding="utf-8")
    return path


def load_case(path: str | Path) -> Case:
    """Read the case at `path`; nothing in it is run or imported.

    Raises:
        CaseFileError: The file cannot be read, is not JSON (`case_malformed`), has another
            format (`case_format_unknown`), lacks a field (`case_field_missing`) or holds a
            wrong one (`case_malformed`); the error names the file and the field.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseFileError(f"{path}: cannot read the case file: {exc}", file=path) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseFileError(
            f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
            file=path,
            hint="fix the file, or save the case again with `stepwise test save TASK_ID`",
            params={"detail": exc.msg},
        ) from exc
    if not isinstance(data, dict):
        raise CaseFileError(f"{path}: a case is a JSON object", file=path)
    _check_format(data, path)
    try:
        return Case.model_validate(data)
    except ValidationError as exc:
        raise _field_error(exc, path) from exc


def _check_format(data: dict[str, Any], path: str | Path) -> None:
    found = data.get("format")
    if found is None:
        raise CaseFileError(
            f'{path}: no "format" field; a case file starts with "format": "{CASE_FORMAT}"',
            file=path,
            field="format",
            code="case_field_missing",
        )
    if found != CASE_FORMAT:
        raise CaseFileError(
            f"{path}: format {found!r} is not one this Stepwise reads ({CASE_FORMAT})",
            file=path,
            field="format",
            code="case_format_unknown",
            hint="upgrade Stepwise, or save the case again with this version",
            params={"format": str(found), "supported": [CASE_FORMAT]},
        )


def _field_error(exc: ValidationError, path: str | Path) -> CaseFileError:
    """The first problem pydantic found, as a `CaseFileError` naming the field (and step)."""
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    where = _where(first["loc"])
    if first["type"] == "missing":
        return CaseFileError(
            f"{path}: {where} lacks the field {str(first['loc'][-1])!r}",
            file=path,
            field=field,
            code="case_field_missing",
            hint="add it, or save the case again with `stepwise test save TASK_ID`",
        )
    return CaseFileError(
        f"{path}: {where}: {first['msg']}",
        file=path,
        field=field,
        hint="fix the field, or save the case again with `stepwise test save TASK_ID`",
        params={"detail": first["msg"]},
    )


def _where(loc: tuple[Any, ...]) -> str:
    """`("steps", 2, "reply")` as "step 3 (steps.2.reply)"; a top-level field by its name."""
    dotted = ".".join(str(part) for part in loc)
    if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
        return f"step {loc[1] + 1} ({dotted})"
    return f"the case ({dotted})" if len(loc) > 1 else "the case"
