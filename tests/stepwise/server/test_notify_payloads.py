"""The NOTIFY bridge's payloads: under PostgreSQL's 8000 bytes, one commit notice per task."""

from __future__ import annotations

import json

from agent_core.host.notify import MAX_PAYLOAD_BYTES, _payloads, channel_of


def _delta(step: str, text: str) -> dict:
    return {"kind": "token_delta", "step_id": step, "delta": text}


def test_a_long_run_of_events_is_cut_under_the_limit_and_only_its_last_part_ends_it():
    notices = [
        {"o": "a", "t": "task", "s": "step", "e": [_delta("step", "é" * 500)]} for _ in range(60)
    ]
    notices.append({"o": "a", "t": "task", "s": "step", "e": [], "end": True})
    payloads = _payloads(notices)
    parts = [json.loads(p) for p in payloads]
    assert len(payloads) > 1
    assert all(len(p.encode()) <= MAX_PAYLOAD_BYTES for p in payloads)
    assert sum(len(part["e"]) for part in parts) == 60  # Every event, in order, once.
    assert [part["end"] for part in parts] == [False] * (len(parts) - 1) + [True]


def test_commits_to_one_task_are_told_once_and_a_stop_is_kept_apart():
    notices = [{"o": "a", "t": "t1"}, {"o": "a", "t": "t1"}, {"o": "a", "t": "t2"}]
    notices.append({"o": "a", "t": "t1", "s": "s1", "stop": True})
    told = [json.loads(p) for p in _payloads(notices)]
    assert told == [
        {"o": "a", "t": "t1"},
        {"o": "a", "t": "t2"},
        {"o": "a", "t": "t1", "s": "s1", "stop": True},
    ]


def test_the_channel_is_the_schemas_and_fits_an_identifier():
    assert channel_of("stepwise") == "stepwise_events_stepwise"
    assert len(channel_of("s" * 63)) == 63
