"""Step, undo and fork racing on one task over HTTP, on a real PostgreSQL.

A race between clients is theirs to settle: each request either does what it asked (2xx) or is
refused with 409 and a code saying the task moved on. It used to end in a deadlock answered
503 with the database's own words (its SQL, its process ids), or a fork racing an undo in a
400; and the task must read back whole afterwards.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from stepwise.server import ServerSettings

from .conftest import running_server

ROUNDS = 20
RACE_CODES = {"task_changed", "conflict", "step_running", "nothing_to_run"}
"""The codes (or reasons) a lost race may answer with; each a 409."""
LEAKS = ("deadlock", "process ", "SQL", "psycopg", "sqlstate", "transaction", "CONTEXT:")


@pytest.fixture
def urls(
    tmp_path: Path, postgres_url: str, postgres_schema: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, str]]:
    """Two servers (two runtimes, as two processes of a team) on one PostgreSQL schema."""
    monkeypatch.setenv("STEPWISE_WORKSPACES", str(tmp_path / "ws"))
    settings = ServerSettings(db=f"{postgres_url}?schema={postgres_schema}", token=None)
    with running_server(settings) as one, running_server(settings) as two:
        yield one, two


def _at_once(*calls: Callable[[], httpx.Response]) -> list[httpx.Response]:
    """Run `calls` on threads released together; their responses in order."""
    start, answers = threading.Barrier(len(calls)), [None] * len(calls)

    def run(i: int) -> None:
        start.wait(timeout=30)
        answers[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(answer is not None for answer in answers)
    return answers  # type: ignore[return-value]


def _check(response: httpx.Response) -> None:
    """2xx, or a 409 whose code says the task moved on; never the database's internals."""
    text = response.text
    assert not any(leak in text for leak in LEAKS), text
    if response.is_success:
        return
    assert response.status_code == 409, text
    error = response.json()["error"]
    assert {error["code"], error.get("reason")} & RACE_CODES, text


def _consistent(client: httpx.Client, task_id: str) -> None:
    """The task reads back whole: its live steps are numbered 1.., and the views agree."""
    view = client.get(f"/stepwise/v1/tasks/{task_id}")
    assert view.status_code == 200, view.text
    steps = client.get(f"/ap/v1/agent/tasks/{task_id}/steps", params={"page_size": 100})
    assert steps.status_code == 200, steps.text
    done = [s for s in steps.json()["steps"] if s["status"] == "completed"]
    assert [s["additional_output"]["number"] for s in done] == list(range(1, len(done) + 1))


def _task(client: httpx.Client) -> str:
    created = client.post("/ap/v1/agent/tasks", json={"input": "What is (121 * 3) + 42?"})
    assert created.status_code == 200, created.text
    return created.json()["task_id"]


def test_step_racing_undo_is_a_2xx_or_a_409_and_the_task_stays_whole(
    urls: tuple[str, str],
) -> None:
    answers = []
    with (
        httpx.Client(base_url=urls[0], timeout=60) as one,
        httpx.Client(base_url=urls[1], timeout=60) as two,
    ):
        for _ in range(ROUNDS):
            task_id = _task(one)
            for _ in range(2):
                ran = one.post(f"/ap/v1/agent/tasks/{task_id}/steps")
                assert ran.status_code == 200, ran.text
            round_answers = _at_once(
                lambda t=task_id: one.post(f"/ap/v1/agent/tasks/{t}/steps"),
                lambda t=task_id: two.post(f"/stepwise/v1/tasks/{t}/undo", json={}),
                lambda t=task_id: two.post(f"/ap/v1/agent/tasks/{t}/steps"),
                lambda t=task_id: one.post(f"/stepwise/v1/tasks/{t}/undo", json={}),
            )
            for answer in round_answers:
                _check(answer)
            answers += round_answers
            _consistent(one, task_id)
            _consistent(two, task_id)
    assert any(a.is_success for a in answers) and not all(a.is_success for a in answers)


def test_fork_racing_undo_is_a_2xx_or_a_409_and_both_tasks_stay_whole(
    urls: tuple[str, str],
) -> None:
    outcomes = set()
    with (
        httpx.Client(base_url=urls[0], timeout=60) as one,
        httpx.Client(base_url=urls[1], timeout=60) as two,
    ):
        for _ in range(ROUNDS):
            task_id = _task(one)
            first = one.post(f"/ap/v1/agent/tasks/{task_id}/steps")
            assert first.status_code == 200, first.text
            step_id = first.json()["step_id"]
            fork, undo = _at_once(
                lambda t=task_id, s=step_id: one.post(f"/stepwise/v1/tasks/{t}/steps/{s}/fork"),
                lambda t=task_id: two.post(f"/stepwise/v1/tasks/{t}/undo", json={}),
            )
            _check(fork)
            _check(undo)
            outcomes.add((fork.status_code, undo.status_code))
            _consistent(one, task_id)
            if fork.is_success:
                _consistent(two, fork.json()["task_id"])
    assert (409, 200) in outcomes or (200, 200) in outcomes, outcomes
