"""`ControlPlaneState`: the control plane's tasks, hops, services and inbox, in SQL.

Every change is one transaction, and the ones a redelivered message could repeat are
conditional (`... WHERE status = 'sent'`), so handling a message twice changes nothing the
second time: the handlers are idempotent by hop state, not by luck. That state, the hop
watch's deadlines and resends included, is all in the database, so control planes sharing a
PostgreSQL database (`database.py`) agree on it; SQLite serves one control plane.
"""

from __future__ import annotations

import json
import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from stepwise.services.control_plane.database import open_database
from stepwise.services.errors import (
    HopNotPendingError,
    HumanRequestNotWaitingError,
    UnknownHopError,
    UnknownHumanRequestError,
    UnknownTaskError,
)
from stepwise.services.messages import ServiceDefinition, TaskDefinition, new_id
from stepwise.services.records import (
    TASK_LIST_TEXT_LIMIT,
    HopRecord,
    HopStatus,
    HumanRequest,
    HumanRequestStatus,
    ServiceKind,
    ServiceRecord,
    TaskRecord,
    TaskStatus,
)

__all__ = ["ControlPlaneState"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS services (
    service_name TEXT PRIMARY KEY, description TEXT NOT NULL, kind TEXT NOT NULL,
    host TEXT, port INTEGER, registered_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY, input TEXT NOT NULL, status TEXT NOT NULL,
    step_mode INTEGER NOT NULL, session_id TEXT, result TEXT, error TEXT,
    orchestrator_state TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS hops (
    hop_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, seq INTEGER NOT NULL, status TEXT NOT NULL,
    proposed_service TEXT NOT NULL, proposed_input TEXT NOT NULL, service_name TEXT,
    input TEXT, edited INTEGER NOT NULL DEFAULT 0, result TEXT, error TEXT,
    service_task_id TEXT, message_id TEXT NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, resends INTEGER NOT NULL DEFAULT 0,
    watch_at REAL, UNIQUE (task_id, seq));
CREATE TABLE IF NOT EXISTS human_requests (
    request_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, hop_id TEXT, service_name TEXT NOT NULL,
    prompt TEXT NOT NULL, status TEXT NOT NULL, answer TEXT, reply_to TEXT NOT NULL,
    created_at REAL NOT NULL, answered_at REAL);
CREATE INDEX IF NOT EXISTS tasks_by_time ON tasks (created_at);
"""
# Columns added since the first layout, added to a file written before them.
_ADDED = (("hops", "resends", "INTEGER NOT NULL DEFAULT 0"), ("hops", "watch_at", "REAL"))
# When the hop watch next looks at a sent hop: as set, else its timeout after it was sent.
_WATCH_AT = "COALESCE(watch_at, updated_at + ?)"

_TASK_COLUMNS = (
    "task_id, input, status, step_mode, session_id, result, error, created_at, updated_at, "
    "(SELECT COUNT(*) FROM hops WHERE hops.task_id = tasks.task_id)"
)
# A list reads one character past the limit of each long text, to know it was cut.
_TASK_LIST_COLUMNS = (
    f"task_id, substr(input, 1, {TASK_LIST_TEXT_LIMIT + 1}), status, step_mode, session_id, "
    f"substr(result, 1, {TASK_LIST_TEXT_LIMIT + 1}), "
    f"substr(error, 1, {TASK_LIST_TEXT_LIMIT + 1}), created_at, updated_at, "
    "(SELECT COUNT(*) FROM hops WHERE hops.task_id = tasks.task_id)"
)
_HOP_COLUMNS = (
    "hop_id, task_id, seq, status, proposed_service, proposed_input, service_name, input, "
    "edited, result, error, service_task_id, message_id, created_at, updated_at"
)
_REQUEST_COLUMNS = (
    "request_id, task_id, hop_id, service_name, prompt, status, answer, reply_to, created_at, "
    "answered_at"
)


class ControlPlaneState:
    """The control plane's records in one database.

    Args:
        db: A SQLite file, ":memory:", or a `postgresql://` URL (several control planes may
            share one; `?schema=` picks its schema, default "stepwise_services").

    Safe to use from several threads: short transactions.
    """

    def __init__(self, db: str | Path = ":memory:") -> None:
        self.path = str(db)
        self._db = open_database(db, _SCHEMA)
        for table, column, declaration in _ADDED:
            self._db.ensure_column(table, column, declaration)
        self._transaction = self._db.transaction
        self._rows = self._db.rows

    @property
    def where(self) -> str:
        """The database, to name in logs (a URL without its password)."""
        return self._db.where

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def task_lock(self, task_id: str) -> AbstractAsyncContextManager[None]:
        """Held while a handler changes the task; in the database when it is PostgreSQL."""
        return self._db.task_lock(task_id)

    # ------------------------------------------------------------------ services

    def register_service(
        self, definition: ServiceDefinition, kind: ServiceKind = ServiceKind.AGENT
    ) -> ServiceRecord:
        """Add or replace a service (registering again updates its description)."""
        record = ServiceRecord(
            service_name=definition.service_name,
            description=definition.description,
            kind=kind,
            host=definition.host,
            port=definition.port,
            registered_at=time.time(),
        )
        with self._transaction() as db:
            db.execute(
                "INSERT INTO services VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (service_name) DO "
                "UPDATE SET description = excluded.description, kind = excluded.kind, "
                "host = excluded.host, port = excluded.port, "
                "registered_at = excluded.registered_at",
                (
                    record.service_name,
                    record.description,
                    record.kind.value,
                    record.host,
                    record.port,
                    record.registered_at,
                ),
            )
        return record

    def deregister_service(self, service_name: str) -> bool:
        """Remove a service; False when none had that name."""
        with self._transaction() as db:
            cursor = db.execute("DELETE FROM services WHERE service_name = ?", (service_name,))
        return cursor.rowcount > 0

    def list_services(self) -> list[ServiceRecord]:
        """Every registered service, by name."""
        rows = self._rows("SELECT * FROM services ORDER BY service_name")
        return [_service(row) for row in rows]

    def get_service(self, service_name: str) -> ServiceRecord | None:
        """The service with this name, or None."""
        rows = self._rows("SELECT * FROM services WHERE service_name = ?", (service_name,))
        return _service(rows[0]) if rows else None

    # ------------------------------------------------------------------ tasks

    def add_task(self, task: TaskDefinition) -> bool:
        """Track a new task; False when it was already tracked (a redelivered NEW_TASK)."""
        now = time.time()
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO tasks (task_id, input, status, step_mode, session_id, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (task.task_id, task.input, TaskStatus.RUNNING.value, int(task.step_mode),
                 task.session_id, now, now),
            )  # fmt: skip
        return cursor.rowcount > 0

    def get_task(self, task_id: str) -> TaskRecord:
        """The task with this id.

        Raises:
            UnknownTaskError: No such task.
        """
        rows = self._rows(f"SELECT {_TASK_COLUMNS} FROM tasks WHERE task_id = ?", (task_id,))
        if not rows:
            raise UnknownTaskError(
                f"the control plane tracks no task {task_id!r}",
                hint="list the tasks (GET /tasks) for their ids, or create one (POST /tasks)",
                task_id=task_id,
            )
        return _task(rows[0])

    def task_definition(self, task_id: str) -> TaskDefinition:
        """The task as an orchestrator sees it."""
        task = self.get_task(task_id)
        return TaskDefinition(
            task_id=task.task_id,
            input=task.input,
            session_id=task.session_id,
            step_mode=task.step_mode,
        )

    def list_tasks(self, *, limit: int = 100, offset: int = 0) -> list[TaskRecord]:
        """Tasks, newest first, each input, result and error cut to `TASK_LIST_TEXT_LIMIT`."""
        rows = self._rows(
            f"SELECT {_TASK_LIST_COLUMNS} FROM tasks ORDER BY created_at DESC, task_id "
            "LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return [_cut(_task(row)) for row in rows]

    def orchestrator_state(self, task_id: str) -> dict[str, Any]:
        """What the orchestrator remembers about the task (its conversation, its position)."""
        rows = self._rows("SELECT orchestrator_state FROM tasks WHERE task_id = ?", (task_id,))
        return json.loads(rows[0][0]) if rows else {}

    def set_task_status(self, task_id: str, status: TaskStatus) -> None:
        """Move a task that has not ended to `status`."""
        with self._transaction() as db:
            db.execute(
                "UPDATE tasks SET status = ?, updated_at = ? WHERE task_id = ? "
                "AND status NOT IN ('completed', 'failed')",
                (status.value, time.time(), task_id),
            )

    def finish_task(self, task_id: str, result: str, orchestrator_state: dict[str, Any]) -> bool:
        """Complete a task with its final answer; False when it had already ended."""
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE tasks SET status = 'completed', result = ?, orchestrator_state = ?, "
                "updated_at = ? WHERE task_id = ? AND status NOT IN ('completed', 'failed')",
                (result, json.dumps(orchestrator_state), time.time(), task_id),
            )
        return cursor.rowcount > 0

    def fail_task(self, task_id: str, error: str, *, hop_id: str | None = None) -> bool:
        """Fail a task (and its open hop); False when it had already ended."""
        now = time.time()
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE tasks SET status = 'failed', error = ?, updated_at = ? "
                "WHERE task_id = ? AND status NOT IN ('completed', 'failed')",
                (error, now, task_id),
            )
            if hop_id is not None:
                db.execute(
                    "UPDATE hops SET status = 'failed', error = ?, updated_at = ? "
                    "WHERE hop_id = ? AND status IN ('pending', 'sent')",
                    (error, now, hop_id),
                )
        return cursor.rowcount > 0

    # ------------------------------------------------------------------ hops

    def add_hop(
        self,
        task_id: str,
        *,
        service_name: str,
        input: str,
        pending: bool,
        orchestrator_state: dict[str, Any],
    ) -> HopRecord:
        """Record the orchestrator's next hop with its new state, in one transaction.

        A `pending` hop waits for a person (step mode); otherwise it is sent as proposed.
        """
        now = time.time()
        status = HopStatus.PENDING if pending else HopStatus.SENT
        task_status = TaskStatus.AWAITING_APPROVAL if pending else TaskStatus.RUNNING
        hop_id = new_id()
        sent = (None, None) if pending else (service_name, input)
        with self._transaction() as db:
            (seq,) = db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM hops WHERE task_id = ?", (task_id,)
            ).fetchone()
            db.execute(
                f"INSERT INTO hops ({_HOP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, NULL,"
                " NULL, ?, ?, ?)",
                (hop_id, task_id, seq, status.value, service_name, input, *sent, new_id(), now,
                 now),
            )  # fmt: skip
            db.execute(
                "UPDATE tasks SET orchestrator_state = ?, status = ?, updated_at = ? "
                "WHERE task_id = ?",
                (json.dumps(orchestrator_state), task_status.value, now, task_id),
            )
        return self.get_hop(hop_id)

    def get_hop(self, hop_id: str) -> HopRecord:
        """The hop with this id.

        Raises:
            UnknownHopError: No such hop.
        """
        rows = self._rows(f"SELECT {_HOP_COLUMNS} FROM hops WHERE hop_id = ?", (hop_id,))
        if not rows:
            raise UnknownHopError(
                f"no hop {hop_id!r}", hint="GET /tasks/{task_id}/hops lists a task's hops"
            )
        return _hop(rows[0])

    def hops(self, task_id: str) -> list[HopRecord]:
        """The task's hops in order."""
        rows = self._rows(
            f"SELECT {_HOP_COLUMNS} FROM hops WHERE task_id = ? ORDER BY seq", (task_id,)
        )
        return [_hop(row) for row in rows]

    def open_hop(self, task_id: str) -> HopRecord | None:
        """The task's hop that is pending or sent, if any (at most one is)."""
        rows = self._rows(
            f"SELECT {_HOP_COLUMNS} FROM hops WHERE task_id = ? AND status IN ('pending', 'sent')"
            " ORDER BY seq DESC LIMIT 1",
            (task_id,),
        )
        return _hop(rows[0]) if rows else None

    def sent_hops(self) -> list[HopRecord]:
        """Hops sent to a service of tasks that are running (not waiting for a person)."""
        rows = self._rows(
            f"SELECT {_HOP_COLUMNS} FROM hops WHERE status = 'sent' AND task_id IN "
            "(SELECT task_id FROM tasks WHERE status = 'running') ORDER BY updated_at"
        )
        return [_hop(row) for row in rows]

    def running_task_ids(self) -> list[str]:
        """The ids of the tasks that are running, oldest first."""
        rows = self._rows("SELECT task_id FROM tasks WHERE status = 'running' ORDER BY created_at")
        return [row[0] for row in rows]

    def running_without_hop(self, *, before: float) -> list[str]:
        """Running tasks unchanged since `before` with no hop in flight (never routed)."""
        rows = self._rows(
            "SELECT task_id FROM tasks WHERE status = 'running' AND updated_at < ? AND NOT "
            "EXISTS (SELECT 1 FROM hops WHERE hops.task_id = tasks.task_id AND hops.status IN "
            "('pending', 'sent')) ORDER BY created_at",
            (before,),
        )
        return [row[0] for row in rows]

    def pending_hops(self) -> list[HopRecord]:
        """Every hop waiting for a person, oldest first."""
        rows = self._rows(
            f"SELECT {_HOP_COLUMNS} FROM hops WHERE status = 'pending' ORDER BY created_at"
        )
        return [_hop(row) for row in rows]

    # ------------------------------------------------------------------ hop watch

    def due_hops(self, *, now: float, timeout: float) -> list[HopRecord]:
        """Sent hops of running tasks the hop watch is to look at by `now`, oldest first."""
        rows = self._rows(
            f"SELECT {_HOP_COLUMNS} FROM hops WHERE status = 'sent' AND {_WATCH_AT} <= ? AND "
            "task_id IN (SELECT task_id FROM tasks WHERE status = 'running') ORDER BY updated_at",
            (timeout, now),
        )
        return [_hop(row) for row in rows]

    def due_resends(self, hop_id: str, *, now: float, timeout: float) -> int | None:
        """How often the hop was sent again, if it is sent and due by `now`; else None."""
        rows = self._rows(
            f"SELECT resends FROM hops WHERE hop_id = ? AND status = 'sent' AND {_WATCH_AT} <= ?",
            (hop_id, timeout, now),
        )
        return rows[0][0] if rows else None

    def watch_hop(self, hop_id: str, *, until: float) -> None:
        """Look at the sent hop next at `until`."""
        with self._transaction() as db:
            db.execute(
                "UPDATE hops SET watch_at = ? WHERE hop_id = ? AND status = 'sent'",
                (until, hop_id),
            )

    def claim_resend(self, hop_id: str, *, now: float, timeout: float, until: float) -> bool:
        """Take the sent, due hop's one resend (next look at `until`).

        False when it is not due, or was sent again already (here or by another control plane).
        """
        with self._transaction() as db:
            cursor = db.execute(
                f"UPDATE hops SET resends = resends + 1, watch_at = ? WHERE hop_id = ? AND "
                f"status = 'sent' AND resends = 0 AND {_WATCH_AT} <= ?",
                (until, hop_id, timeout, now),
            )
        return cursor.rowcount == 1

    def reset_watch(self) -> None:
        """Every sent hop is looked at its timeout after it was sent (the queue lost them)."""
        with self._transaction() as db:
            db.execute("UPDATE hops SET watch_at = NULL WHERE status = 'sent'")

    def release_hop(self, hop_id: str, *, service_name: str, input: str) -> HopRecord:
        """Send a pending hop: as proposed (approve) or changed (edit).

        Raises:
            HopNotPendingError: The hop was already released or rejected.
        """
        hop = self.get_hop(hop_id)
        edited = (service_name, input) != (hop.proposed_service, hop.proposed_input)
        now = time.time()
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE hops SET status = 'sent', service_name = ?, input = ?, edited = ?, "
                "updated_at = ? WHERE hop_id = ? AND status = 'pending'",
                (service_name, input, int(edited), now, hop_id),
            )
            if cursor.rowcount == 0:
                raise _not_pending(hop)
            db.execute(
                "UPDATE tasks SET status = 'running', updated_at = ? WHERE task_id = ?",
                (now, hop.task_id),
            )
        return self.get_hop(hop_id)

    def reject_hop(self, hop_id: str, reason: str) -> HopRecord:
        """Refuse a pending hop; the task fails with the reason.

        Raises:
            HopNotPendingError: The hop was already released or rejected.
        """
        hop = self.get_hop(hop_id)
        now = time.time()
        error = f"a person rejected hop {hop.seq} (to {hop.proposed_service}): {reason}"
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE hops SET status = 'rejected', error = ?, updated_at = ? "
                "WHERE hop_id = ? AND status = 'pending'",
                (reason, now, hop_id),
            )
            if cursor.rowcount == 0:
                raise _not_pending(hop)
            db.execute(
                "UPDATE tasks SET status = 'failed', error = ?, updated_at = ? WHERE task_id = ?",
                (error, now, hop.task_id),
            )
        return self.get_hop(hop_id)

    def complete_hop(
        self,
        hop_id: str,
        *,
        result: str,
        service_task_id: str | None,
        orchestrator_state: dict[str, Any],
    ) -> bool:
        """Record a sent hop's result and the orchestrator's new state; False if done before."""
        now = time.time()
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE hops SET status = 'completed', result = ?, service_task_id = ?, "
                "updated_at = ? WHERE hop_id = ? AND status = 'sent'",
                (result, service_task_id, now, hop_id),
            )
            if cursor.rowcount == 0:
                return False
            db.execute(
                "UPDATE tasks SET orchestrator_state = ?, status = 'running', updated_at = ? "
                "WHERE task_id = (SELECT task_id FROM hops WHERE hop_id = ?) "
                "AND status NOT IN ('completed', 'failed')",
                (json.dumps(orchestrator_state), now, hop_id),
            )
        return True

    # ------------------------------------------------------------------ human inbox

    def add_human_request(self, request: HumanRequest) -> bool:
        """Put a request in the inbox; False when it was there already (redelivered)."""
        with self._transaction() as db:
            cursor = db.execute(
                f"INSERT INTO human_requests ({_REQUEST_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (request.request_id, request.task_id, request.hop_id, request.service_name,
                 request.prompt, request.status.value, request.answer, request.reply_to,
                 request.created_at, request.answered_at),
            )  # fmt: skip
        return cursor.rowcount > 0

    def human_requests(self, status: HumanRequestStatus | None = None) -> list[HumanRequest]:
        """The inbox, oldest first; only requests with `status` when given."""
        where, params = ("WHERE status = ?", (status.value,)) if status else ("", ())
        rows = self._rows(
            f"SELECT {_REQUEST_COLUMNS} FROM human_requests {where} ORDER BY created_at", params
        )
        return [_request(row) for row in rows]

    def get_human_request(self, request_id: str) -> HumanRequest:
        """The request with this id.

        Raises:
            UnknownHumanRequestError: No such request.
        """
        rows = self._rows(
            f"SELECT {_REQUEST_COLUMNS} FROM human_requests WHERE request_id = ?", (request_id,)
        )
        if not rows:
            raise UnknownHumanRequestError(
                f"the human inbox has no request {request_id!r}",
                hint="GET /human/requests lists the waiting ones",
            )
        return _request(rows[0])

    def human_request_for_hop(self, hop_id: str) -> HumanRequest | None:
        """The inbox request a human service made for the hop, if it made one."""
        rows = self._rows(
            f"SELECT {_REQUEST_COLUMNS} FROM human_requests WHERE hop_id = ? "
            "ORDER BY created_at LIMIT 1",
            (hop_id,),
        )
        return _request(rows[0]) if rows else None

    def answer_human_request(self, request_id: str, answer: str) -> HumanRequest:
        """Record a person's answer.

        Raises:
            HumanRequestNotWaitingError: It was answered already.
        """
        request = self.get_human_request(request_id)
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE human_requests SET status = 'answered', answer = ?, answered_at = ? "
                "WHERE request_id = ? AND status = 'waiting'",
                (answer, time.time(), request_id),
            )
            if cursor.rowcount == 0:
                raise HumanRequestNotWaitingError(
                    f"request {request_id} was already answered: {request.answer!r}",
                    hint="each request takes one answer; the task has moved on with it",
                    task_id=request.task_id,
                )
        return self.get_human_request(request_id)


def _not_pending(hop: HopRecord) -> HopNotPendingError:
    return HopNotPendingError(
        f"hop {hop.seq} of task {hop.task_id} is {hop.status.value}, not pending: it was "
        "already approved, edited or rejected",
        hint="only a hop of a step-mode task waiting for a person can be changed; "
        "GET /hops/pending lists them",
        task_id=hop.task_id,
    )


def _service(row: tuple[Any, ...]) -> ServiceRecord:
    name, description, kind, host, port, registered_at = row
    return ServiceRecord(
        service_name=name,
        description=description,
        kind=ServiceKind(kind),
        host=host,
        port=port,
        registered_at=registered_at,
    )


def _task(row: tuple[Any, ...]) -> TaskRecord:
    task_id, input, status, step_mode, session_id, result, error, created, updated, hops = row
    return TaskRecord(
        task_id=task_id,
        input=input,
        status=TaskStatus(status),
        step_mode=bool(step_mode),
        session_id=session_id,
        result=result,
        error=error,
        hop_count=hops,
        created_at=created,
        updated_at=updated,
    )


def _cut(task: TaskRecord) -> TaskRecord:
    """`task` with each text over the list limit cut, and `truncated` when one was."""
    limit = TASK_LIST_TEXT_LIMIT
    texts = {"input": task.input, "result": task.result, "error": task.error}
    cut = {key: text[:limit] + "…" for key, text in texts.items() if text and len(text) > limit}
    return task.model_copy(update={**cut, "truncated": True}) if cut else task


def _hop(row: tuple[Any, ...]) -> HopRecord:
    keys = _HOP_COLUMNS.split(", ")
    values = dict(zip(keys, row, strict=True))
    values["edited"] = bool(values["edited"])
    return HopRecord.model_validate(values)


def _request(row: tuple[Any, ...]) -> HumanRequest:
    keys = _REQUEST_COLUMNS.split(", ")
    return HumanRequest.model_validate(dict(zip(keys, row, strict=True)))
