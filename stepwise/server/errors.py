"""Moved to `stepwise.http.errors`, which both HTTP APIs share; this name stays for a release."""

from stepwise.http.errors import (
    STATUS_BY_TYPE,
    ApiError,
    error_body,
    install_error_handlers,
    runtime_error,
)

__all__ = ["STATUS_BY_TYPE", "ApiError", "error_body", "install_error_handlers", "runtime_error"]
