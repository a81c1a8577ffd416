"""The services quickstart on a llama.cpp-like server: the orchestrator routes, a service runs.

Its three models (`STEPWISE_MODEL=openai:...`, `OPENAI_BASE_URL`) talk to the loopback OpenAI
server playing llama.cpp's quirks: tools are ignored without `tool_choice`, an assistant
message with `"content": null` gets a 500, streams carry no usage. Before the fixes the
orchestrator was answered in prose and answered the task by itself; no service ran.
"""

from __future__ import annotations

from typing import Any

from stepwise.services import LocalLauncher
from tests.llm_servers import (
    LLAMA_CPP_QUIRKS,
    OpenAIServer,
    Reply,
    ReplyToolCall,
    last_tool_result,
    last_user_text,
    offered_tools,
)

from ._system import load_example

SECRET = "The secret fact is: A baby llama is called a 'Cria'."


def _quickstart_policy(body: dict[str, Any]) -> Reply:
    """Play the orchestrator, the secret agent and the dumb agent by the tools offered."""
    result = last_tool_result(body)
    if result is not None:
        return Reply(text=result)  # A tool or a service answered: pass its answer on.
    tools = offered_tools(body)
    if "secret_fact_agent" in tools:
        question = last_user_text(body)
        return Reply(tool_calls=[ReplyToolCall("secret_fact_agent", {"input": question})])
    if "get_the_secret_fact" in tools:
        return Reply(tool_calls=[ReplyToolCall("get_the_secret_fact", {})])
    return Reply(text="Llamas hum to each other.")  # The orchestrator, answering by itself.


def test_the_orchestrator_on_a_quirky_local_server_routes_the_task_to_a_service(monkeypatch):
    quickstart = load_example("services_quickstart")
    with OpenAIServer(policy=_quickstart_policy, quirks=LLAMA_CPP_QUIRKS) as server:
        monkeypatch.setenv("STEPWISE_MODEL", "openai:smollm2")
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
        llms = quickstart.default_llms()
        assert type(llms.orchestrator).__name__ == "OpenAILLM"  # Not the scripted models.
        services, control_plane, queue = quickstart.build(llms)

        result = LocalLauncher(services, control_plane, queue).launch_single("What is the secret?")

    requests = [r.json for r in server.model_requests]
    # The quirks had something to bite on: tools were offered, a tool call was answered.
    assert any(offered_tools(body) for body in requests)
    assert any(last_tool_result(body) is not None for body in requests)
    # The secret agent ran (its tool was offered to the model) and its answer came back.
    assert any("get_the_secret_fact" in offered_tools(body) for body in requests)
    assert result == SECRET
    assert server.quirk_hits["tools_need_tool_choice"] == 0
    assert server.quirk_hits["null_content_500"] == 0
