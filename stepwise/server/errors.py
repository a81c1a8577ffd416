"""Moved to `stepwise.http.errors`, which both HTTP APIs share; this path works until 0.3."""

import warnings

from stepwise.http.errors import (
    STATUS_BY_TYPE,
    ApiError,
    error_body,
    install_error_handlers,
    runtime_error,
)

warnings.warn(
    "stepwise.server.errors moved to stepwise.http.errors; the old path works until Stepwise 0.3",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["STATUS_BY_TYPE", "ApiError", "error_body", "install_error_handlers", "runtime_error"]
