"""ReAct prompt customization test.

Ported from LlamaIndex (llama-index-core 0.12, `tests/agent/react/test_prompt_customization.py`)
by changing imports and the least spelling possible; every change is marked `# stepwise:`.
Typing aliases (`List[...]`, `Optional[...]`) are spelt as builtins, as the linter asks.
"""

from textwrap import dedent

# stepwise: imports from agent_core; LlamaIndex's PromptTemplate is a plain str here
from agent_core import ReActAgent
from agent_core.llms import ScriptedLLM
from agent_core.workers import ReActChatFormatter


def test_partial_formatted_system_prompt():
    """Partially formatted context should be preserved."""
    prompt = dedent(
        """\
        Required template variables:
        {tool_desc}
        {tool_names}

        Additional variables:
        {dummy_var}
        """
    )

    dummy_var = "dummy_context"
    # stepwise: kept difference, see README: no update_prompts(); the system header is the
    # formatter's, given when the agent is built. str.replace stands for partial_format.
    formatter = ReActChatFormatter.from_defaults(
        system_header=prompt.replace("{dummy_var}", dummy_var)
    )
    agent = ReActAgent.from_tools([], llm=ScriptedLLM([]), react_chat_formatter=formatter)

    assert dummy_var in agent.agent_worker.formatter.system_header
    # stepwise: and the model is sent it, with the tool variables filled in
    task = agent.create_task("hi")
    system = agent.preview_messages(task.task_id)[0].content
    assert dummy_var in system
    assert "{tool_desc}" not in system
