"""Prompts stored as runs into a task's log of messages (issue 33); old files read as they are."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

from agent_core import AgentRunner
from agent_core.llms import ChatMessage, ScriptedLLM
from agent_core.memory import ChatMemoryBuffer
from agent_core.store import SQLiteStore
from agent_core.store._blobs import pack, unpack
from agent_core.store._prompt_log import PromptLog, runs_of
from agent_core.store._records import prompt_record
from agent_core.tools import FunctionTool
from agent_core.types import TaskStepOutput
from agent_core.workers import ReActAgentWorker

QUESTION = "What is 1 + 2?"
CALL_ADD = 'Thought: add.\nAction: add\nAction Input: {"a": 1, "b": 2}'


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _runner(store: SQLiteStore, llm: ScriptedLLM, *, token_limit: int = 64_000) -> AgentRunner:
    worker = ReActAgentWorker.from_tools([FunctionTool.from_defaults(fn=add)], llm=llm)
    return AgentRunner(worker, store=store, memory=ChatMemoryBuffer(token_limit=token_limit))


def _encode_all(log: PromptLog, prompts: list[list[ChatMessage]]) -> list[str]:
    records = []
    for sent in prompts:
        encoded = log.encode(sent)
        log.extend(encoded.appended)
        records.append(encoded.record)
    return records


def test_a_sliding_window_prompt_is_two_runs_and_its_log_grows_by_what_is_new() -> None:
    system = ChatMessage(role="system", content="tools")
    history: list[ChatMessage] = []
    prompts = []
    for _ in range(300):  # The same two texts again and again, as the demo's steps are.
        history += [ChatMessage(role="assistant", content="act"), ChatMessage(role="user")]
        prompts.append([system, *history[-50:]])
    log = PromptLog()
    records = _encode_all(log, prompts)
    assert len(log.messages) == 1 + len(history)
    assert all(len(runs_of(r)) <= 2 for r in records)
    assert [log.decode(runs_of(r)) for r in records] == prompts


def test_a_cold_log_read_back_encodes_without_copying_the_window_again() -> None:
    """A second process's copy (equal messages, other objects) still finds the runs."""
    system = ChatMessage(role="system", content="tools")
    history = [ChatMessage(role="user", content=f"m{i % 3}") for i in range(40)]
    log = PromptLog()
    _encode_all(log, [[system, *history]])
    cold = PromptLog()
    cold.extend(ChatMessage.model_validate_json(m.model_dump_json()) for m in log.messages)
    copies = [ChatMessage.model_validate_json(m.model_dump_json()) for m in history]
    later = [ChatMessage(role="system", content="tools"), *copies[5:], ChatMessage(role="user")]
    [record] = _encode_all(cold, [later])
    assert len(cold.messages) == len(log.messages) + 1
    assert cold.decode(runs_of(record)) == later


def test_any_prompts_round_trip_exactly() -> None:
    rng = random.Random(33)
    texts = ["a", "b", "c", "Observation: 3"]
    pool = [ChatMessage(role=rng.choice(["user", "assistant"]), content=t) for t in texts]
    log = PromptLog()
    prompts = []
    for _ in range(500):
        size = rng.randint(0, 15)
        prompts.append(
            [
                rng.choice(pool)
                if rng.random() < 0.6
                else ChatMessage(
                    role="user", content=rng.choice(texts), name=rng.choice([None, "n"])
                )
                for _ in range(size)
            ]
        )
    records = _encode_all(log, prompts)
    assert [log.decode(runs_of(r)) for r in records] == prompts


def test_large_values_are_compressed_and_plain_text_reads_as_it_is() -> None:
    big = "Observation: " + "lorem ipsum " * 1000
    packed = pack(big)
    assert isinstance(packed, bytes) and len(packed) < len(big) // 10
    assert unpack(packed) == big and unpack(big) == big and pack("short") == "short"


def test_a_long_task_stores_each_message_once_and_a_few_bytes_per_prompt(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    llm = ScriptedLLM([CALL_ADD] * 60)
    runner = _runner(store, llm, token_limit=400)  # The window slides after a few steps.
    task_id = runner.create_task(QUESTION).task_id
    runner.set_limits(task_id, max_iterations=100)
    ran = [runner.run_step(task_id).task_step.step_id for _ in range(60)]
    logged = store._db.execute("SELECT COUNT(*) FROM prompt_log").fetchone()[0]
    # The system message, the question, two a step (the last step's reach the next prompt).
    assert logged == 1 + 1 + 2 * 59
    longest = store._db.execute("SELECT MAX(length(data)) FROM prompts").fetchone()[0]
    assert longest < 40
    assert [store.load_messages_sent(task_id, s) for s in ran] == llm.requests


def _as_layout_4(path: Path, requests: list[list[ChatMessage]], step_ids: list[str]) -> None:
    """Rewrite a file as layout 4 wrote it: whole prompts as JSON, no prompt log."""
    with sqlite3.connect(path) as db:
        for step_id, sent in zip(step_ids, requests, strict=True):
            output = TaskStepOutput.model_construct(messages_sent=sent)
            db.execute(
                "UPDATE prompts SET data = ? WHERE step_id = ?", (prompt_record(output), step_id)
            )
        db.execute("DROP TABLE prompt_log")
        db.execute("PRAGMA user_version = 4")


def test_a_file_of_layout_4_reads_every_prompt_and_writes_on(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    llm = ScriptedLLM([CALL_ADD] * 4)
    store = SQLiteStore(path)
    runner = _runner(store, llm)
    task_id = runner.create_task(QUESTION).task_id
    ran = [runner.run_step(task_id).task_step.step_id for _ in range(3)]
    store.close()
    _as_layout_4(path, llm.requests, ran)
    with sqlite3.connect(path) as db:
        (first,) = db.execute("SELECT data FROM prompts LIMIT 1").fetchone()
    assert json.loads(first)[0]["role"] == "system"  # The old form: the whole prompt.

    reopened = SQLiteStore(path)
    assert [reopened.load_messages_sent(task_id, s) for s in ran] == llm.requests
    runner = _runner(reopened, llm)
    ran.append(runner.run_step(task_id).task_step.step_id)
    assert [reopened.load_messages_sent(task_id, s) for s in ran] == llm.requests
    assert reopened._db.execute("PRAGMA user_version").fetchone() == (5,)
