"""Test prompts.

Ported from LlamaIndex (llama-index-core 0.12, `tests/prompts/test_base.py` and
`tests/prompts/test_format_string.py`) by changing imports and the least spelling possible;
every change is marked `# stepwise:`. Stepwise provides `PromptTemplate` only, the template
LlamaIndex's agents take: the tests of `ChatPromptTemplate` and `SelectorPromptTemplate`
(`test_chat_template`, `test_chat_template_output_parser`, `test_selector_template`, and the
chat halves of `test_template_var_mappings` and `test_function_mappings`) are not ported.
"""

from typing import Any

import pytest

# stepwise: imports from agent_core
from agent_core.compat.llamaindex.prompts import PromptTemplate, format_string
from agent_core.llms import ChatMessage, MessageRole


class MockOutputParser:  # stepwise: no BaseOutputParser base; a template needs only format()
    """Mock output parser."""

    def __init__(self, format_string: str) -> None:
        self._format_string = format_string

    def parse(self, output: str) -> Any:
        return {"output": output}

    def format(self, query: str) -> str:
        return query + "\n" + self._format_string


@pytest.fixture()
def output_parser() -> MockOutputParser:
    return MockOutputParser(format_string="output_instruction")


def test_template() -> None:
    """Test partial format."""
    prompt_txt = "hello {text} {foo}"
    prompt = PromptTemplate(prompt_txt)

    prompt_fmt = prompt.partial_format(foo="bar")
    assert isinstance(prompt_fmt, PromptTemplate)

    assert prompt_fmt.format(text="world") == "hello world bar"

    assert prompt_fmt.format_messages(text="world") == [
        ChatMessage(content="hello world bar", role=MessageRole.USER)
    ]


def test_template_output_parser(output_parser: MockOutputParser) -> None:
    prompt_txt = "hello {text} {foo}"
    prompt = PromptTemplate(prompt_txt, output_parser=output_parser)

    prompt_fmt = prompt.format(text="world", foo="bar")
    assert prompt_fmt == "hello world bar\noutput_instruction"


def test_template_var_mappings() -> None:
    """Test template variable mappings."""
    qa_prompt_tmpl = """\
Here's some context:
{foo}
Given the context, please answer the final question:
{bar}
"""
    template_var_mappings = {
        "context_str": "foo",
        "query_str": "bar",
    }
    # try regular prompt template
    qa_prompt = PromptTemplate(qa_prompt_tmpl, template_var_mappings=template_var_mappings)
    fmt_prompt = qa_prompt.format(query_str="abc", context_str="def")
    assert (
        fmt_prompt
        == """\
Here's some context:
def
Given the context, please answer the final question:
abc
"""
    )
    # try partial format
    qa_prompt_partial = qa_prompt.partial_format(query_str="abc2")
    fmt_prompt_partial = qa_prompt_partial.format(context_str="def2")
    assert (
        fmt_prompt_partial
        == """\
Here's some context:
def2
Given the context, please answer the final question:
abc2
"""
    )


def test_function_mappings() -> None:
    """Test function mappings."""
    test_prompt_tmpl = """foo bar {abc} {xyz}"""

    ## PROMPT 1
    # test a format function that uses values of both abc and def
    def _format_abc(**kwargs: Any) -> str:
        """Given kwargs, output formatted variable."""
        return f"{kwargs['abc']}-{kwargs['xyz']}"

    test_prompt = PromptTemplate(test_prompt_tmpl, function_mappings={"abc": _format_abc})
    assert test_prompt.format(abc="123", xyz="456") == "foo bar 123-456 456"

    # test partial
    test_prompt_partial = test_prompt.partial_format(xyz="456")
    assert test_prompt_partial.format(abc="789") == "foo bar 789-456 456"

    ## PROMPT 2
    # test a format function that only depends on values of xyz
    def _format_abc_2(**kwargs: Any) -> str:
        """Given kwargs, output formatted variable."""
        return f"{kwargs['xyz']}"

    test_prompt_2 = PromptTemplate(test_prompt_tmpl, function_mappings={"abc": _format_abc_2})
    assert test_prompt_2.format(xyz="456") == "foo bar 456 456"

    # test that formatting abc itself will throw an error
    with pytest.raises(KeyError):
        test_prompt_2.format(abc="123")

    ## PROMPT 3 - test prompt with template var mappings
    def _format_prompt_key1(**kwargs: Any) -> str:
        """Given kwargs, output formatted variable."""
        return f"{kwargs['prompt_key1']}-{kwargs['prompt_key2']}"

    template_var_mappings = {
        "prompt_key1": "abc",
        "prompt_key2": "xyz",
    }
    test_prompt_3 = PromptTemplate(
        test_prompt_tmpl,
        template_var_mappings=template_var_mappings,
        # NOTE: with template mappings, needs to use the source variable names,
        # not the ones being mapped to in the template
        function_mappings={"prompt_key1": _format_prompt_key1},
    )
    assert test_prompt_3.format(prompt_key1="678", prompt_key2="789") == "foo bar 678-789 789"


def test_template_with_json() -> None:
    """Test partial format."""
    prompt_txt = 'hello {text} {foo} {"bar": "baz"}'
    prompt = PromptTemplate(prompt_txt)

    assert prompt.format(foo="foo2", text="world") == 'hello world foo2 {"bar": "baz"}'

    assert prompt.format_messages(foo="foo2", text="world") == [
        ChatMessage(content='hello world foo2 {"bar": "baz"}', role=MessageRole.USER)
    ]

    test_case_2 = PromptTemplate("test {message} {test}")
    assert test_case_2.format(message="message") == "test message {test}"

    test_case_3 = PromptTemplate("test {{message}} {{test}}")
    assert test_case_3.format(message="message", test="test") == "test {message} {test}"


def test_template_has_json() -> None:
    """Test partial format."""
    prompt_txt = 'hello {text} {foo} \noutput format:\n```json\n{"name": "llamaindex"}\n```'
    except_prompt = 'hello world bar \noutput format:\n```json\n{"name": "llamaindex"}\n```'

    prompt_template = PromptTemplate(prompt_txt)
    template_vars = prompt_template.template_vars
    prompt_fmt = prompt_template.partial_format(foo="bar")
    prompt = prompt_fmt.format(text="world")

    assert isinstance(prompt_fmt, PromptTemplate)
    assert template_vars == ["text", "foo"]
    assert prompt == except_prompt
    assert prompt_fmt.format_messages(text="world") == [
        ChatMessage(content=except_prompt, role=MessageRole.USER)
    ]


# From tests/prompts/test_format_string.py
def test_formatter() -> None:
    """Test escape JSON.

    If there's curly brackets, escape it.

    """
    # create dumb test case
    test_case_1 = format_string("test message")
    assert test_case_1 == "test message"

    # create test case with two brackets
    test_case_2 = format_string("test {message} {test}", message="test", test="test")
    assert test_case_2 == "test test test"

    # create test case with a bracket that's already escaped - shouldn't change!
    test_case_3 = format_string("test {{message}} {test}", test="test")
    assert test_case_3 == "test {{message}} test"

    # test with json
    test_case_4 = format_string(
        """{"role": "user", "content": "test {message} {test}", "additional_kwargs": {"test": "test"}}""",  # noqa: E501
        message="test",
        test="test",
    )
    assert (
        test_case_4
        == """{"role": "user", "content": "test test test", "additional_kwargs": {"test": "test"}}"""  # noqa: E501
    )
