"""A Langfuse trace and a LangSmith run tree, in their APIs' documented shapes, as tasks."""

from __future__ import annotations

import json
from typing import Any

from agent_core.recordings.importers import detect, import_file
from agent_core.store.memory import InMemoryStore
from agent_core.types import StepKind, TaskState
from tests.llm_servers import OpenAIServer

QUESTION = "What is 6 times 7?"
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "multiply", "arguments": '{"a": 6, "b": 7}'},
}


def langfuse_trace() -> dict[str, Any]:
    """`GET /api/public/traces/{traceId}`: a trace and its observations (an agent's SPAN,
    two GENERATIONs, a TOOL, and an EVENT that is none of those)."""
    sent = [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": QUESTION}]

    def obs(id: str, kind: str, name: str, start: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": id,
            "traceId": "t-1",
            "type": kind,
            "name": name,
            "startTime": f"2026-01-05T10:00:{start}.000Z",
            "endTime": f"2026-01-05T10:00:{start}.500Z",
            "parentObservationId": fields.pop("parent", "agent"),
            "level": "DEFAULT",
            **fields,
        }

    return {
        "id": "t-1",
        "name": "calculator",
        "timestamp": "2026-01-05T10:00:00.000Z",
        "input": {"question": QUESTION},
        "output": "The answer is 42.",
        "observations": [
            obs("agent", "AGENT", "calculator", "00", parent=None),
            obs(
                "g1",
                "GENERATION",
                "ChatOpenAI",
                "01",
                model="gpt-4o-mini",
                input=sent,
                output={"role": "assistant", "content": None, "tool_calls": [CALL]},
                usageDetails={"input": 50, "output": 9, "total": 59},
                costDetails={"total": 0.0012},
            ),
            obs("t1", "TOOL", "multiply", "02", input={"a": 6, "b": 7}, output="42"),
            obs("e1", "EVENT", "cache-miss", "03"),
            obs(
                "g2",
                "GENERATION",
                "ChatOpenAI",
                "04",
                model="gpt-4o-mini",
                input=[
                    *sent,
                    {"role": "assistant", "tool_calls": [CALL]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "42"},
                ],
                output={"role": "assistant", "content": "The answer is 42."},
                usageDetails={"input": 70, "output": 8},
            ),
        ],
    }


def langsmith_run() -> dict[str, Any]:
    """A run tree as LangSmith's API returns it: a LangGraph graph (`chain`) with its nodes,
    an `llm` run with LangChain's serialised messages, and a `tool` run."""

    def run(id: str, kind: str, name: str, second: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": id,
            "name": name,
            "run_type": kind,
            "trace_id": "root",
            "start_time": f"2026-01-05T10:00:{second}.000",
            "end_time": f"2026-01-05T10:00:{second}.400",
            "error": None,
            "child_runs": [],
            **fields,
        }

    human = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "HumanMessage"],
        "kwargs": {"content": QUESTION, "type": "human"},
    }
    ai_call = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {
            "content": "",
            "type": "ai",
            "tool_calls": [{"name": "multiply", "args": {"a": 6, "b": 7}, "id": "call_1"}],
        },
    }
    tool_message = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "ToolMessage"],
        "kwargs": {"content": "42", "type": "tool", "tool_call_id": "call_1"},
    }
    answer = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {"content": "The answer is 42.", "type": "ai"},
    }
    llm_1 = run(
        "l1",
        "llm",
        "ChatOpenAI",
        "01",
        inputs={"messages": [[human]]},
        outputs={
            "generations": [[{"text": "", "message": ai_call}]],
            "llm_output": {"token_usage": {"prompt_tokens": 50, "completion_tokens": 9}},
        },
    )
    tool = run(
        "t1",
        "tool",
        "multiply",
        "02",
        inputs={"input": "{'a': 6, 'b': 7}"},
        outputs={"output": tool_message},
    )
    llm_2 = run(
        "l2",
        "llm",
        "ChatOpenAI",
        "03",
        inputs={"messages": [[human, ai_call, tool_message]]},
        outputs={"generations": [[{"text": "The answer is 42.", "message": answer}]]},
        prompt_tokens=70,
        completion_tokens=8,
        total_cost=0.002,
    )
    agent = run("n1", "chain", "agent", "01", child_runs=[llm_1])
    tools = run("n2", "chain", "tools", "02", child_runs=[tool])
    agent_2 = run("n3", "chain", "agent", "03", child_runs=[llm_2])
    prompt = run("p1", "prompt", "format_prompt", "00")
    return run(
        "root",
        "chain",
        "LangGraph",
        "00",
        inputs={"messages": [human]},
        outputs={"output": "The answer is 42."},
        child_runs=[prompt, agent, tools, agent_2],
    )


def _import(store: InMemoryStore, document: Any) -> TaskState:
    [task_id] = import_file(json.dumps(document).encode(), store)
    state = store.load_task(task_id)
    assert state is not None
    return state


def test_a_langfuse_trace_is_a_task_with_its_generations_tool_and_notes(
    store: InMemoryStore,
) -> None:
    assert detect(json.dumps(langfuse_trace()).encode()) == "langfuse"
    state = _import(store, langfuse_trace())
    assert state.task.input == QUESTION and state.task.imported_from.format == "langfuse"
    kinds = [state.steps[s].kind for s in state.completed]
    assert kinds == [StepKind.LLM, StepKind.TOOL, StepKind.LLM]
    first, tool, last = (state.outputs[s] for s in state.completed)
    assert first.usage.prompt_tokens == 50 and first.usage.cost_usd == 0.0012
    assert state.task.usage.prompt_tokens == 120
    assert tool.tool_calls[0].args == {"a": 6, "b": 7} and tool.output == "42"
    notes = [n.message for n in tool.notes]  # The EVENT came after the tool call.
    assert notes and "cache-miss (EVENT)" in notes[0]
    assert last.output == "The answer is 42."
    assert [m.role for m in store.load_messages_sent(state.task_id, last.task_step.step_id)] == [
        "system",
        "user",
        "assistant",
        "tool",
    ]


def test_a_langsmith_run_tree_is_a_task_with_the_graphs_node_names(store: InMemoryStore) -> None:
    assert detect(json.dumps(langsmith_run()).encode()) == "langsmith"
    state = _import(store, langsmith_run())
    assert state.task.input == QUESTION and state.task.imported_from.format == "langsmith"
    steps = [(state.steps[s].kind, state.steps[s].name) for s in state.completed]
    assert steps == [
        (StepKind.LLM, "ChatOpenAI"),
        (StepKind.TOOL, "multiply"),
        (StepKind.LLM, "ChatOpenAI"),
    ]
    first, tool, last = (state.outputs[s] for s in state.completed)
    assert first.usage.prompt_tokens == 50 and last.usage.cost_usd == 0.002
    assert tool.tool_calls[0].call_id == "call_1" and tool.output == "42"
    assert [n.message for n in first.notes] == [
        "span p1: format_prompt (prompt): not a model or tool call"
    ]
    sent = store.load_messages_sent(state.task_id, last.task_step.step_id)
    assert [m.role for m in sent] == ["user", "assistant", "tool"]
    assert sent[1].tool_calls[0].name == "multiply"


def test_a_langsmith_import_forks_at_step_2_and_runs_to_its_answer(
    store: InMemoryStore, agent_on, model_server: OpenAIServer
) -> None:
    state = _import(store, langsmith_run())
    spec = agent_on(model_server)
    model_server.script("It is 42.")
    runner = spec.build_runner(store=store)
    fork = runner.fork_task(state.task_id, state.completed[1], agent=spec)
    out = runner.run_step(fork.task_id)
    assert out.is_last and out.output == "It is 42."
