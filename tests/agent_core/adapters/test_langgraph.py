"""A compiled LangGraph graph stepped in Stepwise, one super-step per step, through the registry.

The graphs are what a user writes: `StateGraph(MessagesState)` with an "agent" node, a prebuilt
`ToolNode` with two tools and `tools_condition`; one adds a reviewer node that calls
`interrupt()`, one an audit node that fails while a file says its service is down. The model
is a small LangChain chat model in the user's file: it multiplies the question's first two
numbers, adds the third to the product, and answers, reading the tool results it is sent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent_core import AgentRunner, OnTool
from agent_core.errors import StepError, UserError
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.types import INTERRUPT_KEY, StepKind, StepStatus
from agent_core.user_code import UserCodeRegistry
from tests.agent_core._user_projects import isolated_imports, write_project  # noqa: F401

pytestmark = pytest.mark.usefixtures("isolated_imports")

QUESTION = "What is (121 * 3) + 42?"

GRAPH_FILE = '''
"""My LangGraph agent: a model with two tools; variants with a reviewer and an audit."""

import json
import re
from pathlib import Path

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt

AUDIT_DOWN = Path(__file__).parent / "audit_down"


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _call(name, n, **args):
    return {"name": name, "args": args, "id": f"call_{name}_{n}", "type": "tool_call"}


class ArithmeticModel(BaseChatModel):
    """Multiplies the question's first two numbers, adds the third, answers."""

    parallel: bool = False

    @property
    def _llm_type(self):
        return "arithmetic"

    def bind_tools(self, tools, **kwargs):
        return self.bind(tools=[t.name for t in tools], **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        reply = self._reply(messages)
        reply.usage_metadata = {
            "input_tokens": 10 * len(messages), "output_tokens": 7,
            "total_tokens": 10 * len(messages) + 7,
        }
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        # Streamed when someone listens (LangGraph's "messages" mode): text word by word,
        # tool calls in one piece.
        reply = self._generate(messages).generations[0].message
        calls = [
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
            for i, c in enumerate(reply.tool_calls)
        ]
        pieces = [AIMessageChunk(content="", tool_call_chunks=calls)] if calls else [
            AIMessageChunk(content=word) for word in re.split(r"( )", reply.text) if word
        ]
        pieces[-1].usage_metadata = reply.usage_metadata
        for piece in pieces:
            if run_manager is not None:
                run_manager.on_llm_new_token(piece.text, chunk=ChatGenerationChunk(message=piece))
            yield ChatGenerationChunk(message=piece)

    def _reply(self, messages):
        index, question = next(
            (i, m) for i, m in reversed(list(enumerate(messages)))
            if isinstance(m, HumanMessage) and len(re.findall(r"\\d+", m.text)) >= 3
        )
        a, b, c = (int(n) for n in re.findall(r"\\d+", question.text)[:3])
        later = messages[index + 1:]
        results = [m for m in later if isinstance(m, ToolMessage)]
        notes = [m.text for m in later if isinstance(m, HumanMessage)]
        noted = f" (noted: {'; '.join(notes)})" if notes else ""
        if results and results[-1].status == "error":
            return AIMessage(f"Understood: {results[-1].text}{noted}")
        if not results and self.parallel:
            both = [_call("multiply", 1, a=a, b=b), _call("add", 1, a=b, b=c)]
            return AIMessage("", tool_calls=both)
        if not results:
            return AIMessage("", tool_calls=[_call("multiply", 1, a=a, b=b)])
        if len(results) == 1:
            return AIMessage("", tool_calls=[_call("add", 2, a=int(results[0].text), b=c)])
        return AIMessage(f"The answer is {results[-1].text}.{noted}")


def agent_node(model):
    def agent(state: MessagesState):
        return {"messages": [model.invoke(state["messages"])]}
    return agent


def review(state: MessagesState):
    verdict = interrupt({"question": "Send this answer?", "answer": state["messages"][-1].text})
    return {"messages": [AIMessage(f"Sent. The reviewer said: {verdict}")]}


def audit(state: MessagesState):
    if AUDIT_DOWN.exists():
        raise RuntimeError("audit service down")
    return None


def build(*, parallel=False, reviewed=False, audited=False):
    model = ArithmeticModel(parallel=parallel).bind_tools([multiply, add])
    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent_node(model))
    builder.add_node("tools", ToolNode([multiply, add]))
    builder.add_edge(START, "agent")
    if reviewed:
        builder.add_node("review", review)
        builder.add_conditional_edges(
            "agent", lambda s: "tools" if s["messages"][-1].tool_calls else "review"
        )
        builder.add_edge("review", END)
    else:
        builder.add_conditional_edges("agent", tools_condition)
    if audited:
        builder.add_node("audit", audit)
        builder.add_edge("tools", "audit")
        builder.add_edge("audit", "agent")
    else:
        builder.add_edge("tools", "agent")
    return builder.compile()


graph = build()
parallel = build(parallel=True)
reviewed = build(reviewed=True)
audited = build(audited=True)
'''


def runner_for(project: Path, attr: str = "graph", *, db: Path | None = None, **spec):
    """A runner on the user's graph `attr`, built as the app builds it (registry, spec)."""
    registry = UserCodeRegistry(project=project, agents={"lg": f"graph.py:{attr}"})
    store = SQLiteStore(db or project / "stepwise.db")
    agent_spec = AgentSpec.from_registry(registry, agent="lg", **spec)
    return agent_spec.build_runner(store=store, registry=registry)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "project", {"graph.py": GRAPH_FILE})


def run_to_end(runner, task_id: str, limit: int = 12):
    outputs = []
    for _ in range(limit):
        outputs.append(runner.run_step(task_id))
        if outputs[-1].is_last:
            return outputs
    raise AssertionError(f"no answer after {limit} steps")


def test_a_two_tool_graph_runs_one_super_step_per_step_to_its_answer(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    (first,) = runner.get_upcoming_steps(task.task_id)
    assert (first.name, first.kind, first.input) == ("agent", StepKind.LLM, QUESTION)

    outputs = run_to_end(runner, task.task_id)
    assert [(o.task_step.name, o.task_step.kind) for o in outputs] == [
        ("agent", StepKind.LLM),
        ("tools", StepKind.TOOL),
        ("agent", StepKind.LLM),
        ("tools", StepKind.TOOL),
        ("agent", StepKind.LLM),
    ]
    assert outputs[0].output == 'multiply({"a": 121, "b": 3})'
    assert [(c.tool_name, c.args, c.content) for c in outputs[1].tool_calls] == [
        ("multiply", {"a": 121, "b": 3}, "363")
    ]
    assert outputs[3].tool_calls[0].content == "405"
    assert outputs[-1].output == "The answer is 405."
    # The framework's words and usage: what the model got, its token counts.
    sent = runner.get_messages_sent(task.task_id, outputs[2].task_step.step_id)
    assert [m.role for m in sent] == ["user", "assistant", "tool"]
    assert sent[1].tool_calls[0].name == "multiply" and sent[2].content == "363"
    assert (outputs[0].usage.prompt_tokens, outputs[0].usage.completion_tokens) == (10, 7)
    assert runner.get_messages_sent(task.task_id, outputs[1].task_step.step_id) == []
    # The conversation is mirrored into memory once, in order.
    memory = runner.get_task(task.task_id).memory.get_all()
    assert [m.role for m in memory] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert memory[0].content == QUESTION and memory[-1].content == "The answer is 405."
    assert runner.finalize_response(task.task_id).response == "The answer is 405."


def test_undo_goes_back_one_checkpoint_and_an_edited_state_update_changes_the_outcome(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    for _ in range(3):
        runner.run_step(task.task_id)
    before_add = runner.get_task(task.task_id).extra_state
    added = runner.run_step(task.task_id)
    assert added.task_step.name == "tools" and added.tool_calls[0].content == "405"

    step = runner.undo_step(task.task_id)
    assert runner.get_task(task.task_id).extra_state == before_add  # One checkpoint back.
    assert (step.name, step.kind, step.status) == ("tools", StepKind.TOOL, StepStatus.UPCOMING)
    undone = runner.get_step(task.task_id, added.task_step.step_id)
    assert undone.status is StepStatus.UNDONE  # The undone branch stays in history.
    assert runner.get_step_output(task.task_id, undone.step_id).tool_calls[0].content == "405"

    # Steer: the call as the tools node will run it; the model's reply is rewritten to match.
    assert step.input == {"tool": "add", "args": {"a": 363, "b": 42}, "call_id": "call_add_2"}
    rerun = runner.run_step(task.task_id, input={"tool": "add", "args": {"a": 363, "b": 58}})
    assert rerun.task_step.edited and rerun.tool_calls[0].content == "421"
    final = runner.run_step(task.task_id)
    assert final.is_last and final.output == "The answer is 421."


def test_a_json_state_update_steers_the_next_node(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)
    update = {"messages": [{"role": "user", "content": "Rather: what is (2 * 5) + 1?"}]}
    asks = runner.run_step(task.task_id, input=json.dumps(update))
    assert asks.task_step.name == "agent" and asks.output == 'multiply({"a": 2, "b": 5})'
    outputs = run_to_end(runner, task.task_id)
    assert outputs[-1].output == "The answer is 11."


def test_an_undone_step_keeps_its_name_and_what_it_cannot_do(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    ran = runner.run_step(task.task_id)
    again = runner.undo_step(task.task_id)
    assert (again.name, again.cannot) == (ran.task_step.name, ran.task_step.cannot)


def test_an_approval_with_edited_args_and_a_rejection_the_model_reads(project):
    runner = runner_for(project, tool_approval=True)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    (call,) = runner.get_upcoming_steps(task.task_id)
    assert (call.kind, call.name, call.needs_approval) == (StepKind.TOOL, "tools", True)
    assert call.input == {
        "tool": "multiply",
        "args": {"a": 121, "b": 3},
        "call_id": "call_multiply_1",
    }

    edited = runner.run_step(task.task_id, input={"tool": "multiply", "args": {"a": 120, "b": 3}})
    assert [c.content for c in edited.tool_calls] == ["360"]
    memory = runner.get_task(task.task_id).memory.get_all()
    assert memory[1].tool_calls[0].args == {"a": 120, "b": 3}  # The reply says what ran.

    asks = runner.run_step(task.task_id)
    assert asks.output == 'add({"a": 360, "b": 42})'
    rejected = runner.reject_step(task.task_id, message="Add 58 instead.")
    assert rejected.tool_calls[0].rejected and rejected.tool_calls[0].is_error
    answer = runner.run_step(task.task_id)
    assert answer.is_last
    assert answer.output == "Understood: The user rejected the call of add: Add 58 instead."
    sent = runner.get_messages_sent(task.task_id, answer.task_step.step_id)
    assert sent[-1].role == "tool" and sent[-1].content.endswith("Add 58 instead.")


def test_one_reply_with_two_calls_one_approved_one_rejected(project):
    runner = runner_for(project, "parallel", tool_approval=True)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    first, second = runner.get_upcoming_steps(task.task_id)
    assert (first.input["tool"], second.input["tool"]) == ("multiply", "add")
    assert second.depends_on == [first.step_id]  # Decided one after the other.

    approved = runner.run_step(task.task_id)
    assert approved.tool_calls == [] and "to run" in approved.output  # Nothing ran yet.
    batch = runner.reject_step(task.task_id, message="Not now.")
    assert [(c.tool_name, c.content, c.rejected) for c in batch.tool_calls] == [
        ("multiply", "363", False),
        ("add", "The user rejected the call of add: Not now.", True),
    ]
    memory = runner.get_task(task.task_id).memory.get_all()
    assert [c.name for c in memory[1].tool_calls] == ["multiply", "add"]  # Every call answered.
    assert [m.tool_call_id for m in memory[2:]] == ["call_multiply_1", "call_add_1"]
    answer = runner.run_step(task.task_id)
    assert answer.output == "Understood: The user rejected the call of add: Not now."


def test_an_interrupt_is_a_human_step_whose_answer_resumes_the_node(project):
    runner = runner_for(project, "reviewed")
    task = runner.create_task(QUESTION)
    outputs = [runner.run_step(task.task_id) for _ in range(6)]
    assert outputs[-1].task_step.name == "review" and not outputs[-1].is_last
    (ask,) = runner.get_upcoming_steps(task.task_id)
    assert (ask.kind, ask.name, ask.input) == (StepKind.HUMAN, "review", None)
    assert ask.step_state[INTERRUPT_KEY] == {
        "question": "Send this answer?",
        "answer": "The answer is 405.",
    }
    with pytest.raises(UserError, match="skipped"):
        runner.skip_step(task.task_id, ask.step_id)

    done = runner.run_step(task.task_id, input="Yes, send it.")
    assert done.is_last and done.output == "Sent. The reviewer said: Yes, send it."
    assert runner.get_task(task.task_id).memory.get_all()[-1].content == done.output


def test_a_nodes_step_kind_is_the_same_upcoming_run_and_next_time(project):
    # The reviewer read llm upcoming, custom once run, then human: one node, three kinds.
    runner = runner_for(project, "reviewed")
    task = runner.create_task(QUESTION)
    upcoming_kinds = {}
    for _ in range(6):
        (step,) = runner.get_upcoming_steps(task.task_id)
        upcoming_kinds[step.step_id] = step.kind
        runner.run_step(task.task_id)
    done = runner.get_completed_steps(task.task_id)
    assert {o.task_step.step_id: o.task_step.kind for o in done} == upcoming_kinds
    kinds = {(o.task_step.name, o.task_step.kind) for o in done}
    assert kinds == {
        ("agent", StepKind.LLM),
        ("tools", StepKind.TOOL),
        ("review", StepKind.CUSTOM),
    }
    (ask,) = runner.get_upcoming_steps(task.task_id)
    assert ask.kind is StepKind.HUMAN  # The person's answer to the node's question.


def test_undo_of_an_answered_interrupt_asks_the_question_again(project):
    """Issue 32 item 1: the undone answer left "0 upcoming · Nothing queued"."""
    runner = runner_for(project, "reviewed")
    task = runner.create_task(QUESTION)
    for _ in range(6):
        runner.run_step(task.task_id)
    (ask,) = runner.get_upcoming_steps(task.task_id)
    runner.run_step(task.task_id, input="Yes, send it.")

    runner.undo_step(task.task_id)

    (again,) = runner.get_upcoming_steps(task.task_id)
    assert (again.kind, again.name, again.input) == (StepKind.HUMAN, "review", None)
    assert again.awaits_answer
    assert again.step_state[INTERRUPT_KEY] == ask.step_state[INTERRUPT_KEY]
    done = runner.run_step(task.task_id, input="No, hold it.")
    assert done.is_last and done.output == "Sent. The reviewer said: No, hold it."


def test_a_new_runner_on_the_same_database_goes_on(project):
    db = project / "shared.db"
    runner = runner_for(project, db=db)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)

    again = runner_for(project, db=db)  # Another process: the graph rebuilt from its target.
    assert [o.task_step.name for o in again.get_completed_steps(task.task_id)] == [
        "agent",
        "tools",
    ]
    outputs = run_to_end(again, task.task_id)
    assert [o.task_step.name for o in outputs] == ["agent", "tools", "agent"]
    assert outputs[-1].output == "The answer is 405."


def test_a_node_that_raises_fails_its_step_with_the_traceback_and_loses_nothing(project):
    runner = runner_for(project, "audited")
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)
    before = runner.get_task(task.task_id)
    (audit,) = runner.get_upcoming_steps(task.task_id)
    assert audit.name == "audit"

    (project / "audit_down").write_text("down")
    with pytest.raises(StepError, match="audit service down") as raised:
        runner.run_step(task.task_id)
    trace = raised.value.params["cause_params"]["traceback"]
    assert "graph.py" in trace and 'raise RuntimeError("audit service down")' in trace
    failed = runner.get_step(task.task_id, audit.step_id)
    assert failed.status is StepStatus.FAILED and failed.error_params["traceback"] == trace
    after = runner.get_task(task.task_id)
    assert after.extra_state == before.extra_state
    assert after.memory.get_all() == before.memory.get_all()

    (project / "audit_down").unlink()
    retried = runner.run_step(task.task_id)
    assert (retried.task_step.name, retried.task_step.kind) == ("audit", StepKind.CUSTOM)
    assert run_to_end(runner, task.task_id)[-1].output == "The answer is 405."


def test_the_preview_is_the_messages_the_next_model_node_gets(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    first = runner.preview_messages(task.task_id)
    assert [(m.role, m.content) for m in first] == [("user", QUESTION)]
    runner.run_step(task.task_id)
    assert runner.preview_messages(task.task_id) == []  # The tools node calls no model.
    runner.run_step(task.task_id)

    preview = runner.preview_messages(task.task_id)
    assert [m.role for m in preview] == ["user", "assistant", "tool"]
    steered = runner.preview_messages(task.task_id, input="Show your work.")
    assert (steered[-1].role, steered[-1].content) == ("user", "Show your work.")
    out = runner.run_step(task.task_id, input="Show your work.")
    assert runner.get_messages_sent(task.task_id, out.task_step.step_id) == steered


def test_feedback_reaches_the_model_and_not_before_a_tools_node(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    with pytest.raises(UserError) as refused:
        runner.add_feedback(task.task_id, "Be brief.")
    assert refused.value.code == "step_action_unsupported"
    runner.run_step(task.task_id)

    runner.add_feedback(task.task_id, "Be brief.")
    out = runner.run_step(task.task_id)
    sent = runner.get_messages_sent(task.task_id, out.task_step.step_id)
    assert (sent[-1].role, sent[-1].content) == ("user", "Be brief.")
    final = run_to_end(runner, task.task_id)[-1]
    assert final.output == "The answer is 405. (noted: Be brief.)"
    memory = runner.get_task(task.task_id).memory.get_all()
    assert [m.content for m in memory].count("Be brief.") == 1  # Mirrored once.


def test_a_tool_breakpoint_stops_before_the_tools_node_runs_the_call(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    stop = runner.run_until(task.task_id, stop=[OnTool("add")])
    assert stop.reason == "breakpoint"
    assert [o.task_step.name for o in stop.outputs] == ["agent", "tools", "agent"]
    (held,) = runner.get_upcoming_steps(task.task_id)
    assert (held.kind, held.name, held.needs_approval) == (StepKind.TOOL, "tools", False)
    assert held.step_state["held"] and held.input == {
        "tool": "add",
        "args": {"a": 363, "b": 42},
        "call_id": "call_add_2",
    }

    rest = runner.run_until(task.task_id, stop=[OnTool("add")], resume=True)
    assert rest.reason == "last_step" and rest.outputs[-1].output == "The answer is 405."
    assert rest.outputs[0].tool_calls[0].content == "405"


def test_a_super_step_cannot_be_skipped_and_says_why(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    (step,) = runner.get_upcoming_steps(task.task_id)
    with pytest.raises(UserError) as refused:
        runner.skip_step(task.task_id, step.step_id)
    assert refused.value.code == "step_action_unsupported"
    assert "nodes after it come from what it writes" in str(refused.value)


def test_the_users_graph_object_is_left_alone(project):
    from agent_core.adapters.langgraph import LangGraphWorker

    registry = UserCodeRegistry(project=project, agents={"lg": "graph.py:graph"})
    (entry,) = registry.agents()
    graph = entry.agent
    worker = registry.build_agent("lg", llm=None, tool_approval=False)
    assert isinstance(worker, LangGraphWorker) and worker.graph is graph
    assert graph.checkpointer is None  # Stepwise's checkpointer sits on its own copy.
    assert worker.own_model == "arithmetic"  # The model its agent node calls, not the app's.


def test_the_next_task_of_a_conversation_starts_from_its_earlier_turns(project):
    registry = UserCodeRegistry(project=project, agents={"lg": "graph.py:graph"})
    runner = AgentRunner(registry.build_agent("lg", llm=None))  # One conversation, in memory.
    first = runner.create_task(QUESTION)
    run_to_end(runner, first.task_id)
    runner.finalize_response(first.task_id)

    second = runner.create_task("And (2 * 5) + 1?")
    preview = runner.preview_messages(second.task_id)
    earlier = ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert [m.role for m in preview] == [*earlier, "user"]
    assert preview[-1].content == "And (2 * 5) + 1?"
    outputs = run_to_end(runner, second.task_id)
    assert outputs[-1].output == "The answer is 11."
    assert runner.get_messages_sent(second.task_id, outputs[0].task_step.step_id) == preview
    memory = [m.content for m in runner.get_task(second.task_id).memory.get_all()]
    assert memory.count(QUESTION) == 1 and memory.count("And (2 * 5) + 1?") == 1


def test_run_until_stops_before_an_interrupts_question_and_goes_on_once_answered(project):
    runner = runner_for(project, "reviewed")
    task = runner.create_task(QUESTION)
    stop = runner.run_until(task.task_id)
    assert stop.reason == "question"
    (ask,) = runner.get_upcoming_steps(task.task_id)
    assert ask.kind is StepKind.HUMAN and ask.awaits_answer and ask.status == "upcoming"
    runner.edit_step(task.task_id, ask.step_id, "yes")
    assert runner.run_until(task.task_id).reason == "last_step"


def test_the_example_graph_runs_to_its_reviewed_answer(tmp_path):
    examples = Path(__file__).resolve().parents[3] / "examples"
    project = tmp_path / "mine"
    project.mkdir()
    shutil.copy(examples / "langgraph_agent.py", project / "graph.py")
    runner = runner_for(project)
    assert runner.agent_worker.own_model == "stand-in"
    task = runner.create_task(QUESTION)
    names = [runner.run_step(task.task_id).task_step.name for _ in range(6)]
    assert names == ["agent", "tools", "agent", "tools", "agent", "review"]
    (ask,) = runner.get_upcoming_steps(task.task_id)
    assert ask.step_state[INTERRUPT_KEY]["answer"] == "The answer is 405."
    done = runner.run_step(task.task_id, input="yes")
    assert done.is_last and done.output == "Sent. The reviewer said: yes"


def test_a_streaming_model_streams_its_reply_to_whoever_listens(project):
    from agent_core.events import StepCompletedEvent, TokenDeltaEvent

    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    first = list(runner.stream_step(task.task_id))[-1]
    assert isinstance(first, StepCompletedEvent)  # A streamed call is a call all the same:
    assert first.output.output == 'multiply({"a": 121, "b": 3})'
    for _ in range(3):
        runner.run_step(task.task_id)
    events = list(runner.stream_step(task.task_id))
    deltas = [e.delta for e in events if isinstance(e, TokenDeltaEvent)]
    assert deltas == ["The", " ", "answer", " ", "is", " ", "405."]
    (done,) = [e for e in events if isinstance(e, StepCompletedEvent)]
    assert done.output.output == "The answer is 405." and done.output.usage.completion_tokens == 7
