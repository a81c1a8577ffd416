"""`ServicesClient` / `AsyncServicesClient`: a control plane's HTTP API from Python (httpx).

Create tasks and read their results, list tasks and services, step a step-mode task's hops
(approve, edit, reject) and answer the human inbox. API errors raise `ControlPlaneError`
with the API's stable `code`; a failed task's result raises `TaskFailedError`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Self

import httpx

from stepwise.services.errors import ControlPlaneError, TaskFailedError
from stepwise.services.messages import ServiceDefinition, TaskResult
from stepwise.services.records import (
    HopRecord,
    HumanRequest,
    HumanRequestStatus,
    ServiceKind,
    ServiceRecord,
    TaskRecord,
    TaskStatus,
)

__all__ = ["AsyncServicesClient", "ServicesClient"]

_POLL_S = 0.05


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _checked(response: httpx.Response) -> Any:
    if response.is_success:
        return response.json()
    try:
        error = response.json()["error"]
        message, code, hint = error["message"], error["code"], error.get("hint", "")
    except (ValueError, KeyError, TypeError):
        message, code, hint = response.text[:500], "http_error", ""
    raise ControlPlaneError(
        f"{response.request.method} {response.request.url.path} failed "
        f"({response.status_code}): {message}",
        status=response.status_code,
        code=code,
        hint=hint,
    )


def _result_of(body: dict[str, Any]) -> TaskResult | None:
    status = TaskStatus(body["status"])
    if status is TaskStatus.FAILED:
        raise TaskFailedError(
            f"task {body['task_id']} failed: {body.get('error')}", task_id=body["task_id"]
        )
    result = body.get("result")
    return TaskResult.model_validate(result) if result is not None else None


def _registration(definition: ServiceDefinition, kind: ServiceKind) -> dict[str, Any]:
    return {**definition.model_dump(mode="json"), "kind": kind.value}


class ServicesClient:
    """A control plane's API, sync.

    Args:
        control_plane_url: Its base URL (`http://127.0.0.1:8000`).
        token: Its bearer token, when it requires one.
        timeout: Seconds per request.
        transport: An httpx transport (tests), else a real connection.
    """

    def __init__(
        self,
        control_plane_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=control_plane_url, headers=_headers(token), timeout=timeout,
            transport=transport,
        )  # fmt: skip

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def _get(self, path: str, **params: Any) -> Any:
        return _checked(self._http.get(path, params=params or None))

    def _post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return _checked(self._http.post(path, json=body or {}))

    def create_task(self, text: str, *, step_mode: bool = False) -> str:
        """Create a task; its id."""
        return self._post("/tasks", {"input": text, "step_mode": step_mode})["task_id"]

    def get_task(self, task_id: str) -> TaskRecord:
        """The task's record (status, result or error, hop count)."""
        return TaskRecord.model_validate(self._get(f"/tasks/{task_id}"))

    def get_task_result(self, task_id: str) -> TaskResult | None:
        """The task's result; None while it runs.

        Raises:
            TaskFailedError: The task failed (the message says why).
        """
        return _result_of(self._get(f"/tasks/{task_id}/result"))

    def wait_for_result(self, task_id: str, *, timeout: float = 60.0) -> TaskResult:
        """Poll until the task has a result.

        Raises:
            TaskFailedError: The task failed.
            TimeoutError: No result within `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        while (result := self.get_task_result(task_id)) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"task {task_id} had no result within {timeout:g} s")
            time.sleep(_POLL_S)
        return result

    def list_tasks(self, *, limit: int = 100, offset: int = 0) -> list[TaskRecord]:
        """Tasks, newest first."""
        rows = self._get("/tasks", limit=limit, offset=offset)
        return [TaskRecord.model_validate(row) for row in rows]

    def list_services(self) -> list[ServiceRecord]:
        """The registered services."""
        return [ServiceRecord.model_validate(row) for row in self._get("/services")]

    def register_service(
        self, definition: ServiceDefinition, *, kind: ServiceKind = ServiceKind.AGENT
    ) -> ServiceRecord:
        """Register (or update) a service."""
        body = _registration(definition, kind)
        return ServiceRecord.model_validate(self._post("/services/register", body))

    def deregister_service(self, service_name: str) -> None:
        """Remove a service."""
        self._post("/services/deregister", {"service_name": service_name})

    def get_hops(self, task_id: str) -> list[HopRecord]:
        """The task's hops, proposed and run."""
        return [HopRecord.model_validate(row) for row in self._get(f"/tasks/{task_id}/hops")]

    def get_orchestrator_state(self, task_id: str) -> dict[str, Any]:
        """What the orchestrator keeps for the task (`AgentOrchestrator`: its conversation)."""
        return self._get(f"/tasks/{task_id}/orchestrator")

    def pending_hops(self) -> list[HopRecord]:
        """Hops waiting for a person (step mode), oldest first."""
        return [HopRecord.model_validate(row) for row in self._get("/hops/pending")]

    def approve_hop(self, task_id: str, hop_id: str) -> HopRecord:
        """Send a pending hop as proposed."""
        return HopRecord.model_validate(self._post(f"/tasks/{task_id}/hops/{hop_id}/approve"))

    def edit_hop(
        self,
        task_id: str,
        hop_id: str,
        *,
        service_name: str | None = None,
        input: str | None = None,
    ) -> HopRecord:
        """Send a pending hop to another service and/or with another input."""
        body = {"service_name": service_name, "input": input}
        return HopRecord.model_validate(self._post(f"/tasks/{task_id}/hops/{hop_id}/edit", body))

    def reject_hop(self, task_id: str, hop_id: str, reason: str) -> HopRecord:
        """Refuse a pending hop; the task fails with `reason`."""
        body = {"reason": reason}
        return HopRecord.model_validate(self._post(f"/tasks/{task_id}/hops/{hop_id}/reject", body))

    def list_human_requests(
        self, status: HumanRequestStatus | None = HumanRequestStatus.WAITING
    ) -> list[HumanRequest]:
        """The human inbox (waiting requests by default; None for all)."""
        params = {"status": status.value} if status else {}
        rows = self._get("/human/requests", **params)
        return [HumanRequest.model_validate(row) for row in rows]

    def answer_human_request(self, request_id: str, answer: str) -> HumanRequest:
        """Answer a human request."""
        body = {"answer": answer}
        return HumanRequest.model_validate(self._post(f"/human/requests/{request_id}/answer", body))


class AsyncServicesClient:
    """A control plane's API, async (same methods as `ServicesClient`, awaited)."""

    def __init__(
        self,
        control_plane_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=control_plane_url, headers=_headers(token), timeout=timeout,
            transport=transport,
        )  # fmt: skip

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def _get(self, path: str, **params: Any) -> Any:
        return _checked(await self._http.get(path, params=params or None))

    async def _post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return _checked(await self._http.post(path, json=body or {}))

    async def create_task(self, text: str, *, step_mode: bool = False) -> str:
        """Create a task; its id."""
        body = await self._post("/tasks", {"input": text, "step_mode": step_mode})
        return body["task_id"]

    async def get_task(self, task_id: str) -> TaskRecord:
        """The task's record."""
        return TaskRecord.model_validate(await self._get(f"/tasks/{task_id}"))

    async def get_task_result(self, task_id: str) -> TaskResult | None:
        """The task's result; None while it runs (raises `TaskFailedError` if it failed)."""
        return _result_of(await self._get(f"/tasks/{task_id}/result"))

    async def wait_for_result(self, task_id: str, *, timeout: float = 60.0) -> TaskResult:  # noqa: ASYNC109
        """Poll until the task has a result (raises `TaskFailedError`, `TimeoutError`)."""
        async with asyncio.timeout(timeout):
            while (result := await self.get_task_result(task_id)) is None:  # noqa: ASYNC110
                await asyncio.sleep(_POLL_S)
        return result

    async def list_tasks(self, *, limit: int = 100, offset: int = 0) -> list[TaskRecord]:
        """Tasks, newest first."""
        rows = await self._get("/tasks", limit=limit, offset=offset)
        return [TaskRecord.model_validate(row) for row in rows]

    async def list_services(self) -> list[ServiceRecord]:
        """The registered services."""
        return [ServiceRecord.model_validate(row) for row in await self._get("/services")]

    async def register_service(
        self, definition: ServiceDefinition, *, kind: ServiceKind = ServiceKind.AGENT
    ) -> ServiceRecord:
        """Register (or update) a service."""
        body = _registration(definition, kind)
        return ServiceRecord.model_validate(await self._post("/services/register", body))

    async def deregister_service(self, service_name: str) -> None:
        """Remove a service."""
        await self._post("/services/deregister", {"service_name": service_name})

    async def get_hops(self, task_id: str) -> list[HopRecord]:
        """The task's hops, proposed and run."""
        rows = await self._get(f"/tasks/{task_id}/hops")
        return [HopRecord.model_validate(row) for row in rows]

    async def get_orchestrator_state(self, task_id: str) -> dict[str, Any]:
        """What the orchestrator keeps for the task (`AgentOrchestrator`: its conversation)."""
        return await self._get(f"/tasks/{task_id}/orchestrator")

    async def pending_hops(self) -> list[HopRecord]:
        """Hops waiting for a person."""
        return [HopRecord.model_validate(row) for row in await self._get("/hops/pending")]

    async def approve_hop(self, task_id: str, hop_id: str) -> HopRecord:
        """Send a pending hop as proposed."""
        body = await self._post(f"/tasks/{task_id}/hops/{hop_id}/approve")
        return HopRecord.model_validate(body)

    async def edit_hop(
        self,
        task_id: str,
        hop_id: str,
        *,
        service_name: str | None = None,
        input: str | None = None,
    ) -> HopRecord:
        """Send a pending hop to another service and/or with another input."""
        change = {"service_name": service_name, "input": input}
        body = await self._post(f"/tasks/{task_id}/hops/{hop_id}/edit", change)
        return HopRecord.model_validate(body)

    async def reject_hop(self, task_id: str, hop_id: str, reason: str) -> HopRecord:
        """Refuse a pending hop; the task fails with `reason`."""
        body = await self._post(f"/tasks/{task_id}/hops/{hop_id}/reject", {"reason": reason})
        return HopRecord.model_validate(body)

    async def list_human_requests(
        self, status: HumanRequestStatus | None = HumanRequestStatus.WAITING
    ) -> list[HumanRequest]:
        """The human inbox (waiting requests by default; None for all)."""
        params = {"status": status.value} if status else {}
        rows = await self._get("/human/requests", **params)
        return [HumanRequest.model_validate(row) for row in rows]

    async def answer_human_request(self, request_id: str, answer: str) -> HumanRequest:
        """Answer a human request."""
        body = await self._post(f"/human/requests/{request_id}/answer", {"answer": answer})
        return HumanRequest.model_validate(body)
