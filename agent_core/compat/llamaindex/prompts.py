"""LlamaIndex 0.12's `PromptTemplate`: a text with `{variables}`, some of them filled early.

Code that customises an agent's prompt builds one, fixes some of its variables with
`partial_format`, and hands it to `ReActAgent.update_prompts`; the agent fills the rest
(`{tool_desc}`, `{tool_names}`) itself when it builds each request.

Formatting follows LlamaIndex's: a `{name}` with no value is left as it is, for a later
`format` to fill, and nothing else in the text is touched (`{{` stays `{{`, a JSON example
stays as written).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from agent_core.llms.base import ChatMessage

__all__ = ["PromptTemplate", "format_string", "get_template_vars"]

_VARIABLE = re.compile(r"\{([^{}]+)\}")


class OutputParser(Protocol):
    """What a template asks of LlamaIndex's `output_parser`: it may rewrite the prompt."""

    def format(self, prompt: str) -> str:
        """The prompt with the parser's format instructions."""
        ...


def format_string(template: str, **values: Any) -> str:
    """`template` with each `{name}` that `values` has replaced; every other brace kept."""

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        return str(values[name]) if name in values else match.group(0)

    return _VARIABLE.sub(value_of, template)


def get_template_vars(template: str) -> list[str]:
    """The variables of `template`, in order: each `{name}` whose name is an identifier.

    Braces around anything else (a JSON example in the prompt) are text, not a variable.
    """
    return [name for name in _VARIABLE.findall(template) if name.isidentifier()]


class PromptTemplate:
    """A prompt text whose `{variables}` are filled by `format`, some fixed by `partial_format`.

    Args:
        template: The text, with `{name}` where a value goes.
        prompt_type: LlamaIndex's kind of prompt (its `PromptType` values are strings),
            kept in `metadata["prompt_type"]`.
        output_parser: An object whose `format(prompt)` rewrites the formatted prompt.
        metadata: Anything to keep with the template.
        template_var_mappings: Renames: a value given under a key is used for the
            variable the key maps to.
        function_mappings: Variables computed when formatting: each function gets the
            values given so far and returns the variable's text.
        **kwargs: Values fixed now, as `partial_format` fixes them.
    """

    def __init__(
        self,
        template: str,
        prompt_type: str = "custom",
        output_parser: OutputParser | None = None,
        metadata: dict[str, Any] | None = None,
        template_var_mappings: dict[str, str] | None = None,
        function_mappings: dict[str, Callable[..., Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(template, str):
            raise TypeError(f"a PromptTemplate's template is a str, got {type(template).__name__}")
        self.template = template
        self.template_vars = get_template_vars(template)
        self.kwargs: dict[str, Any] = dict(kwargs)
        self.metadata: dict[str, Any] = {**(metadata or {}), "prompt_type": prompt_type}
        self.output_parser = output_parser
        self.template_var_mappings: dict[str, str] = dict(template_var_mappings or {})
        self.function_mappings: dict[str, Callable[..., Any]] = dict(function_mappings or {})

    def __repr__(self) -> str:
        fixed = f", fixed={sorted(self.kwargs)}" if self.kwargs else ""
        return f"PromptTemplate({self.template!r}{fixed})"

    def partial_format(self, **kwargs: Any) -> PromptTemplate:
        """A new template with these variables fixed; this one is left as it was."""
        prompt = copy.copy(self)
        prompt.kwargs = {**self.kwargs, **kwargs}
        prompt.metadata = dict(self.metadata)
        return prompt

    def format(
        self,
        llm: object = None,
        completion_to_prompt: Callable[[str], str] | None = None,
        **kwargs: Any,
    ) -> str:
        """The text with the fixed values and `kwargs` filled in (`kwargs` win).

        Variables with no value stay as `{name}`. `llm` is LlamaIndex's and unused.
        """
        prompt = format_string(self.template, **self._values({**self.kwargs, **kwargs}))
        if self.output_parser is not None:
            prompt = self.output_parser.format(prompt)
        if completion_to_prompt is not None:
            prompt = completion_to_prompt(prompt)
        return prompt

    def format_messages(self, llm: object = None, **kwargs: Any) -> list[ChatMessage]:
        """The formatted text as one user message, as LlamaIndex sends a text prompt."""
        return [ChatMessage(role="user", content=self.format(**kwargs))]

    def get_template(self, llm: object = None) -> str:
        """The text as written, before any value is filled in."""
        return self.template

    def _values(self, given: Mapping[str, Any]) -> dict[str, Any]:
        # LlamaIndex's order: functions first (they see the values given), then renames.
        values = {name: fn(**given) for name, fn in self.function_mappings.items()}
        values.update({k: v for k, v in given.items() if k not in values})
        return {self.template_var_mappings.get(k, k): v for k, v in values.items()}
