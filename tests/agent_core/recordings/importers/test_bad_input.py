"""Files that are not what they claim: a typed error naming the problem, or a task with a note.

Never a half-written task: a refused file leaves the store as it was.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from agent_core.recordings.importers import (
    MAX_IMPORT_BYTES,
    MAX_SPANS,
    TraceImportError,
    import_file,
)
from agent_core.store.memory import InMemoryStore
from agent_core.types import TaskState
from tests.agent_core.recordings.importers._traces import otlp_json, pydantic_ai_trace

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32).decode()


def _refused(store: InMemoryStore, data: bytes | Path, code: str) -> TraceImportError:
    with pytest.raises(TraceImportError) as refused:
        import_file(data, store, name="bad.json")
    assert refused.value.code == code, refused.value
    assert store.list_tasks() == []  # Nothing half-written.
    return refused.value


def _span(span_id: str, parent: str = "", **attrs: Any) -> dict[str, Any]:
    return {
        "traceId": "ab" * 16,
        "spanId": span_id.rjust(16, "0"),
        "parentSpanId": parent.rjust(16, "0") if parent else "",
        "name": attrs.pop("name", "span"),
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + int(span_id, 16)),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + int(span_id, 16) + 1000),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }


def _chat(span_id: str, parent: str = "", messages: Any = None) -> dict[str, Any]:
    sent = messages or [{"role": "user", "parts": [{"type": "text", "content": "Hi?"}]}]
    return _span(
        span_id,
        parent,
        name="chat m",
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(sent),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Hello."}]}]
            ),
        },
    )


def _otlp(*spans: dict[str, Any]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}).encode()


def _only(store: InMemoryStore, data: bytes) -> TaskState:
    [task_id] = import_file(data, store)
    state = store.load_task(task_id)
    assert state is not None
    return state


def _notes(state: TaskState) -> list[str]:
    return [n.message for s in state.completed for n in state.outputs[s].notes]


def test_broken_json_names_where_it_broke(store: InMemoryStore) -> None:
    data = json.dumps(otlp_json(pydantic_ai_trace())).encode()[:-40]
    error = _refused(store, data, "trace_unreadable")
    assert "not valid JSON" in error.message and error.params["file"] == "bad.json"


def test_a_broken_line_of_json_lines_names_its_line(store: InMemoryStore) -> None:
    good = json.dumps(otlp_json(pydantic_ai_trace())).encode()
    error = _refused(store, good + b"\n" + good + b"\n{broken\n", "trace_unreadable")
    assert error.params["line"] == 3


def test_a_file_without_model_calls_is_refused(store: InMemoryStore) -> None:
    _refused(store, _otlp(_span("1", name="GET /health")), "trace_no_model_calls")


def test_an_unknown_format_names_the_ones_read(store: InMemoryStore) -> None:
    error = _refused(store, b'{"hello": "world"}', "trace_format_unknown")
    assert "langsmith" in error.params["supported"]
    _refused(store, b"name,age\nx,1\n", "trace_unreadable")  # Not JSON at all.


def test_a_span_without_ids_is_named(store: InMemoryStore) -> None:
    error = _refused(store, _otlp({"name": "x"}), "trace_malformed")
    assert error.span == "#1"


def test_spans_whose_parents_are_missing_are_read_in_time_order_with_a_note(
    store: InMemoryStore,
) -> None:
    state = _only(store, _otlp(_chat("2", parent="99"), _span("3", parent="98", name="mystery")))
    assert len(state.completed) == 1
    notes = _notes(state)
    assert any("name a parent the file lacks" in n and "0000000000000099" in n for n in notes)
    assert any("mystery (span): not a model or tool call" in n for n in notes)


def test_100000_spans_are_refused_without_reading_them_all(store: InMemoryStore) -> None:
    spans = [_span(format(i + 1, "x")) for i in range(100_000)]
    error = _refused(store, _otlp(_chat("1"), *spans), "trace_too_large")
    assert error.params["what"] == "spans" and error.params["limit"] == MAX_SPANS


def test_a_100_mb_file_is_refused_before_it_is_read(tmp_path: Path, store: InMemoryStore) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as file:
        file.truncate(100 * 1024 * 1024)  # Sparse: its size is what is checked, first.
    error = _refused(store, big, "trace_too_large")
    assert error.params["limit"] == MAX_IMPORT_BYTES and error.params["size"] == 100 * 1024**2


def test_nesting_10000_deep_is_refused(store: InMemoryStore) -> None:
    _refused(store, b'{"resourceSpans": ' + b"[" * 10_000 + b"]" * 10_000 + b"}", "trace_too_deep")


def test_a_span_chain_10000_deep_is_read_without_recursion(store: InMemoryStore) -> None:
    chain = [_span(format(i + 2, "x"), parent=format(i + 1, "x")) for i in range(10_000)]
    state = _only(store, _otlp(_chat("1"), *chain))
    assert len(state.completed) == 1  # The chain's spans hold no call: notes, bounded.
    assert any("more spans that are no model or tool call" in n for n in _notes(state))


def test_lone_surrogates_are_replaced_and_noted(store: InMemoryStore) -> None:
    sent = [{"role": "user", "parts": [{"type": "text", "content": "bad \ud800 half"}]}]
    data = _otlp(_chat("1", messages=sent))
    assert b"\\\\ud800" in data  # Escaped twice: it is in the attribute's own JSON text.
    state = _only(store, data)
    assert state.task.input == "bad \ufffd half"
    assert any("lone surrogate" in n for n in _notes(state))


def test_image_parts_are_kept_when_recorded_and_never_fetched(store: InMemoryStore) -> None:
    sent = [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "What is in these?"},
                {"type": "blob", "modality": "image", "mime_type": "image/png", "content": PNG},
                {"type": "uri", "modality": "image", "uri": "http://192.0.2.1/cat.png"},
            ],
        }
    ]
    state = _only(store, _otlp(_chat("1", messages=sent)))
    [message] = store.load_messages_sent(state.task_id, state.completed[0])
    assert len(message.images) == 1 and message.images[0].mime_type == "image/png"
    assert "http://192.0.2.1/cat.png, not fetched" in message.content
    assert any("given by URL (never fetched" in n for n in _notes(state))
