"""`ControlPlaneServer`: tracks tasks and services, routes each task's hops, serves its state.

It consumes the `control_plane` message type:

- NEW_TASK (from a client): track the task and ask the orchestrator for its first hop.
- COMPLETED_TASK (from a service): record the hop's result, ask the orchestrator again. A
  hop takes one result, from the service it was sent to (an inbox hop: the person's answer
  through the inbox); any other is refused and logged, and changes nothing.
- REQUEST_FOR_HELP (from a human service): put the question in the human inbox.
- DEAD_LETTER (from the queue): a message failed for good; its task fails with the reason.

Each hop the orchestrator proposes is stored before it is sent. In step mode it waits as a
pending hop until a person approves, edits (another service, another input) or rejects it;
a rejection ends the task with the person's reason (to redirect a task, edit the hop).

Handlers are idempotent: every change is conditional on the hop's stored state, and a
message Redis redelivers only resends the hop in flight (with its original message id, which
services deduplicate), which covers a crash between storing a hop and sending it.

A hop never waits forever (`hop_watch`): one its service has no live consumer for, past
`hop_timeout`, is sent again once and then fails its task with why; and when the queue lost
messages (Redis restarted empty or was flushed, a stream or group was deleted), every running
task's hop in flight is sent again, and `health()` (`/health`) says so until they move on.

With its state in PostgreSQL (`db="postgresql://..."`), several control planes on one
database and one queue handle one system: each message goes to one of them, a handler holds
its task's lock in the database, and a killed one's unacknowledged messages are taken over
by the others after the queue's visibility timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from agent_core.errors import AgentCoreError
from stepwise.http.settings import check_exposure
from stepwise.services._home import remember_home
from stepwise.services.control_plane.hop_watch import HopWatch
from stepwise.services.control_plane.state import ControlPlaneState
from stepwise.services.errors import (
    QueueUnavailableError,
    TaskFailedError,
    UnknownHopError,
    UnknownServiceError,
)
from stepwise.services.message_queues.base import (
    BaseMessageQueue,
    BaseMessageQueueConsumer,
    CallableMessageConsumer,
)
from stepwise.services.messages import (
    CONTROL_PLANE,
    ActionTypes,
    QueueMessage,
    ServiceDefinition,
    TaskDefinition,
    TaskResult,
)
from stepwise.services.names import check_service_name, is_service_name
from stepwise.services.orchestrators.base import BaseOrchestrator, FinalAnswer
from stepwise.services.records import (
    HopRecord,
    HopStatus,
    HumanRequest,
    HumanRequestStatus,
    ServiceKind,
    ServiceRecord,
    TaskRecord,
    TaskStatus,
)
from stepwise.services.services.base import REPLY_TO, HopRequest

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["ControlPlaneServer"]

logger = logging.getLogger("stepwise.services.control_plane")

_TAKES_TASKS = (ServiceKind.AGENT, ServiceKind.HUMAN)
_WAIT_POLL = 0.5  # Seconds between looks at a waited-for task another control plane may end.


class ControlPlaneServer:
    """The control plane: services, tasks and hops in SQL, an orchestrator, an HTTP API.

    Args:
        message_queue: The queue it consumes `control_plane` messages from.
        orchestrator: Chooses each task's next hop.
        db: Where its state is: a SQLite file, ":memory:" (the default: gone when it
            stops), or a `postgresql://` URL, which several control planes may share
            (`?schema=` picks the schema, default "stepwise_services"; needs the `postgres`
            extra).
        host: Where its HTTP API listens (loopback by default).
        port: Its port.
        token: When set, every route but `/health` requires `Authorization: Bearer <token>`;
            listening beyond loopback requires one (as `stepwise serve` does).
        max_body_bytes: Largest request body the API reads.
        hop_timeout: Seconds a sent hop may wait while no live consumer of its service
            holds or can take it (none started, or every replica died), before it is sent
            again; after as long again its task fails with why. A hop a live service is
            working on is never timed out, however long it runs.
        create_timeout: Seconds creating a task waits for the queue; then the task is
            stored as failed and `QueueUnavailableError` (503 over HTTP) says why.
    """

    def __init__(
        self,
        message_queue: BaseMessageQueue,
        orchestrator: BaseOrchestrator,
        *,
        db: str = ":memory:",
        host: str = "127.0.0.1",
        port: int = 8000,
        token: str | None = None,
        max_body_bytes: int = 1_000_000,
        hop_timeout: float = 120.0,
        create_timeout: float = 3.0,
    ) -> None:
        if hop_timeout <= 0 or create_timeout <= 0:
            raise ValueError("hop_timeout and create_timeout must be positive")
        self.message_queue = message_queue
        self.orchestrator = orchestrator
        self.state = ControlPlaneState(db)
        self.host = host
        self.port = port
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.hop_timeout = hop_timeout
        self.create_timeout = create_timeout
        self.hop_watch = HopWatch(self)
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._app: FastAPI | None = None

    @property
    def url(self) -> str:
        """The base URL of its HTTP API."""
        return f"http://{self.host}:{self.port}"

    def health(self) -> dict[str, str]:
        """`{"status": "ok"}`, or `degraded`/`down` with what is wrong with the queue."""
        return self.hop_watch.health.as_dict()

    @property
    def app(self) -> FastAPI:
        """Its HTTP API (FastAPI), built on first use."""
        if self._app is None:
            from stepwise.services.control_plane.api import create_control_plane_app

            self._app = create_control_plane_app(self)
        return self._app

    # ------------------------------------------------------------------ running

    def as_consumer(self) -> BaseMessageQueueConsumer:
        """A consumer of the `control_plane` message type."""
        return CallableMessageConsumer(message_type=CONTROL_PLANE, handler=self.process_message)

    async def launch_local(self) -> asyncio.Task[None]:
        """Start consuming in this event loop; cancel the returned task to stop."""
        remember_home(self.message_queue)
        consumer = self.as_consumer()
        consume = await self.message_queue.register_consumer(consumer)
        # Before any task is accepted: a Redis that restarted empty while this control plane
        # was down gets the hops in flight again; and the queue's epoch is set from now on.
        await self.hop_watch.check()

        async def run() -> None:
            watching = asyncio.create_task(self.hop_watch.run(), name="control plane hop watch")
            try:
                await consume()
            except Exception as exc:
                # Never silently deaf: say so, answer /health with 503 for a supervisor, and
                # keep the watch's clock running so no hop waits forever meanwhile.
                logger.exception("the control plane's consumer stopped; it hears nothing now")
                self.hop_watch.health.status = "down"
                self.hop_watch.health.detail = f"its consumer stopped: {_reason(exc)}"
                await watching
            finally:
                watching.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watching
                await self.message_queue.deregister_consumer(consumer)

        return asyncio.create_task(run(), name="control plane")

    async def launch_server(self) -> None:
        """Consume messages and serve the HTTP API until cancelled.

        Raises:
            UserError: `host` is beyond loopback and no token is set.
        """
        import uvicorn

        from stepwise.http.listening import uvicorn_options

        check_exposure(self.host, self.token)
        consuming = await self.launch_local()
        config = uvicorn.Config(
            self.app,
            host=self.host,
            port=self.port,
            log_level="warning",
            access_log=False,
            **uvicorn_options(),
        )
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve(), name="control plane API")
        try:
            await asyncio.shield(serving)
        except asyncio.CancelledError:
            await _let_uvicorn_stop(server, serving)
            raise
        finally:
            consuming.cancel()
            await asyncio.gather(consuming, return_exceptions=True)

    # ------------------------------------------------------------------ services

    async def register_service(
        self, definition: ServiceDefinition, *, kind: ServiceKind = ServiceKind.AGENT
    ) -> ServiceRecord:
        """Register (or update) a service; agent and human services receive hops.

        Raises:
            InvalidServiceNameError: The name is empty, too long, reserved or unsafe.
        """
        check_service_name(definition.service_name)
        return self.state.register_service(definition, kind)

    async def deregister_service(self, service_name: str) -> None:
        """Remove a service; orchestrators stop offering it (hops already sent still finish).

        Raises:
            UnknownServiceError: No service has that name.
        """
        if not self.state.deregister_service(service_name):
            raise _unknown_service(service_name)

    # ------------------------------------------------------------------ tasks

    async def create_task(
        self, task: TaskDefinition | str, *, step_mode: bool = False
    ) -> TaskRecord:
        """Track a new task and queue it (its first hop comes when the message is handled).

        Creation is one with its first publish: when the queue cannot take the message within
        `create_timeout`, the task is stored as failed with why, never left running.

        Raises:
            QueueUnavailableError: The queue could not be reached (code `queue_unavailable`).
        """
        if isinstance(task, str):
            task = TaskDefinition(input=task, step_mode=step_mode)
        self.state.add_task(task)
        message = QueueMessage(
            publisher_id="control_plane_api",
            type=CONTROL_PLANE,
            action=ActionTypes.NEW_TASK,
            data=task.model_dump(mode="json"),
        )
        try:
            await asyncio.wait_for(self.message_queue.publish(message), self.create_timeout)
        except (QueueUnavailableError, TimeoutError) as exc:
            raise self._not_queued(task.task_id, exc) from exc
        return self.state.get_task(task.task_id)

    def _not_queued(self, task_id: str, exc: BaseException) -> QueueUnavailableError:
        """Fail a task whose NEW_TASK could not be published (a late publish finds it ended)."""
        detail = exc.message if isinstance(exc, QueueUnavailableError) else "no answer"
        error = (
            f"the message queue could not be reached within {self.create_timeout:g} s, so the "
            f"task was never queued ({detail})"
        )
        if self.state.fail_task(task_id, error):
            self._wake(task_id)
        return QueueUnavailableError(
            f"the task was not created: {error}",
            hint="start the message queue (redis-server) or fix its URL, then create the task "
            "again",
            task_id=task_id,
        )

    async def wait_for_task(self, task_id: str, *, timeout: float | None = None) -> TaskRecord:  # noqa: ASYNC109
        """The task once it has ended (completed or failed).

        Woken when this control plane ends it, and looks every `_WAIT_POLL` seconds too:
        another control plane on the same database may end it.

        Raises:
            TimeoutError: It had not ended within `timeout` seconds.
        """
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(task_id, []).append(waiter)
        try:
            async with asyncio.timeout(timeout):
                while not (task := self.state.get_task(task_id)).status.ended:
                    await asyncio.wait([waiter], timeout=_WAIT_POLL)  # Leaves it pending.
                    if waiter.done():
                        await asyncio.sleep(_WAIT_POLL)  # Never a busy loop once woken.
            return task
        finally:
            waiters = self._waiters.get(task_id, [])
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters:
                self._waiters.pop(task_id, None)

    def get_task_result(self, task_id: str) -> TaskResult | None:
        """The task's result; None while it runs.

        Raises:
            UnknownTaskError: No such task.
            TaskFailedError: The task failed (the error says why).
        """
        task = self.state.get_task(task_id)
        if task.status is TaskStatus.FAILED:
            raise TaskFailedError(f"task {task_id} failed: {task.error}", task_id=task_id)
        if task.status is not TaskStatus.COMPLETED:
            return None
        hops = self.state.hops(task_id)
        return TaskResult(
            task_id=task_id,
            result=task.result or "",
            history=[_hop_summary(hop) for hop in hops],
            data={"status": task.status.value, "hop_count": len(hops)},
        )

    # ------------------------------------------------------------------ step mode

    async def approve_hop(self, task_id: str, hop_id: str) -> HopRecord:
        """Send a pending hop as the orchestrator proposed it."""
        hop = self._hop_of(task_id, hop_id)
        return await self._release(hop, hop.proposed_service, hop.proposed_input)

    async def edit_hop(
        self,
        task_id: str,
        hop_id: str,
        *,
        service_name: str | None = None,
        input: str | None = None,
    ) -> HopRecord:
        """Send a pending hop changed: to another service, with another input, or both.

        Raises:
            UnknownServiceError: `service_name` is not a registered agent or human service.
        """
        hop = self._hop_of(task_id, hop_id)
        target = hop.proposed_service if service_name is None else check_service_name(service_name)
        if target not in {service.service_name for service in self._task_takers()}:
            raise _unknown_service(target)
        return await self._release(hop, target, hop.proposed_input if input is None else input)

    async def reject_hop(self, task_id: str, hop_id: str, reason: str) -> HopRecord:
        """Refuse a pending hop: the task fails with `reason` (edit the hop to redirect it)."""
        self._hop_of(task_id, hop_id)
        async with self._lock(task_id):
            rejected = self.state.reject_hop(hop_id, reason)
        self._wake(task_id)
        return rejected

    async def _release(self, hop: HopRecord, service_name: str, input: str) -> HopRecord:
        async with self._lock(hop.task_id):
            sent = self.state.release_hop(hop.hop_id, service_name=service_name, input=input)
            await self._dispatch(sent)
        return sent

    def _hop_of(self, task_id: str, hop_id: str) -> HopRecord:
        self.state.get_task(task_id)
        hop = self.state.get_hop(hop_id)
        if hop.task_id != task_id:
            raise UnknownHopError(
                f"task {task_id} has no hop {hop_id!r}",
                hint="GET /tasks/{task_id}/hops lists the task's hops",
                task_id=task_id,
            )
        return hop

    # ------------------------------------------------------------------ human inbox

    async def answer_human_request(self, request_id: str, answer: str) -> HumanRequest:
        """Answer a request from the inbox; the answer is the human service's result."""
        answered = self.state.answer_human_request(request_id, answer)
        reply = TaskResult(
            task_id=answered.task_id,
            result=answer,
            history=[
                {"role": "user", "content": answered.prompt},
                {"role": "human", "content": answer},
            ],
            data={
                "hop_id": answered.hop_id,
                "service_name": answered.service_name,
                "human_request_id": request_id,
            },
        )
        await self.message_queue.publish(
            QueueMessage(
                publisher_id=answered.service_name,
                type=answered.reply_to,
                action=ActionTypes.COMPLETED_TASK,
                data=reply.model_dump(mode="json"),
            )
        )
        return answered

    # ------------------------------------------------------------------ messages

    async def process_message(self, message: QueueMessage) -> None:
        """Handle one `control_plane` message (idempotent by the state it changes)."""
        handlers = {
            ActionTypes.NEW_TASK: self._on_new_task,
            ActionTypes.COMPLETED_TASK: self._on_completed_hop,
            ActionTypes.REQUEST_FOR_HELP: self._on_request_for_help,
            ActionTypes.DEAD_LETTER: self._on_dead_letter,
        }
        handler = handlers.get(message.action) if message.action else None
        if handler is None:
            logger.warning("control plane ignored a %s message %s", message.action, message.id_)
            return
        await handler(message)

    async def _on_new_task(self, message: QueueMessage) -> None:
        task = TaskDefinition.model_validate(message.data)
        self.state.add_task(task)  # Already there when created over HTTP: ignored.
        async with self._lock(task.task_id):
            await self._advance(task.task_id, resend=message.delivery_count > 1)

    async def _on_completed_hop(self, message: QueueMessage) -> None:
        result = TaskResult.model_validate(message.data)
        hop_id = result.data.get("hop_id")
        try:
            hop = self.state.get_hop(str(hop_id))
        except UnknownHopError:
            logger.warning("control plane got a result for no known hop (%s)", hop_id)
            return
        async with self._lock(hop.task_id):
            hop = self.state.get_hop(hop.hop_id)
            if hop.status is not HopStatus.SENT:
                await self._on_answered_hop(hop, message)
                return
            if (refused := self._refusal(hop, message, result)) is not None:
                _refuse(hop, message, refused)
                return
            try:
                state = self.state.orchestrator_state(hop.task_id)
                new_state = await self.orchestrator.add_result_to_state(hop, result, state)
            except Exception as exc:  # An orchestrator's failure fails its task, with why.
                self._fail(hop.task_id, f"the orchestrator failed on hop {hop.seq}: {exc}")
                return
            service_task_id = result.data.get("service_task_id")
            self.state.complete_hop(
                hop.hop_id,
                result=result.result,
                service_task_id=str(service_task_id) if service_task_id else None,
                orchestrator_state=new_state,
            )
            await self._advance(hop.task_id, resend=False)

    async def _on_answered_hop(self, hop: HopRecord, message: QueueMessage) -> None:
        """A result for a hop that has moved on: a redelivery resumes, anything else is refused.

        Redis counts a redelivery of the same entry (this control plane stopped before
        acknowledging it, perhaps before sending the next hop): take the task on from there.
        A copy of the entry, or a service's duplicate after a hop was sent again, is new to
        Redis: a hop takes one result, so it changes nothing and sends nothing again.
        """
        if message.delivery_count > 1:
            await self._advance(hop.task_id, resend=True)
            return
        _refuse(hop, message, f"it is {hop.status.value} already (a replayed or duplicate result)")

    def _refusal(self, hop: HopRecord, message: QueueMessage, result: TaskResult) -> str | None:
        """Why `result` may not complete the sent `hop`; None when it may."""
        named = result.data.get("service_name")
        answered_by = {message.publisher_id, *([named] if named is not None else [])}
        if answered_by != {hop.service_name}:
            return f"it was sent to {hop.service_name!r}, not to {message.publisher_id!r}"
        request = self.state.human_request_for_hop(hop.hop_id)
        if request is None:
            return None  # Not an inbox hop (an agent, or a human asked in a terminal).
        if request.status is not HumanRequestStatus.ANSWERED:
            return f"the person's request {request.request_id} still waits in the inbox"
        if result.data.get("human_request_id") != request.request_id:
            return f"it is not the inbox's answer to request {request.request_id}"
        return None

    async def _on_request_for_help(self, message: QueueMessage) -> None:
        request = HumanRequest.model_validate(message.data)
        self.state.add_human_request(request)
        if request.hop_id is not None and request.reply_to == CONTROL_PLANE:
            self.state.set_task_status(request.task_id, TaskStatus.AWAITING_HUMAN)

    async def _on_dead_letter(self, message: QueueMessage) -> None:
        dead = QueueMessage.model_validate(message.data.get("message", {}))
        reason = str(message.data.get("reason", "unknown"))
        task_id = dead.data.get("task_id")
        if not isinstance(task_id, str):
            logger.warning("dead letter %s (%s) names no task: %s", dead.id_, dead.type, reason)
            return
        action = dead.action.value if dead.action else "message"
        error = (
            f"{dead.type} could not handle a {action} message after {dead.delivery_count} "
            f"deliveries: {reason}"
        )
        hop_id = dead.data.get("hop_id")
        if self.state.fail_task(task_id, error, hop_id=hop_id if isinstance(hop_id, str) else None):
            self._wake(task_id)

    # ------------------------------------------------------------------ routing

    async def _advance(self, task_id: str, *, resend: bool) -> None:
        """Take the task one hop further (the task's lock is held)."""
        task = self.state.get_task(task_id)
        if task.status.ended:
            return
        open_hop = self.state.open_hop(task_id)
        if open_hop is not None:
            if resend and open_hop.status is HopStatus.SENT:
                await self._dispatch(open_hop)
            return
        services = self._task_takers()
        try:
            decision, new_state = await self.orchestrator.get_next_hop(
                self.state.task_definition(task_id),
                services,
                self.state.orchestrator_state(task_id),
            )
        except Exception as exc:  # An LLM or pipeline error: the task fails with it.
            self._fail(task_id, f"the orchestrator failed: {_reason(exc)}")
            return
        if isinstance(decision, FinalAnswer):
            self.state.finish_task(task_id, decision.result, new_state)
            self._wake(task_id)
            return
        if decision.service_name not in {service.service_name for service in services}:
            self._fail(task_id, f"the orchestrator chose {decision.service_name!r}, not a service")
            return
        hop = self.state.add_hop(
            task_id,
            service_name=decision.service_name,
            input=decision.input,
            pending=task.step_mode,
            orchestrator_state=new_state,
        )
        if hop.status is HopStatus.SENT:
            await self._dispatch(hop)

    async def _dispatch(self, hop: HopRecord) -> None:
        task = self.state.get_task(hop.task_id)
        request = HopRequest(
            task_id=hop.task_id,
            input=hop.input or "",
            session_id=task.session_id,
            hop_id=hop.hop_id,
            **{REPLY_TO: CONTROL_PLANE},
        )
        await self.message_queue.publish(
            QueueMessage(
                id_=hop.message_id,  # The same id on a resend: the service does it once.
                publisher_id=CONTROL_PLANE,
                type=hop.service_name or hop.proposed_service,
                action=ActionTypes.NEW_TASK,
                data=request.model_dump(mode="json"),
            )
        )

    def _task_takers(self) -> list[ServiceRecord]:
        # A name stored before names were checked ("", "../x") is never offered a hop.
        services = self.state.list_services()
        return [s for s in services if s.kind in _TAKES_TASKS and is_service_name(s.service_name)]

    def _fail(self, task_id: str, error: str) -> None:
        logger.warning("task %s failed: %s", task_id, error)
        open_hop = self.state.open_hop(task_id)
        self.state.fail_task(task_id, error, hop_id=open_hop.hop_id if open_hop else None)
        self._wake(task_id)

    def _lock(self, task_id: str) -> AbstractAsyncContextManager[None]:
        return self.state.task_lock(task_id)

    def _wake(self, task_id: str) -> None:
        for waiter in self._waiters.get(task_id, []):
            waiter.get_loop().call_soon_threadsafe(_settle, waiter)


async def _let_uvicorn_stop(server: Any, serving: asyncio.Task[None]) -> None:
    """Let uvicorn close its connections and lifespan, whatever stop requests follow.

    A Ctrl-C reaches this process twice (from the terminal and from `services up`): a second
    cancellation landing in uvicorn's shutdown cut its lifespan short, which logged an ERROR
    traceback on a normal stop. Later requests change nothing: uvicorn is stopping already.
    """
    server.should_exit = True
    while not serving.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(serving)


def _refuse(hop: HopRecord, message: QueueMessage, why: str) -> None:
    logger.warning(
        "control plane refused a result for hop %d of task %s from %r (message %s): %s",
        hop.seq, hop.task_id, message.publisher_id, message.id_, why,
    )  # fmt: skip


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, AgentCoreError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _unknown_service(name: str) -> UnknownServiceError:
    return UnknownServiceError(
        f"no agent or human service named {name!r} is registered",
        hint="GET /services lists the registered services",
    )


def _hop_summary(hop: HopRecord) -> dict[str, Any]:
    return {
        "hop_id": hop.hop_id,
        "service_name": hop.service_name,
        "input": hop.input,
        "result": hop.result,
        "edited": hop.edited,
    }
