"""ReAct prompt customization test.

Ported from LlamaIndex (llama-index-core 0.12, `tests/agent/react/test_prompt_customization.py`)
by changing imports and the least spelling possible; every change is marked `# stepwise:`.
Typing aliases (`List[...]`, `Optional[...]`) are spelt as builtins, as the linter asks.
"""

from textwrap import dedent

# stepwise: imports from agent_core
from agent_core import ReActAgent
from agent_core.compat.llamaindex import PromptTemplate
from agent_core.llms import ScriptedLLM


def test_partial_formatted_system_prompt():
    """Partially formatted context should be preserved."""
    agent = ReActAgent.from_tools([], llm=ScriptedLLM([]))  # stepwise: MockLLM is ScriptedLLM

    prompt = PromptTemplate(
        dedent(
            """\
            Required template variables:
            {tool_desc}
            {tool_names}

            Additional variables:
            {dummy_var}
            """
        )
    )

    dummy_var = "dummy_context"
    agent.update_prompts({"agent_worker:system_prompt": prompt.partial_format(dummy_var=dummy_var)})

    # stepwise: the worker's formatter is public (`formatter`, not `_react_chat_formatter`)
    assert dummy_var in agent.agent_worker.formatter.system_header
    # stepwise: and the model is sent it, with the tool variables filled in
    task = agent.create_task("hi")
    system = agent.preview_messages(task.task_id)[0].content
    assert dummy_var in system
    assert "{tool_desc}" not in system
