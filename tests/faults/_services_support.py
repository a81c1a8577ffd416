"""A services system on Redis with each component in its own process, for the fault tests.

`ServicesSystem` starts the control plane and agent service replicas as processes
(`_services_process.py`), kills and restarts replicas, and reads the effects log the
services' tools write.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from stepwise.services import ServicesClient
from tests.stepwise.services._system import free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Effect:
    """One line of the effects log: a hop's tool began or finished, in process `pid`."""

    phase: str
    service: str
    text: str
    pid: int


@dataclass
class ServicesSystem:
    """Processes of one system: a control plane with a pipeline, and service replicas."""

    redis_url: str
    prefix: str
    folder: Path
    visibility: float
    max_deliveries: int = 5
    port: int = field(default_factory=free_port)
    replicas: dict[int, tuple[str, subprocess.Popen[bytes]]] = field(default_factory=dict)
    killed: set[int] = field(default_factory=set)
    _control_plane: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The control plane's URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def effects_path(self) -> Path:
        """The log every service's tool appends to."""
        return self.folder / "effects.log"

    def _start(self, **config: Any) -> subprocess.Popen[bytes]:
        config = {
            "redis_url": self.redis_url,
            "prefix": self.prefix,
            "port": self.port,
            "visibility": self.visibility,
            "max_deliveries": self.max_deliveries,
            **config,
        }
        command = [sys.executable, "-m", "tests.faults._services_process", json.dumps(config)]
        return subprocess.Popen(command, cwd=ROOT)

    def start_control_plane(self, services: list[str]) -> None:
        """The control plane, running `services` as a pipeline."""
        self._control_plane = self._start(role="control_plane", services=services)

    def start_replica(self, name: str, **options: Any) -> int:
        """One more replica of service `name` (its replicas share one store); its pid."""
        process = self._start(
            role="service",
            name=name,
            store=str(self.folder / f"{name}.db"),
            effects=str(self.effects_path),
            **options,
        )
        self.replicas[process.pid] = (name, process)
        return process.pid

    def kill(self, pid: int) -> str:
        """SIGKILL a replica and reap it (a zombie would still look alive to its claims)."""
        name, process = self.replicas.pop(pid)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        self.killed.add(pid)
        return name

    def stop(self) -> None:
        """Stop every process this system started."""
        processes = [p for _, p in self.replicas.values()]
        if self._control_plane is not None:
            processes.append(self._control_plane)
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def wait_registered(self, count: int, *, within: float = 60.0) -> None:
        """Wait until `count` services are registered with the control plane."""
        until(lambda: self._registered() >= count, within=within, what="services registering")

    def _registered(self) -> int:
        try:
            return len(httpx.get(f"{self.url}/services", timeout=2).json())
        except (httpx.TransportError, ValueError):
            return 0

    def client(self) -> ServicesClient:
        """A client of the control plane."""
        return ServicesClient(self.url)

    def effects(self) -> list[Effect]:
        """Every line of the effects log so far."""
        if not self.effects_path.exists():
            return []
        lines = self.effects_path.read_text().splitlines()
        return [Effect(p, s, t, int(pid)) for p, s, t, pid in (line.split() for line in lines)]

    def done_counts(self) -> Counter[tuple[str, str]]:
        """How many times each (input, service) hop's work finished."""
        return Counter((e.text, e.service) for e in self.effects() if e.phase == "done")


def until(condition: Any, *, within: float, what: str) -> Any:
    """Poll `condition` until it returns something truthy; fail after `within` seconds."""
    deadline = time.monotonic() + within
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not done within {within:g} s")
        time.sleep(0.05)
    return value
