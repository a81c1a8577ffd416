"""The control plane's HTTP API (FastAPI): services, tasks, hops, step mode, the human inbox.

The same gate as `stepwise serve`: a bearer token when one is set, bounded bodies, and JSON
errors `{"error": {"code", "message", "hint"}}` with a stable code. Routes that publish run
on the message queue's home loop, so the API may be served from any loop or thread.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from stepwise.http.browser_guard import BrowserGuard
from stepwise.http.errors import error_body, install_error_handlers
from stepwise.http.security import GateMiddleware
from stepwise.http.settings import allowed_hosts
from stepwise.services._home import on_home_loop
from stepwise.services.control_plane.state import ControlPlaneState
from stepwise.services.errors import (
    HopNotPendingError,
    HumanRequestNotWaitingError,
    InvalidServiceNameError,
    QueueUnavailableError,
    ServicesError,
    TaskFailedError,
    UnknownHopError,
    UnknownHumanRequestError,
    UnknownServiceError,
    UnknownTaskError,
)
from stepwise.services.message_queues.base import BaseMessageQueue
from stepwise.services.messages import ServiceDefinition, TaskDefinition, TaskResult
from stepwise.services.records import (
    HopRecord,
    HumanRequest,
    HumanRequestStatus,
    ServiceKind,
    ServiceRecord,
    TaskRecord,
    TaskStatus,
)

__all__ = [
    "AnswerBody",
    "ControlPlane",
    "CreateTaskBody",
    "DeregisterBody",
    "EditHopBody",
    "RejectHopBody",
    "ServiceRegistration",
    "TaskResultResponse",
    "create_control_plane_app",
]

T = TypeVar("T")


class ControlPlane(Protocol):
    """What the HTTP API calls on the control plane it serves (`ControlPlaneServer` is one).

    A protocol, so that this module does not import the server that builds the API from it.
    """

    message_queue: BaseMessageQueue
    state: ControlPlaneState
    token: str | None
    max_body_bytes: int

    async def register_service(
        self, definition: ServiceDefinition, *, kind: ServiceKind = ...
    ) -> ServiceRecord:
        """Register (or update) a service."""
        ...

    async def deregister_service(self, service_name: str) -> None:
        """Remove a service."""
        ...

    async def create_task(
        self, task: TaskDefinition | str, *, step_mode: bool = False
    ) -> TaskRecord:
        """Track a new task and queue it."""
        ...

    def get_task_result(self, task_id: str) -> TaskResult | None:
        """The task's result; None while it runs."""
        ...

    async def approve_hop(self, task_id: str, hop_id: str) -> HopRecord:
        """Send a pending hop as the orchestrator proposed it."""
        ...

    async def edit_hop(
        self,
        task_id: str,
        hop_id: str,
        *,
        service_name: str | None = None,
        input: str | None = None,
    ) -> HopRecord:
        """Send a pending hop changed: to another service, with another input, or both."""
        ...

    async def reject_hop(self, task_id: str, hop_id: str, reason: str) -> HopRecord:
        """Refuse a pending hop: the task fails with `reason`."""
        ...

    async def answer_human_request(self, request_id: str, answer: str) -> HumanRequest:
        """Answer a request from the inbox."""
        ...

    def health(self) -> dict[str, str]:
        """`{"status": "ok"}`, or `degraded`/`down` with what is wrong with the queue."""
        ...


class ServiceRegistration(ServiceDefinition):
    """A service registering itself: its definition and what kind of service it is."""

    kind: ServiceKind = ServiceKind.AGENT


class DeregisterBody(BaseModel):
    """Which service to remove."""

    service_name: str


class CreateTaskBody(BaseModel):
    """A new task."""

    input: str = Field(min_length=1)
    step_mode: bool = Field(default=False, description="Pause before each hop for a person.")
    session_id: str | None = None
    task_id: str | None = Field(default=None, description="Your own id; a fresh one if None.")


class TaskResultResponse(BaseModel):
    """A task's outcome: `result` once completed, `error` once failed, neither while running."""

    task_id: str
    status: TaskStatus
    result: TaskResult | None = None
    error: str | None = None


class EditHopBody(BaseModel):
    """A pending hop, changed: another service, another input, or both."""

    service_name: str | None = None
    input: str | None = None


class RejectHopBody(BaseModel):
    """Why a person refused the hop (the task fails with it)."""

    reason: str = Field(min_length=1)


class AnswerBody(BaseModel):
    """A person's answer to a human request."""

    answer: str


_STATUS_OF: list[tuple[type[ServicesError], int]] = [
    (UnknownTaskError, 404),
    (UnknownServiceError, 404),
    (UnknownHopError, 404),
    (UnknownHumanRequestError, 404),
    (HopNotPendingError, 409),
    (HumanRequestNotWaitingError, 409),
    (TaskFailedError, 409),
    (InvalidServiceNameError, 422),
    (QueueUnavailableError, 503),
]
"""A services error's HTTP status, by type; its `code` is its own (400 for the rest)."""


def create_control_plane_app(control_plane: ControlPlane) -> FastAPI:
    """The HTTP API over `control_plane`."""
    app = FastAPI(
        title="Stepwise control plane",
        summary="Services, tasks, hops, step mode and the human inbox of stepwise.services",
        version="1",
    )
    app.add_middleware(
        GateMiddleware, token=control_plane.token, max_body_bytes=control_plane.max_body_bytes
    )
    app.add_middleware(BrowserGuard, allowed_hosts=allowed_hosts())  # Runs first, as in serve.
    install_error_handlers(app)

    @app.exception_handler(ServicesError)
    async def _services_error(request: Request, exc: ServicesError) -> JSONResponse:
        status = next((s for t, s in _STATUS_OF if isinstance(exc, t)), 400)
        extra = {"task_id": exc.task_id} if exc.task_id else {}
        body = error_body(exc.code, exc.message, exc.hint, **extra)
        return JSONResponse(body, status_code=status)

    @app.get("/health", tags=["server"], summary="Whether the control plane is up (no token)")
    def health() -> JSONResponse:
        """The control plane's state: `ok`, `degraded` (200) or `down` (503).

        Degraded while it recovers lost queue messages: it still serves and routes, so a
        load balancer keeps it. Down once its consumer stopped: a supervisor restarts it.
        """
        body = control_plane.health()
        return JSONResponse(body, status_code=503 if body["status"] == "down" else 200)

    app.include_router(_services_router(control_plane))
    app.include_router(_tasks_router(control_plane))
    app.include_router(_human_router(control_plane))
    return app


def _home(control_plane: ControlPlane, coro: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
    return on_home_loop(control_plane.message_queue, coro)


def _services_router(cp: ControlPlane) -> APIRouter:
    router = APIRouter(tags=["services"])

    @router.get("/services", summary="The registered services")
    def list_services() -> list[ServiceRecord]:
        return cp.state.list_services()

    @router.get("/services/{service_name}", summary="One service")
    def get_service(service_name: str) -> ServiceRecord:
        service = cp.state.get_service(service_name)
        if service is None:
            raise UnknownServiceError(
                f"no service named {service_name!r} is registered",
                hint="GET /services lists them",
            )
        return service

    @router.post("/services/register", summary="Register or update a service")
    async def register(body: ServiceRegistration) -> ServiceRecord:
        definition = ServiceDefinition.model_validate(body.model_dump(exclude={"kind"}))
        return await cp.register_service(definition, kind=body.kind)

    @router.post("/services/deregister", summary="Remove a service")
    async def deregister(body: DeregisterBody) -> dict[str, str]:
        await cp.deregister_service(body.service_name)
        return {"deregistered": body.service_name}

    return router


def _tasks_router(cp: ControlPlane) -> APIRouter:
    router = APIRouter(tags=["tasks"])

    @router.post("/tasks", status_code=201, summary="Create a task (step_mode pauses each hop)")
    async def create_task(body: CreateTaskBody) -> TaskRecord:
        task = TaskDefinition(
            input=body.input, step_mode=body.step_mode, session_id=body.session_id,
            **({"task_id": body.task_id} if body.task_id else {}),
        )  # fmt: skip
        return await _home(cp, cp.create_task(task))

    @router.get("/tasks", summary="Tasks, newest first (long texts cut; GET one for all)")
    def list_tasks(
        limit: int = Query(default=100, ge=1, le=1000), offset: int = Query(default=0, ge=0)
    ) -> list[TaskRecord]:
        return cp.state.list_tasks(limit=limit, offset=offset)

    @router.get("/tasks/{task_id}", summary="One task")
    def get_task(task_id: str) -> TaskRecord:
        return cp.state.get_task(task_id)

    @router.get("/tasks/{task_id}/result", summary="The task's result, or why it failed")
    def get_result(task_id: str) -> TaskResultResponse:
        task = cp.state.get_task(task_id)
        result = cp.get_task_result(task_id) if task.status is TaskStatus.COMPLETED else None
        return TaskResultResponse(
            task_id=task_id, status=task.status, result=result, error=task.error
        )

    @router.get("/tasks/{task_id}/hops", summary="The task's hops: proposed and run")
    def get_hops(task_id: str) -> list[HopRecord]:
        cp.state.get_task(task_id)
        return cp.state.hops(task_id)

    @router.get("/tasks/{task_id}/orchestrator", summary="What the orchestrator keeps for the task")
    def get_orchestrator_state(task_id: str) -> dict[str, Any]:
        """The orchestrator's state: for `AgentOrchestrator`, the conversation its model saw."""
        cp.state.get_task(task_id)
        return cp.state.orchestrator_state(task_id)

    @router.get("/hops/pending", tags=["step mode"], summary="Hops waiting for a person")
    def pending_hops() -> list[HopRecord]:
        return cp.state.pending_hops()

    @router.post("/tasks/{task_id}/hops/{hop_id}/approve", tags=["step mode"])
    async def approve(task_id: str, hop_id: str) -> HopRecord:
        """Send the pending hop as the orchestrator proposed it."""
        return await _home(cp, cp.approve_hop(task_id, hop_id))

    @router.post("/tasks/{task_id}/hops/{hop_id}/edit", tags=["step mode"])
    async def edit(task_id: str, hop_id: str, body: EditHopBody) -> HopRecord:
        """Send the pending hop to another service and/or with another input."""
        change = cp.edit_hop(task_id, hop_id, service_name=body.service_name, input=body.input)
        return await _home(cp, change)

    @router.post("/tasks/{task_id}/hops/{hop_id}/reject", tags=["step mode"])
    async def reject(task_id: str, hop_id: str, body: RejectHopBody) -> HopRecord:
        """Refuse the pending hop: the task fails with the reason."""
        return await _home(cp, cp.reject_hop(task_id, hop_id, body.reason))

    return router


def _human_router(cp: ControlPlane) -> APIRouter:
    router = APIRouter(tags=["human inbox"])

    @router.get("/human/requests", summary="The human inbox, oldest first")
    def list_requests(status: HumanRequestStatus | None = None) -> list[HumanRequest]:
        return cp.state.human_requests(status)

    @router.get("/human/requests/{request_id}", summary="One human request")
    def get_request(request_id: str) -> HumanRequest:
        return cp.state.get_human_request(request_id)

    @router.post("/human/requests/{request_id}/answer", summary="Answer a human request")
    async def answer(request_id: str, body: AnswerBody) -> HumanRequest:
        return await _home(cp, cp.answer_human_request(request_id, body.answer))

    return router
