"""Errors of the services layer: each says what happened and what to do about it.

They sit under `agent_core.errors.AgentCoreError`, so one `except AgentCoreError` catches
everything Stepwise raises; the control plane's HTTP API answers each with its `code`.
"""

from __future__ import annotations

from agent_core.errors import AgentCoreError

__all__ = [
    "ControlPlaneError",
    "HopNotPendingError",
    "HumanRequestNotWaitingError",
    "InvalidServiceNameError",
    "QueueUnavailableError",
    "ServicesError",
    "TaskFailedError",
    "UnknownHopError",
    "UnknownHumanRequestError",
    "UnknownServiceError",
    "UnknownTaskError",
]


class ServicesError(AgentCoreError):
    """Base of the errors `stepwise.services` raises."""

    default_code = "bad_request"


class UnknownTaskError(ServicesError, KeyError):
    """The control plane tracks no task with this id."""

    default_code = "task_not_found"


class UnknownServiceError(ServicesError, KeyError):
    """No service with this name is registered (or it takes no tasks)."""

    default_code = "service_not_found"


class UnknownHopError(ServicesError, KeyError):
    """The task has no hop with this id."""

    default_code = "hop_not_found"


class UnknownHumanRequestError(ServicesError, KeyError):
    """The human inbox has no request with this id."""

    default_code = "human_request_not_found"


class HopNotPendingError(ServicesError):
    """The hop is not waiting for a person: it was already approved, edited or rejected."""

    default_code = "hop_not_pending"


class HumanRequestNotWaitingError(ServicesError):
    """The human request was already answered."""

    default_code = "human_request_answered"


class TaskFailedError(ServicesError):
    """A task ended without a result: a service failed for good, or a person rejected a hop."""

    default_code = "task_failed"


class InvalidServiceNameError(ServicesError, ValueError):
    """A service name is empty, too long, reserved, or not in the safe set (see `names`)."""

    default_code = "invalid_service_name"


class QueueUnavailableError(ServicesError, ConnectionError):
    """The message queue could not be reached, so nothing was sent (try again later)."""

    default_code = "queue_unavailable"


class ControlPlaneError(ServicesError):
    """The control plane's HTTP API refused a request (the client raises it).

    Attributes:
        status: The HTTP status.
        code: The API's stable error code (`task_not_found`, `hop_not_pending`, ...).
    """

    def __init__(self, message: str, *, status: int, code: str, hint: str = "") -> None:
        super().__init__(message, hint=hint, code=code)
        self.status = status
