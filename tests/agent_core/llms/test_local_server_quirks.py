"""OpenAILLM against the quirks of real local OpenAI-compatible servers (llama.cpp's), over TCP.

Each test switches on one quirk of `tests.llm_servers.OpenAIServer` and asserts both that the
fault was injected (`quirk_hits`) and that Stepwise copes with it the way issue 20 asks.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_core.errors import LLMError, StepError
from agent_core.llms._retry import RetryPolicy
from agent_core.llms.base import ChatMessage, ChatResponse, ToolCall, ToolSpec
from agent_core.llms.catalog import infer_model, reply_cap_field
from agent_core.llms.openai import OpenAILLM
from agent_core.runtime.runner import AgentRunner
from agent_core.spec import AgentSpec
from agent_core.tools.arithmetic import arithmetic_tools
from agent_core.types import StepKind, TaskStepOutput
from agent_core.workers.function_calling import NO_TOOL_CALL, FunctionCallingAgentWorker
from tests.llm_servers import LLAMA_CPP_QUIRKS, OpenAIServer, Reply

QUESTION = [ChatMessage(role="user", content="What is 1 + 2?")]
ADD = ToolSpec(name="add", description="Add two integers.")


def _llm(server: OpenAIServer, **kwargs: Any) -> OpenAILLM:
    kwargs.setdefault("max_retries", 0)
    return OpenAILLM(model="m", base_url=server.url + "/v1", **kwargs)


async def _streamed(llm: OpenAILLM, messages: list[ChatMessage], **kwargs: Any) -> ChatResponse:
    final = None
    async for event in llm.stream_chat(messages, **kwargs):
        final = event.response or final
    assert final is not None
    return final


# --- 4. a cap on the reply -------------------------------------------------------------------


def test_reply_cap_field_is_decided_per_server() -> None:
    assert reply_cap_field("openai", None) == "max_completion_tokens"
    assert reply_cap_field("openai", "https://api.openai.com/v1") == "max_completion_tokens"
    assert reply_cap_field("openai", "http://127.0.0.1:8080/v1") == "max_tokens"
    assert reply_cap_field("anthropic", None) == "max_tokens"


def test_spec_max_tokens_caps_an_endless_reply_on_a_compatible_server() -> None:
    with OpenAIServer(quirks={"endless_reply"}) as server:
        spec = AgentSpec(provider="openai", model="m", base_url=server.url + "/v1", max_tokens=6)
        llm = spec.build_llm()
        plain = asyncio.run(llm.chat(QUESTION))
        streamed = asyncio.run(_streamed(llm, QUESTION))
    assert plain.text.split() == ["word"] * 6
    assert streamed.text.split() == ["word"] * 6
    bodies = [r.json for r in server.model_requests]
    assert [b.get("max_tokens") for b in bodies] == [6, 6]
    assert all("max_completion_tokens" not in b for b in bodies)
    assert server.quirk_hits["endless_reply"] == 2


def test_no_cap_is_sent_unless_asked() -> None:
    with OpenAIServer() as server:
        asyncio.run(_llm(server).chat(QUESTION))
    body = server.model_requests[0].json
    assert "max_tokens" not in body and "max_completion_tokens" not in body


def test_openai_api_gets_max_completion_tokens_and_anthropic_keeps_its_default() -> None:
    openai_llm = infer_model("openai:gpt-4o-mini", api_key="sk-test-1234", max_tokens=9)
    assert isinstance(openai_llm, OpenAILLM)
    assert openai_llm._request(QUESTION, None)["max_completion_tokens"] == 9
    pytest.importorskip("anthropic")
    capped = infer_model("anthropic", api_key="sk-ant-test", max_tokens=9)
    default = infer_model("anthropic", api_key="sk-ant-test", max_tokens=None)
    assert capped._request(QUESTION, None)["max_tokens"] == 9  # type: ignore[attr-defined]
    assert default._request(QUESTION, None)["max_tokens"] == 4096  # type: ignore[attr-defined]


# --- a function-calling task end to end ------------------------------------------------------


def _runner(server: OpenAIServer, **kwargs: Any) -> AgentRunner:
    worker = FunctionCallingAgentWorker(arithmetic_tools(), _llm(server, max_retries=1))
    return AgentRunner(worker, conversation_id=None, **kwargs)


def _run_task(runner: AgentRunner, *, stream: bool) -> list[TaskStepOutput]:
    """Run a task's steps one by one (streamed or not) until its last; return the outputs."""
    task = runner.create_task("What is 1 + 2?")
    outputs: list[TaskStepOutput] = []
    for _ in range(6):
        if stream:
            list(runner.stream_step(task.task_id))
            outputs.append(runner.get_completed_steps(task.task_id)[-1])
        else:
            outputs.append(runner.run_step(task.task_id))
        if outputs[-1].is_last:
            return outputs
    raise AssertionError(f"the task did not end: {[o.output for o in outputs]}")


@pytest.mark.parametrize("stream", [False, True], ids=["run_step", "stream_step"])
def test_function_calling_task_runs_to_its_answer_through_a_llama_cpp_like_server(
    stream: bool,
) -> None:
    # Streams that offer tools are refused there too: the test of that is below.
    with OpenAIServer(quirks=LLAMA_CPP_QUIRKS - {"streamed_tools_refused"}) as server:
        outputs = _run_task(_runner(server), stream=stream)
    assert outputs[-1].output == "The answer is 3."
    assert [o.task_step.kind for o in outputs] == [StepKind.LLM, StepKind.TOOL, StepKind.LLM]
    bodies = [r.json for r in server.model_requests]
    assert [b.get("tool_choice") for b in bodies] == ["auto", "auto"]
    assistant = bodies[1]["messages"][1]
    assert assistant["role"] == "assistant" and assistant["content"] == ""
    assert not outputs[-1].notes
    # The quirks were in play: tool_choice was checked on both calls, and a stream had no usage.
    assert server.quirk_hits["tools_need_tool_choice"] == 0
    assert server.quirk_hits["no_stream_usage"] == (2 if stream else 0)
    if stream:
        assert all(o.usage.estimated for o in outputs if o.task_step.kind is StepKind.LLM)


def test_tool_choice_chosen_on_the_runner_or_the_step_reaches_the_server() -> None:
    with OpenAIServer() as server:
        runner = _runner(server, default_tool_choice="add")
        task = runner.create_task("What is 1 + 2?")
        runner.run_step(task.task_id)
        runner.run_step(task.task_id)
        runner.run_step(task.task_id, tool_choice="none")
    choices = [r.json.get("tool_choice") for r in server.model_requests]
    assert choices == [{"type": "function", "function": {"name": "add"}}, "none"]


def test_a_first_step_answered_in_prose_says_the_model_did_not_call_a_tool() -> None:
    with OpenAIServer() as server:
        server.script(policy=lambda body: "2 + 3 = 5")  # A model that cannot call tools.
        runner = _runner(server)
        task = runner.create_task("What is 2 + 3?")
        first = runner.run_step(task.task_id)
    assert first.is_last and first.output == "2 + 3 = 5"
    assert [note.code for note in first.notes] == [NO_TOOL_CALL]
    assert "did not call a tool" in first.notes[0].message


def test_tools_were_ignored_before_tool_choice_was_sent() -> None:
    """The quirk a llama.cpp-like server plays, seen where it bit: the step says so."""
    with OpenAIServer(quirks={"tools_need_tool_choice"}) as server:
        runner = _runner(server)
        task = runner.create_task("What is 1 + 2?")
        # Without tool_choice on the wire the server would answer in prose; with it, a call.
        first = runner.run_step(task.task_id)
    assert first.task_step.kind is StepKind.LLM and not first.is_last
    assert server.model_requests[0].json["tool_choice"] == "auto"
    assert not first.notes


# --- 2. content null, the server's own error text, a 500 that repeats ------------------------

TOOL_ROUND = [
    ChatMessage(role="user", content="What is 1 + 2?"),
    ChatMessage(role="assistant", tool_calls=(ToolCall(id="call_1", name="add", args={"a": 1}),)),
    ChatMessage(role="tool", tool_call_id="call_1", name="add", content="3"),
]


def test_the_assistant_message_after_a_tool_call_is_sent_with_empty_content() -> None:
    with OpenAIServer(quirks={"null_content_500"}) as server:
        reply = asyncio.run(_llm(server).chat(TOOL_ROUND, tools=[ADD]))
    assert reply.text == "The answer is 3."
    assert server.model_requests[0].json["messages"][1]["content"] == ""


def test_a_500_that_repeats_is_retried_once_then_says_the_server_refused_the_request() -> None:
    with OpenAIServer(quirks={"null_content_500"}) as server:
        llm = _llm(server, max_retries=3, retry_policy=RetryPolicy(max_retries=3, base_delay=0))
        # Send what an old client sent: content null after the call.
        llm._request = _with_null_content(llm._request)  # type: ignore[method-assign]
        with pytest.raises(LLMError) as caught:
            asyncio.run(llm.chat(TOOL_ROUND, tools=[ADD]))
    assert server.quirk_hits["null_content_500"] == 2  # tried, retried once, no more
    error = caught.value
    assert error.code == "model_request_refused" and error.status == 500
    assert "refused this request" in error.message
    assert "can only concatenate str" in str(error)  # the server's own text, not cut
    assert "temporary" not in str(error)
    assert error.params["detail"].endswith("to str")


@pytest.mark.parametrize("status", [502, 504])
def test_a_gateways_502_or_504_is_retried_with_backoff_until_the_server_is_back(status) -> None:
    # A proxy in front of a restarting server answers 502/504 until it is back: the same
    # request then succeeds, so it is retried as the policy allows, not refused after two.
    down = Reply(status=status, error="upstream connect error")
    with OpenAIServer([down, down, down, "Back."]) as server:
        llm = _llm(server, retry_policy=RetryPolicy(max_retries=3, base_delay=0.01))
        reply = asyncio.run(_streamed(llm, [ChatMessage(role="user", content="Hi")]))
    assert reply.text == "Back." and len(server.model_requests) == 4


def test_a_gateway_error_that_outlasts_the_retries_says_to_run_the_step_again() -> None:
    down = Reply(status=502, error="upstream connect error")
    with OpenAIServer([down] * 3) as server:
        llm = _llm(server, retry_policy=RetryPolicy(max_retries=2, base_delay=0.01))
        with pytest.raises(LLMError) as caught:
            asyncio.run(llm.chat([ChatMessage(role="user", content="Hi")]))
    error = caught.value
    assert error.code == "model_error" and error.status == 502 and error.remedy == "retry"
    assert "will not help" not in str(error) and "restarting" in str(error)
    assert len(server.model_requests) == 3


def _with_null_content(request: Any) -> Any:
    def patched(*args: Any, **kwargs: Any) -> dict[str, Any]:
        built = request(*args, **kwargs)
        built["messages"] = [
            {**m, "content": None} if m["role"] == "assistant" else m for m in built["messages"]
        ]
        return built

    return patched


def test_overload_is_still_retried_as_the_policy_allows() -> None:
    busy = Reply(status=503, error="busy")
    with OpenAIServer([busy, busy, busy, "fine"]) as server:
        llm = _llm(server, retry_policy=RetryPolicy(max_retries=3, base_delay=0))
        assert asyncio.run(llm.chat(QUESTION)).text == "fine"
    assert len(server.model_requests) == 4


# --- 3. a stream that opens then fails; a dead pooled connection -----------------------------


def test_a_stream_that_opens_then_drops_with_nothing_sent_fails_the_call() -> None:
    with OpenAIServer(quirks={"broken_stream"}) as server:
        with pytest.raises(LLMError) as caught:
            asyncio.run(_streamed(_llm(server, max_retries=3), QUESTION))
    assert server.quirk_hits["broken_stream"] == 1
    assert caught.value.code == "model_stream_broken"
    assert "before sending anything" in caught.value.message


def test_a_broken_stream_fails_its_step_instead_of_ending_the_task() -> None:
    # No tools offered: nothing to fall back to (see the tests of streamed tools below).
    with OpenAIServer(["The answer is 3."], quirks={"broken_stream"}) as server:
        worker = FunctionCallingAgentWorker([], _llm(server, max_retries=1))
        runner = AgentRunner(worker, conversation_id=None)
        task = runner.create_task("What is 1 + 2?")
        with pytest.raises(StepError):
            list(runner.stream_step(task.task_id))
        assert server.quirk_hits["broken_stream"] == 1
        assert not runner.get_completed_steps(task.task_id)
        server.quirks.discard("broken_stream")
        outputs = _run_task_from(runner, task.task_id)
    assert outputs[-1].output == "The answer is 3."


def test_a_stream_cut_mid_reply_is_a_retryable_error_not_an_answer() -> None:
    # It ended cleanly with no finish reason and no [DONE]: saved as a whole answer.
    reply = "The answer is three, and here is why it is three."
    with OpenAIServer([reply], quirks={"cut_stream"}) as server:
        with pytest.raises(LLMError) as caught:
            asyncio.run(_streamed(_llm(server), QUESTION))
    assert server.quirk_hits["cut_stream"] == 1
    error = caught.value
    assert (error.code, error.remedy, error.retryable) == ("model_stream_cut", "retry", True)
    assert "mid-reply" in error.message and error.params["chars"] < len(reply)


def test_a_cut_stream_fails_its_step_and_the_step_runs_again_to_the_answer() -> None:
    with OpenAIServer(["The answer", "The answer is 3."], quirks={"cut_stream"}) as server:
        worker = FunctionCallingAgentWorker([], _llm(server))
        runner = AgentRunner(worker, conversation_id=None)
        task = runner.create_task("What is 1 + 2?")
        with pytest.raises(StepError) as caught:
            list(runner.stream_step(task.task_id))
        assert caught.value.params["cause_code"] == "model_stream_cut"
        assert not runner.get_completed_steps(task.task_id)
        server.quirks.discard("cut_stream")
        outputs = _run_task_from(runner, task.task_id)
    assert outputs[-1].output == "The answer is 3."


def test_a_server_that_cannot_stream_tools_is_asked_without_streaming() -> None:
    # llama.cpp's server drops a streamed request that offers tools: the call is asked again
    # unstreamed, and the model asks it that way from then on.
    with OpenAIServer(["one", "two", "three"], quirks={"streamed_tools_refused"}) as server:
        llm = _llm(server, max_retries=1)  # The dropped stream's connection is dead: one retry.
        tools = [tool.metadata.to_spec() for tool in arithmetic_tools()]

        async def three_calls() -> list[str]:
            return [
                (await _streamed(llm, QUESTION, tools=tools)).text,
                (await _streamed(llm, QUESTION, tools=tools)).text,
                (await _streamed(llm, QUESTION)).text,  # No tools: streamed as ever.
            ]

        assert asyncio.run(three_calls()) == ["one", "two", "three"]
    assert server.quirk_hits["streamed_tools_refused"] == 1
    assert [bool(r.json.get("stream")) for r in server.model_requests] == [True, False, False, True]


def test_a_function_calling_task_streams_to_its_answer_on_llama_cpps_quirks() -> None:
    with OpenAIServer(quirks=LLAMA_CPP_QUIRKS) as server:
        outputs = _run_task(_runner(server), stream=True)
        assert server.quirk_hits["streamed_tools_refused"] == 1
    assert outputs[-1].output == "The answer is 3."
    assert [o.task_step.kind for o in outputs] == [StepKind.LLM, StepKind.TOOL, StepKind.LLM]


def _run_task_from(runner: AgentRunner, task_id: str) -> list[TaskStepOutput]:
    outputs = []
    for _ in range(6):
        list(runner.stream_step(task_id))
        outputs.append(runner.get_completed_steps(task_id)[-1])
        if outputs[-1].is_last:
            return outputs
    raise AssertionError("the task did not end")


@pytest.mark.parametrize("stream", [False, True], ids=["chat", "stream_chat"])
def test_a_dead_pooled_connection_is_retried_once_on_a_new_one(stream: bool) -> None:
    with OpenAIServer(quirks={"stale_keepalive"}) as server:
        llm = _llm(server, max_retries=1)

        async def two_calls() -> list[str]:
            replies = []
            for _ in range(2):
                call = _streamed(llm, QUESTION) if stream else llm.chat(QUESTION)
                replies.append((await call).text)
            return replies

        assert asyncio.run(two_calls()) == ["Hello from the loopback model."] * 2
    assert server.quirk_hits["stale_keepalive"] == 1
    assert [r.dropped for r in server.model_requests] == [False, True, False]
    assert server.connections_accepted == 2


# --- 4. a timeout on a server that may still be generating -----------------------------------


def test_a_timeout_on_a_local_server_says_it_may_be_busy_and_is_not_retried() -> None:
    with OpenAIServer(quirks={"endless_reply"}) as server:
        llm = _llm(server, max_retries=3, timeout=0.5)
        with pytest.raises(LLMError) as caught:
            asyncio.run(llm.chat(QUESTION))
        assert server.wait_until(lambda: server.disconnects == 1)
    assert server.quirk_hits["endless_reply"] == 1  # one call, not retried into the busy server
    assert caught.value.code == "model_busy" and caught.value.timed_out
    assert "may still be busy" in caught.value.message
    assert "max_tokens" in caught.value.hint
