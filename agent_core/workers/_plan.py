"""A planner's plan: the pydantic models, and the parser that turns a model's reply into one.

A plan is a DAG of items, each handed to one named sub-agent. `parse_plan` accepts the JSON
alone, inside a fenced block, or surrounded by prose, and never raises anything but
`PlanError`: its message lists every problem, quotes the model's raw text and says how to fix
it, because the person who reads it can edit the plan step's input and run it again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Sequence
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)
from pydantic_core import ErrorDetails

from agent_core.errors import StepError

__all__ = [
    "MAX_ITEM_ID_CHARS",
    "MAX_PLAN_ITEMS",
    "PLAN_FORMAT",
    "Plan",
    "PlanError",
    "PlanItem",
    "check_plan",
    "extract_plan_json",
    "parse_plan",
    "topological_order",
    "validate_plan",
]

MAX_PLAN_ITEMS = 20
MAX_ITEM_ID_CHARS = 64
RAW_TEXT_MAX_CHARS = 2_000
# Each '{' in prose is one decode attempt; bound them so a brace-heavy reply stays cheap.
_MAX_OBJECT_CANDIDATES = 100
_ITEM_FIELDS = ("id", "agent", "prompt", "depends_on")

PLAN_FORMAT = (
    '{"plan": [{"id": "<short unique id>", "agent": "<agent name>", '
    '"prompt": "<what the agent must do>", "depends_on": ["<ids of items it needs>"]}]}'
)
"""The JSON shape of a plan, as the model and a person editing it are told."""

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)

ShortId = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_ITEM_ID_CHARS)
]
NonEmptyText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class PlanItem(BaseModel):
    """One unit of work of a plan, done by one sub-agent."""

    # A misspelt key (say "depend_on") would otherwise be dropped and the item would run
    # without the context it needs; an error the person can fix is better.
    model_config = ConfigDict(extra="forbid")

    id: ShortId
    agent: NonEmptyText
    prompt: NonEmptyText
    depends_on: list[ShortId] = Field(default_factory=list)
    """Ids of the items whose results this item needs (it runs after them)."""

    @field_validator("depends_on")
    @classmethod
    def _once_each(cls, value: list[str]) -> list[str]:
        # A dependency listed twice means the same thing as once.
        return list(dict.fromkeys(value))


class Plan(BaseModel):
    """The items of a plan, in the order the model wrote them."""

    plan: list[PlanItem] = Field(min_length=1, max_length=MAX_PLAN_ITEMS)


class PlanError(StepError):
    """The plan is not valid; `problems` lists why and `raw_text` is what was parsed.

    It fails the plan step, which stays editable: give the step a corrected plan JSON as its
    input and run it again.
    """

    def __init__(
        self,
        message: str,
        *,
        raw_text: str = "",
        problems: Sequence[str] = (),
        task_id: str = "",
        step_id: str = "",
    ) -> None:
        super().__init__(message, task_id=task_id, step_id=step_id)
        self.raw_text = raw_text
        self.problems = list(problems)

    @classmethod
    def from_problems(cls, problems: Sequence[str], raw_text: str) -> PlanError:
        """The error for `problems`, quoting `raw_text` and saying how to fix it."""
        shown = raw_text
        if len(shown) > RAW_TEXT_MAX_CHARS:
            cut = len(shown) - RAW_TEXT_MAX_CHARS
            shown = f"{shown[:RAW_TEXT_MAX_CHARS]}… [{cut:,} more characters]"
        message = (
            f"the plan is invalid: {'; '.join(problems)}. To fix it, edit the plan step's input "
            f"with a corrected plan JSON ({PLAN_FORMAT}) and run it again. "
            f"The text that was parsed:\n{shown}"
        )
        return cls(message, raw_text=raw_text, problems=problems)


def parse_plan(text: str, *, agents: Collection[str]) -> Plan:
    """The plan in a model's reply, checked against the known `agents`.

    Args:
        text: The reply: plan JSON alone, in a ```json fence, or with prose around it.
        agents: The names of the sub-agents an item may name.

    Raises:
        PlanError: The text holds no valid plan; the message lists every problem found.
    """
    if not isinstance(text, str):
        raise PlanError.from_problems([f"expected text, got {type(text).__name__}"], repr(text))
    data, problem = extract_plan_json(text)
    if problem is not None:
        raise PlanError.from_problems([problem], text)
    return validate_plan(data, agents=agents, raw_text=text)


def validate_plan(data: Any, *, agents: Collection[str], raw_text: str | None = None) -> Plan:
    """`data` (parsed JSON: `{"plan": [...]}` or the bare list of items) as a checked `Plan`.

    Raises:
        PlanError: The data is not a valid plan; `raw_text` (default: `data` as JSON) is quoted.
    """
    if raw_text is None:
        raw_text = json.dumps(data, ensure_ascii=False, default=str)
    if isinstance(data, list):
        data = {"plan": data}
    if not isinstance(data, dict):
        problem = f'the JSON is {_json_type(data)}, not an object with a "plan" list'
        raise PlanError.from_problems([problem], raw_text)
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        problems = [_describe(error, data) for error in exc.errors()]
        raise PlanError.from_problems(list(dict.fromkeys(problems)), raw_text) from None
    problems = check_plan(plan, agents=agents)
    if problems:
        raise PlanError.from_problems(problems, raw_text)
    return plan


def check_plan(plan: Plan, *, agents: Collection[str]) -> list[str]:
    """What is wrong with a well-formed plan: duplicate ids, unknown agents, bad dependencies."""
    problems: list[str] = []
    ids = [item.id for item in plan.plan]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        problems.append(f"item ids must be unique; repeated: {', '.join(duplicates)}")
    known = ", ".join(sorted(agents)) or "none"
    for item in plan.plan:
        if item.agent not in agents:
            problems.append(f"item {item.id!r} names unknown agent {item.agent!r}; agents: {known}")
        if item.id in item.depends_on:
            problems.append(f"item {item.id!r} depends on itself")
        for dep in item.depends_on:
            if dep not in ids:
                problems.append(f"item {item.id!r} depends on {dep!r}, which is not in the plan")
    if not duplicates:
        cycle = _find_cycle(plan)
        if cycle:
            problems.append(f"the dependencies form a cycle: {' -> '.join(cycle)}")
    return problems


def topological_order(plan: Plan) -> list[PlanItem]:
    """The items in an order where each comes after its dependencies (stable otherwise).

    Raises:
        PlanError: The plan has a cycle or a dependency on an id it does not hold.
    """
    by_id = {item.id: item for item in plan.plan}
    waiting = {item.id: set(item.depends_on) for item in plan.plan}
    dangling = sorted({d for deps in waiting.values() for d in deps} - by_id.keys())
    if dangling:
        problem = f"dependencies on ids not in the plan: {', '.join(dangling)}"
        raise PlanError.from_problems([problem], plan.model_dump_json())
    order: list[PlanItem] = []
    while waiting:
        ready = [i for i, deps in waiting.items() if not deps]
        if not ready:
            cycle = _find_cycle(plan) or sorted(waiting)
            problem = f"the dependencies form a cycle: {' -> '.join(cycle)}"
            raise PlanError.from_problems([problem], plan.model_dump_json())
        for item_id in ready:
            order.append(by_id[item_id])
            del waiting[item_id]
        for deps in waiting.values():
            deps.difference_update(ready)
    return order


def extract_plan_json(text: str) -> tuple[Any, str | None]:
    """(the plan JSON in `text`, None), or (None, what went wrong)."""
    stripped = text.strip()
    if not stripped:
        return None, "the text is empty; expected a JSON object"
    syntax_error: str | None = None
    for candidate in (stripped, *_fenced_blocks(text)):
        value, error = _loads(candidate)
        if error is None:
            return value, None
        if syntax_error is None and candidate.lstrip()[:1] in ("{", "["):
            syntax_error = error
    plan_object, first = _scan_objects(text)
    if plan_object is not None:
        return plan_object, None
    if syntax_error is None and isinstance(first, str):
        syntax_error = first
    if syntax_error is not None:
        return None, f"the JSON is not valid ({syntax_error})"
    if first is not None:
        return first, None
    return None, "the text holds no JSON object"


def _fenced_blocks(text: str) -> Iterator[str]:
    for match in _FENCE.finditer(text):
        yield match.group(1).strip()


def _loads(text: str) -> tuple[Any, str | None]:
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, str(exc)
    except (RecursionError, ValueError) as exc:  # Absurd nesting, or a number too long.
        return None, _decode_failure(exc)


def _scan_objects(text: str) -> tuple[dict[str, Any] | None, dict[str, Any] | str | None]:
    """JSON objects in prose: (the first with a "plan" key, the first object or its error).

    The second value is what decoding at the first '{' gave: the object, or the JSON error
    (so a broken plan is reported as broken, not as one of the item objects inside it).
    """
    decoder = json.JSONDecoder()
    first: dict[str, Any] | str | None = None
    start = text.find("{")
    attempts = 0
    while start != -1 and attempts < _MAX_OBJECT_CANDIDATES:
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            first = first if first is not None else str(exc)
            start = text.find("{", start + 1)
            continue
        except (RecursionError, ValueError) as exc:
            first = first if first is not None else _decode_failure(exc)
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict) and "plan" in value:
            return value, first
        first = first if first is not None else value
        start = text.find("{", end)
    return None, first


def _decode_failure(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "it is nested too deeply"
    return str(exc)


def _find_cycle(plan: Plan) -> list[str] | None:
    """One dependency cycle as a path that ends where it starts (self-loops excluded)."""
    edges = {item.id: [d for d in item.depends_on if d != item.id] for item in plan.plan}
    done: set[str] = set()
    for root in edges:
        if root in done:
            continue
        path: list[str] = [root]
        on_path = {root}
        stack = [iter(edges[root])]
        while stack:
            dep = next(stack[-1], None)
            if dep is None:
                stack.pop()
                finished = path.pop()
                on_path.discard(finished)
                done.add(finished)
                continue
            if dep in on_path:
                return [*path[path.index(dep) :], dep]
            if dep in done or dep not in edges:
                continue
            path.append(dep)
            on_path.add(dep)
            stack.append(iter(edges[dep]))
    return None


def _describe(error: ErrorDetails, data: dict[str, Any]) -> str:
    """One pydantic error as a sentence naming the field (and the item's id when known)."""
    loc, kind = error["loc"], error["type"]
    if loc == ("plan",):
        return _describe_plan_list(kind, data, error["msg"])
    if kind in ("missing", "extra_forbidden"):
        where = _location(loc[:-1], data)
        if kind == "missing":
            return f"{where}: missing field {loc[-1]!r}"
        return f"{where}: unknown field {loc[-1]!r} (an item has only {', '.join(_ITEM_FIELDS)})"
    where = _location(loc, data)
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{where}: expected an object with {', '.join(_ITEM_FIELDS)}"
    if kind == "string_too_short":
        return f"{where}: is empty"
    if kind == "string_too_long":
        return f"{where}: longer than {MAX_ITEM_ID_CHARS} characters; use a short id"
    return f"{where}: {error['msg']}"


def _describe_plan_list(kind: str, data: dict[str, Any], msg: str) -> str:
    items = data.get("plan")
    if kind == "missing":
        return f'the JSON object has no "plan" key (keys: {", ".join(map(str, data)) or "none"})'
    if kind == "too_short":
        return "the plan has no items; it needs at least one"
    if kind == "too_long" and isinstance(items, list):
        return f"the plan has {len(items)} items; at most {MAX_PLAN_ITEMS} are allowed"
    if kind == "list_type":
        return f'"plan" must be a list of items, not {_json_type(items)}'
    return f"plan: {msg}"


def _location(loc: tuple[int | str, ...], data: dict[str, Any]) -> str:
    text = str(loc[0]) if loc else "plan"
    for part in loc[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    if len(loc) >= 2 and isinstance(loc[1], int):
        items = data.get("plan")
        item = items[loc[1]] if isinstance(items, list) and loc[1] < len(items) else None
        if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"].strip():
            text += f" (item {item['id'].strip()[:MAX_ITEM_ID_CHARS]!r})"
    return text


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"
