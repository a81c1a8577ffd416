"""One component of a services system on Redis in its own process, for the fault tests.

    python -m tests.faults._services_process CONFIG_JSON

CONFIG_JSON keys: `role` ("control_plane" or "service"), `redis_url`, `prefix`, `port` (the
control plane's), `visibility` (the queue's visibility timeout), `max_deliveries`; a control
plane's `services` (its pipeline, in order); a service's `name`, `store` (a SQLite file its
replicas share, so the hop ledger is shared too), `effects` (a log file), and optionally
`gate` (a folder: the tool marks `started-<pid>` there and waits for a `go` file) or
`fail` (its model always raises).

Each hop's agent calls its one tool, `work`, once; the tool appends `begin` and `done` lines
(`<phase> <service> <input> <pid>`) to the effects log, so a test can count what every hop
did and which process did it. The tool's output, `<input>|<service>`, is the hop's answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from agent_core.llms import ChatMessage, FunctionLLM, ToolSpec
from agent_core.store import SQLiteStore
from agent_core.tools import FunctionTool
from stepwise.services import (
    AgentService,
    ControlPlaneServer,
    PipelineOrchestrator,
    RedisStreamsMessageQueue,
)
from stepwise.services.launchers import serve_control_plane, serve_service
from tests.stepwise.services._system import call, runner

WORK_SECONDS = 0.03  # Long enough that a random kill usually lands mid-hop.


def effect(path: str, phase: str, service: str, text: str) -> None:
    """Append one line; O_APPEND keeps lines whole across processes."""
    line = f"{phase} {service} {text} {os.getpid()}\n".encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _wait_at_gate(gate: Path) -> None:
    (gate / f"started-{os.getpid()}").touch()
    deadline = time.monotonic() + 60  # The test opens it within seconds, or has failed.
    while not (gate / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def service(config: dict[str, Any], queue: RedisStreamsMessageQueue) -> AgentService:
    """The agent service `config` describes: one `work` call per hop, then its output."""
    name, effects = config["name"], config["effects"]
    gate = Path(config["gate"]) if config.get("gate") else None

    def work(text: str) -> str:
        """Do this hop's work.

        Args:
            text: The hop's input.
        """
        effect(effects, "begin", name, text)
        if gate is not None:
            _wait_at_gate(gate)
        time.sleep(WORK_SECONDS)
        effect(effects, "done", name, text)
        return f"{text}|{name}"

    def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> Any:
        if config.get("fail"):
            effect(effects, "model", name, messages[-1].content)
            raise RuntimeError("the model is down")
        if messages[-1].role == "tool":  # The tool ran: its output is the answer.
            return messages[-1].content
        return call("work", text=messages[-1].content)

    tools = [FunctionTool.from_defaults(fn=work)]
    agent = runner(FunctionLLM(reply), tools, store=SQLiteStore(config["store"]))
    return AgentService(agent, queue, service_name=name, description=f"service {name}")


async def main(config: dict[str, Any]) -> None:
    """Run the component until the process is killed."""
    queue = RedisStreamsMessageQueue(
        config["redis_url"],
        stream_prefix=config["prefix"],
        visibility_timeout=config["visibility"],
        max_deliveries=config.get("max_deliveries", 5),
        block_ms=100,
        max_backoff=0.2,
    )
    if config["role"] == "control_plane":
        orchestrator = PipelineOrchestrator(config["services"])
        await serve_control_plane(ControlPlaneServer(queue, orchestrator, port=config["port"]))
    else:  # A service needs only the control plane's address, not one of its own.
        await serve_service(service(config, queue), f"http://127.0.0.1:{config['port']}")


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
