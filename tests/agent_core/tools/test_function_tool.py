from __future__ import annotations

import asyncio
import re
import threading
from typing import Annotated

import pytest
from pydantic import BaseModel, Field, ValidationError

from agent_core.errors import ToolError
from agent_core.llms.base import ToolSpec
from agent_core.tools import BaseTool, FunctionTool, ToolMetadata
from agent_core.tools.base import MAX_OUTPUT_CHARS


def get_weather(city: str, days: int = 3, metric: bool = True) -> str:
    """Get the weather forecast for a city.

    Uses the public forecast service.

    Args:
        city (str): The city to forecast,
            for example "Paris".
        days: How many days ahead.

    Returns:
        The forecast as text.
    """
    return f"{city}:{days}:{metric}"


def add(a: int, b: int) -> int:
    return a + b


class Point(BaseModel):
    x: int
    y: int


class Opaque:
    pass


# --- schema and metadata ---------------------------------------------------------------------


def test_schema_comes_from_signature_and_docstring() -> None:
    spec = FunctionTool.from_defaults(get_weather).metadata.to_spec()

    assert spec.parameters["properties"] == {
        "city": {"type": "string", "description": 'The city to forecast, for example "Paris".'},
        "days": {"type": "integer", "default": 3, "description": "How many days ahead."},
        "metric": {"type": "boolean", "default": True},
    }
    assert spec.parameters["required"] == ["city"]


def test_description_is_docstring_text_before_its_sections() -> None:
    tool = FunctionTool.from_defaults(get_weather)

    assert tool.name == "get_weather"
    assert tool.metadata.description == (
        "Get the weather forecast for a city.\n\nUses the public forecast service."
    )


def test_description_without_docstring_is_the_signature() -> None:
    tool = FunctionTool.from_defaults(add)

    assert tool.metadata.description == "add(a: int, b: int)"


def test_name_and_description_overrides() -> None:
    tool = FunctionTool.from_defaults(get_weather, name="forecast", description="Forecast.")

    assert tool.name == "forecast"
    assert tool.metadata.to_spec().name == "forecast"
    assert tool.metadata.description == "Forecast."


def test_to_spec_shape() -> None:
    spec = FunctionTool.from_defaults(add).metadata.to_spec()

    assert isinstance(spec, ToolSpec)
    assert spec.description == "add(a: int, b: int)"
    assert spec.parameters == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }


def test_to_spec_of_a_tool_without_arguments_lists_no_required() -> None:
    def now() -> str:
        return "noon"

    parameters = FunctionTool.from_defaults(now).metadata.to_spec().parameters

    assert parameters["properties"] == {}
    assert parameters["required"] == []


def test_unannotated_parameters_accept_anything() -> None:
    def echo(value, times=2):  # type: ignore[no-untyped-def]
        return value

    props = FunctionTool.from_defaults(echo).metadata.to_spec().parameters["properties"]

    assert props == {"value": {}, "times": {"default": 2}}


def test_annotated_field_description_is_kept() -> None:
    def greet(name: Annotated[str, Field(description="Who to greet.", max_length=5)]) -> str:
        return f"hi {name}"

    tool = FunctionTool.from_defaults(greet)

    assert tool.metadata.to_spec().parameters["properties"]["name"] == {
        "type": "string",
        "description": "Who to greet.",
        "maxLength": 5,
    }


def test_side_effects_flag_is_carried_to_metadata() -> None:
    assert FunctionTool.from_defaults(add).metadata.side_effects is False
    assert FunctionTool.from_defaults(add, side_effects=True).metadata.side_effects is True


@pytest.mark.parametrize(
    ("fn", "star"),
    [(lambda *items: items, "*items"), (lambda **options: options, "**options")],
)
def test_star_arguments_are_rejected(fn, star) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match=re.escape(f"takes {star}, which a JSON schema")):
        FunctionTool.from_defaults(fn, name="star")


def test_lambda_needs_a_name() -> None:
    with pytest.raises(ValidationError, match="pass name="):
        FunctionTool.from_defaults(lambda x: x)


def test_function_tool_is_a_base_tool() -> None:
    assert isinstance(FunctionTool.from_defaults(add), BaseTool)
    with pytest.raises(TypeError):
        BaseTool()  # type: ignore[abstract]


# --- calls ------------------------------------------------------------------------------------


async def test_sync_function_runs_in_a_worker_thread() -> None:
    seen: list[threading.Thread] = []

    def record(x: int) -> int:
        seen.append(threading.current_thread())
        return x * 2

    out = await FunctionTool.from_defaults(record).acall({"x": 21}, call_id="c1")

    assert out.content == "42"
    assert out.is_error is False
    assert out.call_id == "c1"
    assert out.tool_name == "record"
    assert out.args == {"x": 21}
    assert len(seen) == 1
    assert seen[0] is not threading.main_thread()


async def test_non_blocking_sync_function_runs_inline() -> None:
    seen: list[threading.Thread] = []

    def record(x: int) -> int:
        seen.append(threading.current_thread())
        return x * 2

    out = await FunctionTool.from_defaults(record, blocking=False).acall({"x": 21})

    assert out.content == "42"
    assert seen == [threading.current_thread()]


async def test_async_function_is_awaited_on_the_loop() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def fetch(url: str) -> str:
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return f"got {url}"

    out = await FunctionTool.from_defaults(fetch).acall({"url": "u"})

    assert out.content == "got u"
    assert loops == [asyncio.get_running_loop()]


async def test_string_numbers_are_coerced() -> None:
    out = await FunctionTool.from_defaults(add).acall({"a": "3", "b": 4})

    assert out.is_error is False
    assert out.content == "7"
    assert out.args == {"a": "3", "b": 4}  # As the model wrote them...
    assert out.args_used == {"a": 3, "b": 4}  # ...and as the tool got them.


async def test_defaults_fill_recorded_args() -> None:
    out = await FunctionTool.from_defaults(get_weather).acall({"city": "Oslo"})

    assert out.content == "Oslo:3:True"
    assert out.args == {"city": "Oslo"}
    assert out.args_used == {"city": "Oslo", "days": 3, "metric": True}


async def test_dict_and_list_results_are_json() -> None:
    def lookup(key: str) -> dict[str, object]:
        return {"key": key, "tags": ["a", "é"], "n": None}

    out = await FunctionTool.from_defaults(lookup).acall({"key": "k"})

    assert out.content == '{"key": "k", "tags": ["a", "é"], "n": null}'


async def test_wrong_type_is_an_error_naming_the_argument() -> None:
    called: list[object] = []

    def take(a: int, b: int) -> int:
        called.append(a)
        return a + b

    out = await FunctionTool.from_defaults(take).acall({"a": "three", "b": 1}, call_id="c2")

    assert out.is_error is True
    assert out.call_id == "c2"
    assert "`take`" in out.content
    assert "a: Input should be a valid integer" in out.content
    assert "'three'" in out.content
    assert "Expected: take(a: int, b: int)" in out.content
    assert "b:" not in out.content.split("Expected")[0]
    assert out.args == {"a": "three", "b": 1}
    assert called == []


async def test_missing_argument_is_an_error() -> None:
    out = await FunctionTool.from_defaults(get_weather).acall({"days": 2})

    assert out.is_error is True
    assert "city: missing required argument" in out.content
    assert "Expected: get_weather(city: str, days: int = 3, metric: bool = True)" in out.content


async def test_extra_argument_is_an_error() -> None:
    out = await FunctionTool.from_defaults(add).acall({"a": 1, "b": 2, "c": 3})

    assert out.is_error is True
    assert "c: unexpected argument" in out.content


@pytest.mark.parametrize("args", [[1, 2], '{"a": 1, "b": 2}', 5])
async def test_non_object_arguments_are_an_error(args: object) -> None:
    out = await FunctionTool.from_defaults(add).acall(args)  # type: ignore[arg-type]

    assert out.is_error is True
    assert "must be a JSON object" in out.content
    assert type(args).__name__ in out.content
    assert out.args == {}


async def test_none_means_no_arguments() -> None:
    def ping() -> str:
        return "pong"

    out = await FunctionTool.from_defaults(ping).acall(None)  # type: ignore[arg-type]

    assert out.is_error is False
    assert out.content == "pong"


async def test_exception_in_tool_is_an_error_output() -> None:
    def divide(a: int, b: int) -> float:
        return a / b

    out = await FunctionTool.from_defaults(divide).acall({"a": 1, "b": 0})

    assert out.is_error is True
    assert out.content == "Error: divide raised ZeroDivisionError: division by zero"
    assert out.args == {"a": 1, "b": 0}


async def test_exception_in_async_tool_is_an_error_output() -> None:
    async def boom() -> None:
        raise KeyError("missing")

    out = await FunctionTool.from_defaults(boom).acall({})

    assert out.is_error is True
    assert out.content == "Error: boom raised KeyError: 'missing'"


async def test_tool_error_message_goes_to_the_model_as_written() -> None:
    def find(city: str) -> str:
        raise ToolError(f"no city named {city}; try a larger nearby city", tool_name="find")

    out = await FunctionTool.from_defaults(find).acall({"city": "Xyz"})

    assert out.is_error is True
    assert out.content == "Error: find: no city named Xyz; try a larger nearby city"


async def test_cancellation_is_not_swallowed() -> None:
    async def cancelled() -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await FunctionTool.from_defaults(cancelled).acall({})


async def test_long_output_is_truncated() -> None:
    def flood(n: int) -> str:
        return "x" * n

    out = await FunctionTool.from_defaults(flood).acall({"n": MAX_OUTPUT_CHARS + 123})

    assert MAX_OUTPUT_CHARS == 20_000
    assert out.content.startswith("x" * MAX_OUTPUT_CHARS + "\n")
    assert out.content.endswith("[... 123 more characters]")
    assert out.content.count("x") == MAX_OUTPUT_CHARS


async def test_output_at_the_limit_is_kept_whole() -> None:
    def flood(n: int) -> str:
        return "x" * n

    out = await FunctionTool.from_defaults(flood).acall({"n": MAX_OUTPUT_CHARS})

    assert out.content == "x" * MAX_OUTPUT_CHARS


# --- awkward signatures -----------------------------------------------------------------------


async def test_parameters_with_names_pydantic_reserves() -> None:
    def export(json: bool, _draft: str = "d", model_name: str = "m") -> str:
        return f"{json}:{_draft}:{model_name}"

    tool = FunctionTool.from_defaults(export)
    props = tool.metadata.to_spec().parameters["properties"]
    out = await tool.acall({"json": "true", "_draft": "x", "model_name": "n"})

    assert list(props) == ["json", "_draft", "model_name"]
    assert out.content == "True:x:n"
    assert out.args_used == {"json": True, "_draft": "x", "model_name": "n"}


async def test_positional_only_parameters_are_passed_positionally() -> None:
    def power(base: int, exp: int = 2, /) -> int:
        return base**exp

    out = await FunctionTool.from_defaults(power).acall({"base": 3, "exp": "3"})

    assert out.content == "27"


async def test_nested_model_argument_is_validated_and_passed_as_model() -> None:
    def norm1(p: Point) -> int:
        assert isinstance(p, Point)
        return abs(p.x) + abs(p.y)

    tool = FunctionTool.from_defaults(norm1)
    ok = await tool.acall({"p": {"x": -2, "y": "3"}})
    bad = await tool.acall({"p": {"x": 1}})

    assert ok.content == "5"
    assert ok.args_used == {"p": {"x": -2, "y": 3}}
    assert "p.y: missing required argument" in bad.content


@pytest.mark.filterwarnings("ignore::pydantic.json_schema.PydanticJsonSchemaWarning")
async def test_unserialisable_default_and_result_fall_back_to_text() -> None:
    unset = object()

    def pick(key: str, default: object = unset) -> dict[tuple[str, str], object]:
        return {(key, "k"): default is unset}

    out = await FunctionTool.from_defaults(pick).acall({"key": "a"})

    assert out.is_error is False
    assert out.args == {"key": "a"} and out.args_used == {"key": "a", "default": str(unset)}
    assert out.content == "{('a', 'k'): True}"


def test_schema_less_argument_type_is_rejected() -> None:
    def use(thing: Opaque) -> None:
        return None

    with pytest.raises(TypeError, match="'use' has arguments with no JSON schema"):
        FunctionTool.from_defaults(use)


def test_unresolvable_type_hint_is_rejected() -> None:
    def use(thing: NoSuchType) -> None:  # type: ignore[name-defined]  # noqa: F821
        return None

    with pytest.raises(TypeError, match="cannot resolve the type hints of tool 'use'"):
        FunctionTool.from_defaults(use)


async def test_hand_written_metadata() -> None:
    class Args(BaseModel):
        query: str = Field(description="What to search for.")

    async def search(query: str) -> list[str]:
        return [query.upper()]

    tool = FunctionTool(search, ToolMetadata(name="search", fn_schema=Args, side_effects=True))
    out = await tool.acall({"query": "cats"})

    assert tool.fn is search
    assert out.content == '["CATS"]'
    assert tool.metadata.to_spec().parameters["properties"]["query"] == {
        "type": "string",
        "description": "What to search for.",
    }


async def test_arguments_that_were_not_json_say_so() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    out = await FunctionTool.from_defaults(add).acall({"__raw_arguments__": "{a: 1,"})

    assert out.is_error
    assert "were not valid JSON: '{a: 1,'" in out.content
    assert "Expected: add(a: int, b: int)" in out.content
