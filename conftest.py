"""Root test configuration: no test may reach the network or a real model.

Any connection to a non-loopback address fails the test, and provider keys are removed from
the environment, so a real OpenAI or Anthropic call cannot happen by accident.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

# A real redis-server per session, shared by tests/services and tests/faults.
pytest_plugins = ["tests._redis_server", "tests._postgres_server"]

_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
_LOCAL_NAMES = {"localhost", "localhost.localdomain", ""}


TEST_GROUP_ENV = "STEPWISE_TEST_GROUP"
"""`make test` runs three groups of tests side by side: "browser", "processes" and "others"."""

TEST_GROUPS = ("browser", "processes", "others")

_PROCESS_TESTS = (
    "tests/stepwise/services/",
    "tests/faults/test_services_recovery.py",
    "tests/faults/test_two_control_planes.py",
    "tests/faults/test_two_servers.py",
    "tests/faults/test_sandbox_escape.py",
)
"""Tests that mostly wait on servers they start (Redis, PostgreSQL, control planes, `stepwise
serve`) or on processes they kill: a group of their own overlaps that waiting with the others'
CPU (the others took 948 s beside the browser tests' 776 s when they were one group)."""

_BESIDE_THE_OTHERS = ("tests/e2e/test_real_model_in_browser.py",)
"""Browser tests that run in the "others" group, so that both groups take about as long
(`make test` printed 508 s for the others and 716 s for the browser tests before)."""


def _group_of(nodeid: str) -> str:
    path = nodeid.partition("::")[0]
    if path.startswith("tests/e2e/") and path not in _BESIDE_THE_OTHERS:
        return "browser"
    return "processes" if path.startswith(_PROCESS_TESTS) else "others"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the tests of `$STEPWISE_TEST_GROUP`'s group, when it names one."""
    group = os.environ.get(TEST_GROUP_ENV)
    if not group:
        return
    if group not in TEST_GROUPS:
        raise pytest.UsageError(f"{TEST_GROUP_ENV} is one of {TEST_GROUPS}, not {group!r}")
    kept = [item for item in items if _group_of(item.nodeid) == group]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept


class NetworkCallError(AssertionError):
    """A test tried to reach a non-local address."""


def _is_local(address: Any) -> bool:
    if not isinstance(address, tuple):  # AF_UNIX paths and the like.
        return True
    host = str(address[0])
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def guard(address: Any) -> None:
        if not _is_local(address):
            raise NetworkCallError(f"test tried to reach {address!r}; tests never use the network")

    def connect(self: socket.socket, address: Any) -> None:
        guard(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        guard(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        guard((host if host is not None else "", 0))
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    for key in _KEYS:
        monkeypatch.delenv(key, raising=False)
    yield
