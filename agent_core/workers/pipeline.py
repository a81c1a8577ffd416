"""`Pipeline`: a small DAG of named callables, each fed by the outputs it names.

```python
pipeline = (
    Pipeline(args=("input",))
    .add("query", lambda text: text.strip(), inputs={"text": "input"})
    .add("docs", search, inputs={"query": "query"})
    .add("answer", write_answer, inputs={"question": "query", "docs": "docs"})
)
result = await pipeline.arun(input="  llamas?  ")
result.output            # what the last component returned
result.runs              # each component's inputs, output and latency, in the order they ran
```

`inputs` maps a parameter of the callable to where its value comes from: one of the pipeline's
`args` (given to `arun`) or another component's output. Everything that can be wrong with that
wiring (an unknown name, a cycle, a required parameter left unfed, a parameter the callable does
not have) is a `PipelineBuildError` from `build()`, before anything runs. A parameter's type
annotation is checked (and coerced, as pydantic does) when the value arrives. Components run one
at a time in topological order (ties in the order they were added); sync callables run in a
worker thread, so a slow one does not stall the event loop. A component may be an agent
(`BaseAgentWorker`): it runs a whole task on its input and returns the answer.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from agent_core.errors import StepError, UserError
from agent_core.types import ComponentRun

if TYPE_CHECKING:
    from agent_core.workers.base import BaseAgentWorker

__all__ = [
    "ComponentError",
    "ComponentRun",
    "Pipeline",
    "PipelineBuildError",
    "PipelineResult",
    "agent_component",
]

MAX_RECORDED_CHARS = 4_000
"""A recorded input or output longer than this (as JSON) is cut: records are stored per step."""


class PipelineBuildError(UserError):
    """A pipeline's wiring is wrong: an unknown name, a cycle, or a parameter left unfed."""


class ComponentError(StepError):
    """A component failed (raised, or got a value of the wrong type); it names the component.

    Attributes:
        component: The failing component's name.
    """

    def __init__(self, message: str = "", *, component: str = "") -> None:
        # Defaults, because the runner copies the error (`copy.copy` calls `cls(*args)`).
        super().__init__(message, remedy="edit_step")
        self.component = component


@dataclass
class PipelineResult:
    """What one run of a pipeline produced."""

    outputs: dict[str, Any]
    """Each component's output, by name (the live objects, not the records)."""
    runs: list[ComponentRun]
    """Each component's record, in the order they ran."""
    last: str
    """The name of the component that ran last."""

    @property
    def output(self) -> Any:
        """The last component's output."""
        return self.outputs[self.last]


def _recorded(value: Any) -> Any:
    """`value` as JSON that a step's record can store, cut if long."""
    try:
        plain = to_jsonable_python(value)
        text = json.dumps(plain, ensure_ascii=False)
    except (TypeError, ValueError):  # pydantic's PydanticSerializationError is a ValueError.
        plain = text = repr(value)
    if len(text) <= MAX_RECORDED_CHARS:
        return plain
    return text[: MAX_RECORDED_CHARS - 1] + "…"


def _is_async(fn: Callable[..., Any]) -> bool:
    # An object whose __call__ is async counts too (inspect does not look there for it).
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(type(fn), "__call__", None)  # noqa: B004 - reads the method, not callability
    )


def _parameter_types(fn: Callable[..., Any]) -> dict[str, Any]:
    """The callable's parameter annotations, resolved; {} when they cannot be."""
    target = fn if inspect.isroutine(fn) else getattr(fn, "__call__", fn)  # noqa: B004
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # A forward reference that does not resolve: check nothing.
        return {}
    hints.pop("return", None)
    return hints


@dataclass
class _Component:
    name: str
    fn: Callable[..., Any]
    inputs: dict[str, str]
    adapters: dict[str, TypeAdapter[Any]] = field(default_factory=dict)

    async def call(self, values: Mapping[str, Any]) -> Any:
        kwargs = {
            param: self._checked(param, values[source]) for param, source in self.inputs.items()
        }
        try:
            if _is_async(self.fn):
                return await self.fn(**kwargs)
            result = await asyncio.to_thread(self.fn, **kwargs)
            return await result if inspect.isawaitable(result) else result
        except StepError as exc:
            if isinstance(exc, ComponentError):
                raise  # A sub-pipeline's error already names its component.
            raise self._error(exc) from exc
        except Exception as exc:
            raise self._error(exc) from exc

    def _checked(self, param: str, value: Any) -> Any:
        adapter = self.adapters.get(param)
        if adapter is None:
            return value
        try:
            checked = adapter.validate_python(value)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]["msg"]
            raise ComponentError(
                f"pipeline component {self.name!r} got the wrong type for {param!r} "
                f"(from {self.inputs[param]!r}): {first}",
                component=self.name,
            ) from None
        # Validation copies containers: hand over the value itself when it needed no coercion,
        # so a component can update the `state` dict it was given.
        return value if type(checked) is type(value) and checked == value else checked

    def _error(self, exc: BaseException) -> ComponentError:
        return ComponentError(
            f"pipeline component {self.name!r} failed: {type(exc).__name__}: {exc}",
            component=self.name,
        )


class Pipeline:
    """A DAG of named components; see the module docstring.

    Args:
        args: The names of the values `arun` takes, which components read as inputs.
    """

    def __init__(self, args: Sequence[str] = ()) -> None:
        self.args = tuple(args)
        if len(set(self.args)) != len(self.args):
            raise PipelineBuildError(f"pipeline args must be unique, got {list(self.args)}")
        self._components: dict[str, _Component] = {}
        self._order: list[str] | None = None

    @property
    def names(self) -> list[str]:
        """The components' names, in the order they were added."""
        return list(self._components)

    def add(
        self,
        name: str,
        fn: Callable[..., Any] | BaseAgentWorker,
        *,
        inputs: Mapping[str, str] | None = None,
    ) -> Pipeline:
        """Add component `name`: `fn` called with `inputs` (parameter -> source name).

        Returns the pipeline, so that calls chain.

        Raises:
            PipelineBuildError: The name is taken, or `inputs` does not fit `fn`'s signature.
        """
        if not name or name in self._components or name in self.args:
            taken = "is empty" if not name else "is taken"
            raise PipelineBuildError(f"component name {name!r} {taken}; give each a unique name")
        fn = _as_callable(fn)
        wiring = dict(inputs or {})
        _check_signature(name, fn, wiring)
        types = _parameter_types(fn)
        adapters = {p: TypeAdapter(types[p]) for p in wiring if p in types and types[p] is not Any}
        self._components[name] = _Component(name, fn, wiring, adapters)
        self._order = None
        return self

    def build(self) -> Pipeline:
        """Check the wiring and fix the run order; returns the pipeline.

        Raises:
            PipelineBuildError: No components, an input names nothing, or the inputs form a cycle.
        """
        if not self._components:
            raise PipelineBuildError("the pipeline has no components; add one with .add(...)")
        known = set(self.args) | set(self._components)
        for component in self._components.values():
            for param, source in component.inputs.items():
                if source not in known:
                    raise PipelineBuildError(
                        f"component {component.name!r} reads {param!r} from {source!r}, which is "
                        f"neither a component nor an arg (components: {self.names}; "
                        f"args: {list(self.args)})"
                    )
        self._order = self._topological_order()
        return self

    def _topological_order(self) -> list[str]:
        waiting = {
            name: {s for s in c.inputs.values() if s in self._components}
            for name, c in self._components.items()
        }
        order: list[str] = []
        while waiting:
            ready = [name for name, deps in waiting.items() if not deps]
            if not ready:
                raise PipelineBuildError(
                    f"the components {sorted(waiting)} feed each other in a cycle; a pipeline "
                    "must be a DAG (keep values that carry across steps in the task's state)"
                )
            for name in ready:
                order.append(name)
                del waiting[name]
            for deps in waiting.values():
                deps.difference_update(ready)
        return order

    async def arun(self, **args: Any) -> PipelineResult:
        """Run every component once, in topological order.

        Raises:
            PipelineBuildError: The wiring is wrong, or `args` are not the pipeline's `args`.
            ComponentError: A component raised, or got a value of the wrong type.
        """
        order = self._order or self.build()._order or []
        if set(args) != set(self.args):
            raise PipelineBuildError(
                f"the pipeline takes args {sorted(self.args)}, got {sorted(args)}"
            )
        values: dict[str, Any] = dict(args)
        runs: list[ComponentRun] = []
        for name in order:
            component = self._components[name]
            # Recorded before the call: a component may update what it was given.
            inputs = {p: _recorded(values[s]) for p, s in component.inputs.items()}
            started = time.perf_counter()
            values[name] = await component.call(values)
            runs.append(
                ComponentRun(
                    name=name,
                    inputs=inputs,
                    output=_recorded(values[name]),
                    latency_ms=(time.perf_counter() - started) * 1000,
                )
            )
        return PipelineResult(
            outputs={name: values[name] for name in order}, runs=runs, last=order[-1]
        )


def _check_signature(name: str, fn: Callable[..., Any], wiring: Mapping[str, str]) -> None:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        raise PipelineBuildError(
            f"component {name!r}: cannot read the signature of {fn!r}; wrap it in a function"
        ) from None
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    unknown = [p for p in wiring if p not in params and not takes_any]
    if unknown:
        raise PipelineBuildError(
            f"component {name!r} has no parameter {unknown[0]!r} (it takes {list(params)})"
        )
    positional = [
        p for p in wiring if p in params and params[p].kind is inspect.Parameter.POSITIONAL_ONLY
    ]
    if positional:
        raise PipelineBuildError(
            f"component {name!r}: parameter {positional[0]!r} is positional-only; wrap the "
            "callable in a function with keyword parameters"
        )
    required = [
        p.name
        for p in params.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    missing = [p for p in required if p not in wiring]
    if missing:
        raise PipelineBuildError(
            f"component {name!r} needs an input for {missing[0]!r}: add it to inputs, e.g. "
            f'inputs={{"{missing[0]}": "<component or arg>"}}'
        )


def _as_callable(fn: Callable[..., Any] | BaseAgentWorker) -> Callable[..., Any]:
    from agent_core.workers.base import BaseAgentWorker

    if isinstance(fn, BaseAgentWorker):
        return agent_component(fn)
    if not callable(fn):
        raise PipelineBuildError(f"a component must be callable or an agent, got {fn!r}")
    return fn


def agent_component(worker: BaseAgentWorker) -> Callable[..., Any]:
    """A component that runs a whole task of `worker` on its `input` and returns the answer.

    Each call is a fresh task in memory, so the sub-agent keeps nothing between steps and
    undoing the step that called it leaves nothing behind.
    """

    async def run_agent(input: str) -> str:
        from agent_core.runtime.runner import AgentRunner

        return (await AgentRunner(worker).achat(input)).response

    run_agent.__name__ = f"agent_{type(worker).__name__}"
    return run_agent
