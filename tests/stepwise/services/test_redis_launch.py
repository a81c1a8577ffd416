"""The quickstart on Redis Streams: served by other processes, asked by a client here."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from stepwise.services import ServicesClient

from ._system import free_port, wait_for

SECRET = "The secret fact is: A baby llama is called a 'Cria'."
PART = Path(__file__).with_name("_quickstart_process.py")


@contextmanager
def processes(*roles: str, redis_url: str, prefix: str, port: int) -> Iterator[str]:
    """Start each role in its own process; yields the control plane's URL once all are up."""
    started = [
        subprocess.Popen([sys.executable, str(PART), role, redis_url, prefix, str(port)])
        for role in roles
    ]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for process in started:
            process.terminate()
        for process in started:
            process.wait(timeout=20)


def _up(url: str, services: int) -> bool:
    try:
        return len(httpx.get(f"{url}/services", timeout=1).json()) == services
    except (httpx.TransportError, ValueError):
        return False


def _ask(url: str) -> str:
    with ServicesClient(url) as client:
        task_id = client.create_task("What is the secret fact?")
        return client.wait_for_result(task_id, timeout=30).result


def test_server_launcher_on_redis_answers_a_client_in_another_process(redis_url, stream_prefix):
    port = free_port()
    with processes("all", redis_url=redis_url, prefix=stream_prefix, port=port) as url:
        wait_for(lambda: _up(url, 2), within=30)
        assert _ask(url) == SECRET


def test_each_component_in_its_own_process_on_redis(redis_url, stream_prefix):
    port = free_port()
    roles = ("control_plane", "secret_fact_agent", "dumb_fact_agent")
    with processes(*roles, redis_url=redis_url, prefix=stream_prefix, port=port) as url:
        wait_for(lambda: _up(url, 2), within=30)
        assert [_ask(url) for _ in range(2)] == [SECRET, SECRET]
