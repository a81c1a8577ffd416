"""Tools an agent can call: what the model is told about them, and how a call runs.

A tool never raises at the model: bad arguments and exceptions inside the tool come back as a
`ToolOutput` with `is_error=True` and a message the model can read and act on.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PydanticUserError,
    ValidationError,
    create_model,
    field_validator,
)
from pydantic_core import ErrorDetails, PydanticSerializationError, PydanticUndefined

from agent_core.effects import IrreversibleEffect, StepContext, current_step, record_effect
from agent_core.errors import ToolError
from agent_core.llms.base import RAW_TOOL_ARGUMENTS, ToolSpec
from agent_core.types import ToolOutput

__all__ = ["MAX_OUTPUT_CHARS", "BaseTool", "FunctionTool", "ToolMetadata"]

logger = logging.getLogger(__name__)

MAX_OUTPUT_CHARS = 20_000
"""Longest tool output kept; beyond it the content is cut, so one tool cannot flood the prompt."""

_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SECTION_RE = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Returns?|Yields?|Raises"
    r"|Examples?|Notes?|Attributes|Warnings?|See Also|Todo|References):\s*$"
)
_ARG_SECTIONS = frozenset(
    {"Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments"}
)
_ARG_RE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class ToolMetadata(BaseModel):
    """What a model is told about a tool, and whether calling it changes the world."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    fn_schema: type[BaseModel]
    """The pydantic model of the tool's arguments."""
    side_effects: bool = False
    """Whether a call changes something outside the agent (sends mail, writes a file)."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        # The subset of names every provider accepts (OpenAI, Anthropic: ^[a-zA-Z0-9_-]{1,64}$).
        if not _NAME_RE.match(name):
            raise ValueError(
                f"tool name {name!r} is not allowed: use 1-64 letters, digits, '_' or '-'"
                " (pass name=... for a lambda or a callable object)"
            )
        return name

    def to_spec(self) -> ToolSpec:
        """The tool as a model sees it: name, description and a JSON schema of the arguments."""
        schema = self.fn_schema.model_json_schema()
        schema.pop("title", None)
        properties = schema.pop("properties", {})
        for prop in properties.values():
            prop.pop("title", None)
        required = schema.pop("required", [])
        schema.pop("type", None)
        parameters = {"type": "object", "properties": properties, "required": required, **schema}
        return ToolSpec(name=self.name, description=self.description, parameters=parameters)


class BaseTool(ABC):
    """A tool an agent can call; subclasses describe it and run one call."""

    @property
    @abstractmethod
    def metadata(self) -> ToolMetadata:
        """The tool's name, description and argument schema."""

    @property
    def name(self) -> str:
        """The name the model calls the tool by."""
        return self.metadata.name

    @abstractmethod
    async def acall(self, args: dict[str, Any], *, call_id: str = "") -> ToolOutput:
        """Run one call with the model's `args`; failures come back as `is_error` outputs."""


class FunctionTool(BaseTool):
    """A tool that calls a Python function, sync or async, with validated arguments."""

    def __init__(
        self, fn: Callable[..., Any], metadata: ToolMetadata, *, blocking: bool = True
    ) -> None:
        """Wrap `fn`, whose keyword arguments `metadata.fn_schema` describes.

        Args:
            fn: The function to call.
            metadata: The tool's description; prefer `from_defaults` to build it.
            blocking: Run a sync `fn` in a worker thread, so that it cannot stall other
                steps or streaming. Pass False for quick pure functions (arithmetic,
                parsing): a thread hop costs about 0.2 ms, more than such a call.
        """
        self._fn = fn
        self._blocking = blocking
        self._metadata = metadata
        self._is_async = _is_async_callable(fn)
        self._positional_only = _positional_only_names(fn)

    @classmethod
    def from_defaults(
        cls,
        fn: Callable[..., Any],
        name: str | None = None,
        description: str | None = None,
        *,
        side_effects: bool = False,
        blocking: bool = True,
    ) -> FunctionTool:
        """Build a tool from a function's signature, type hints and Google-style docstring.

        Args:
            fn: The function to call.
            name: The tool's name; defaults to the function's name.
            description: What the model is told the tool does; defaults to the docstring's text
                before its first section (`Args:`...), or the signature without one.
            side_effects: Whether a call changes something outside the agent.
            blocking: Run a sync `fn` in a worker thread (see `FunctionTool`); False runs it
                inline on the event loop.

        Raises:
            TypeError: `fn` takes `*args` or `**kwargs`, or has a type hint pydantic cannot
                turn into a JSON schema.
        """
        tool_name = name or getattr(fn, "__name__", type(fn).__name__)
        summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        fn_schema = _build_fn_schema(fn, tool_name, arg_docs)
        metadata = ToolMetadata(
            name=tool_name,
            description=description or summary or f"{tool_name}{_signature(fn_schema)}",
            fn_schema=fn_schema,
            side_effects=side_effects,
        )
        return cls(fn, metadata, blocking=blocking)

    @property
    def metadata(self) -> ToolMetadata:
        """The tool's name, description and argument schema."""
        return self._metadata

    @property
    def fn(self) -> Callable[..., Any]:
        """The wrapped function."""
        return self._fn

    async def acall(self, args: dict[str, Any], *, call_id: str = "") -> ToolOutput:
        """Validate `args` against the schema, run the function and return what it gave.

        `None` counts as no arguments. Anything but a JSON object, arguments that do not fit the
        schema, and exceptions the function raises all give an output with `is_error=True`.
        """
        raw: object = {} if args is None else args
        if not isinstance(raw, Mapping):
            return self._error(
                f"Error: arguments for tool `{self.name}` must be a JSON object, got"
                f" {type(raw).__name__} {_short_repr(raw)}."
                f" Expected: {self.name}{_signature(self.metadata.fn_schema)}",
                call_id=call_id,
            )
        raw_args = dict(raw)
        if set(raw_args) == {RAW_TOOL_ARGUMENTS}:
            return self._error(
                f"Error: the arguments for tool `{self.name}` were not valid JSON: "
                f"{_short_repr(raw_args[RAW_TOOL_ARGUMENTS])}. Send a JSON object. "
                f"Expected: {self.name}{_signature(self.metadata.fn_schema)}",
                call_id=call_id,
            )
        try:
            validated = self.metadata.fn_schema.model_validate(raw_args)
        except ValidationError as exc:
            return self._error(self._invalid_args_message(exc), args=raw_args, call_id=call_id)
        call_args = _jsonable_args(validated)
        step = current_step()
        effects_before = len(step.effects) if step else 0
        try:
            result = await self._run(validated)
        except ToolError as exc:
            # A ToolError is the tool author's refusal, made before acting (a path outside
            # the workspace, say): nothing to undo, so no warning. Its type name is noise.
            content = f"Error: {self.name}: {exc}"
            return self._error(content, args=raw_args, used=call_args, call_id=call_id)
        except Exception as exc:
            logger.debug("tool %s raised", self.name, exc_info=True)
            self._note_unjournaled_effects(step, effects_before, call_args)  # It may have acted.
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            content = f"Error: {self.name} raised {detail}"
            return self._error(content, args=raw_args, used=call_args, call_id=call_id)
        self._note_unjournaled_effects(step, effects_before, call_args)
        written = _storable(raw_args)
        return ToolOutput(
            tool_name=self.name,
            args=written,
            args_used=None if call_args == written else call_args,
            content=_truncate(_format_result(result)),
            call_id=call_id,
        )

    async def _run(self, validated: BaseModel) -> Any:
        fields = type(validated).model_fields
        kwargs = {field.alias or key: getattr(validated, key) for key, field in fields.items()}
        positional = [kwargs.pop(name) for name in self._positional_only if name in kwargs]
        if self._is_async:
            return await self._fn(*positional, **kwargs)
        if self._blocking:
            result = await asyncio.to_thread(self._fn, *positional, **kwargs)
        else:
            result = self._fn(*positional, **kwargs)
        # A sync wrapper around an async function hands back a coroutine still to run.
        return await result if inspect.isawaitable(result) else result

    def _note_unjournaled_effects(
        self, step: StepContext | None, effects_before: int, call_args: dict[str, Any]
    ) -> None:
        # A tool with side effects that journaled none of them cannot be undone: say so.
        if self.metadata.side_effects and step and len(step.effects) == effects_before:
            description = f"called with {json.dumps(call_args, default=str)[:200]}"
            record_effect(IrreversibleEffect(tool=self.name, description=description))

    def _invalid_args_message(self, exc: ValidationError) -> str:
        problems = "\n".join(f"  - {_describe_error(error)}" for error in exc.errors())
        return (
            f"Error: invalid arguments for tool `{self.name}`:\n{problems}\n"
            f"Expected: {self.name}{_signature(self.metadata.fn_schema)}"
        )

    def _error(
        self,
        content: str,
        *,
        args: dict[str, Any] | None = None,
        used: dict[str, Any] | None = None,
        call_id: str,
    ) -> ToolOutput:
        written = _storable(args or {})
        return ToolOutput(
            tool_name=self.name,
            args=written,
            args_used=None if used is None or used == written else used,
            content=_truncate(content),
            is_error=True,
            call_id=call_id,
        )


def _storable(args: Mapping[Any, Any]) -> dict[str, Any]:
    """Rejected arguments as they can be stored: text keys, JSON values (others as repr)."""
    text_keys = {str(key): value for key, value in args.items()}
    return json.loads(json.dumps(text_keys, default=repr).encode("utf-8", "replace"))


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its text before any section, and `Args:` entries."""
    summary: list[str] = []
    arg_docs: dict[str, str] = {}
    section: str | None = None
    entry_indent: int | None = None
    current: str | None = None
    for line in doc.splitlines():
        if header := _SECTION_RE.match(line):
            section, entry_indent, current = header.group(1), None, None
        elif section is None:
            summary.append(line)
        elif section in _ARG_SECTIONS and line.strip():
            indent = len(line) - len(line.lstrip())
            entry_indent = indent if entry_indent is None else entry_indent
            entry = _ARG_RE.match(line.strip())
            if indent <= entry_indent and entry:
                name, text = entry.group(1, 2)
                arg_docs[name], current = text.strip(), name
            elif current is not None:
                arg_docs[current] = f"{arg_docs[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), arg_docs


def _build_fn_schema(
    fn: Callable[..., Any], tool_name: str, arg_docs: dict[str, str]
) -> type[BaseModel]:
    """A pydantic model of `fn`'s arguments, which forbids arguments `fn` does not take."""
    try:
        # eval_str resolves `from __future__ import annotations` hints like get_type_hints, and
        # unlike it also works for functools.partial and callable objects.
        signature = inspect.signature(fn, eval_str=True)
    except (NameError, SyntaxError) as exc:
        raise TypeError(f"cannot resolve the type hints of tool {tool_name!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    for index, param in enumerate(signature.parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise TypeError(
                f"tool {tool_name!r} takes {star}{param.name}, which a JSON schema cannot"
                " describe: give the function named parameters"
            )
        annotation = Any if param.annotation is param.empty else param.annotation
        field_kwargs: dict[str, Any] = {}
        if param.default is not param.empty:
            field_kwargs["default"] = param.default
        if param.name in arg_docs:
            field_kwargs["description"] = arg_docs[param.name]
        key = param.name
        if key.startswith("_") or hasattr(BaseModel, key) or key.startswith("model_"):
            # Pydantic reserves these names; the model still sees and sends the real one.
            key, field_kwargs["alias"] = f"arg{index}_", param.name
        fields[key] = (annotation, Field(**field_kwargs))
    try:
        model = create_model(f"{tool_name}_args", __config__=ConfigDict(extra="forbid"), **fields)
        model.model_json_schema()
    except PydanticUserError as exc:
        raise TypeError(f"tool {tool_name!r} has arguments with no JSON schema: {exc}") from exc
    return model


def _is_async_callable(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    )


def _positional_only_names(fn: Callable[..., Any]) -> list[str]:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature take keywords or fail loudly
        return []
    return [p.name for p in parameters if p.kind is p.POSITIONAL_ONLY]


def _signature(fn_schema: type[BaseModel]) -> str:
    """The call the schema accepts, as Python: `(city: str, days: int = 3)`."""
    parts = []
    for key, field in fn_schema.model_fields.items():
        part = f"{field.alias or key}: {inspect.formatannotation(field.annotation)}"
        if field.default_factory is not None:
            part += " = ..."
        elif field.default is not PydanticUndefined:
            part += f" = {_short_repr(field.default)}"
        parts.append(part)
    return f"({', '.join(parts)})"


def _describe_error(error: ErrorDetails) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "arguments"
    if error["type"] == "missing":
        return f"{where}: missing required argument"
    if error["type"] == "extra_forbidden":
        return f"{where}: unexpected argument"
    return f"{where}: {error['msg']} (got {_short_repr(error['input'])})"


def _jsonable_args(validated: BaseModel) -> dict[str, Any]:
    try:
        return validated.model_dump(mode="json", by_alias=True)
    except PydanticSerializationError:
        # A default the schema cannot serialise (a sentinel object): record it as text.
        return json.loads(json.dumps(validated.model_dump(by_alias=True), default=str))


def _format_result(result: Any) -> str:
    if isinstance(result, dict | list):
        try:
            return json.dumps(result, default=str, ensure_ascii=False)
        except (TypeError, ValueError):  # non-string keys, circular references
            return str(result)
    return str(result)


def _truncate(content: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    if len(content) <= limit:
        return content
    return f"{content[:limit]}\n[... {len(content) - limit} more characters]"


def _short_repr(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."
