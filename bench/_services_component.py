"""One component of the services benchmark's system on Redis, in its own process.

    python -m bench._services_component control_plane REDIS_URL PREFIX PORT SERVICE[,SERVICE]
    python -m bench._services_component service REDIS_URL PREFIX PORT NAME DELAY_S

A service's agent is a scripted model answering `<input>><name>` in one step, after
sleeping DELAY_S (0 for the zero-latency pipeline, 0.2 for the scaling run).
"""

from __future__ import annotations

import asyncio
import sys
import time

from agent_core import AgentRunner
from agent_core.llms import ChatMessage, FunctionLLM, ToolSpec
from agent_core.store import InMemoryStore
from agent_core.workers import FunctionCallingAgentWorker
from stepwise.services import (
    AgentService,
    BaseMessageQueue,
    ControlPlaneServer,
    PipelineOrchestrator,
    RedisStreamsMessageQueue,
)
from stepwise.services.launchers import serve_control_plane, serve_service


def scripted_service(queue: BaseMessageQueue, name: str, delay: float = 0.0) -> AgentService:
    """An agent service whose model answers at once (or after `delay` seconds)."""

    def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        if delay:
            time.sleep(delay)  # The model's latency; a replica handles one hop at a time.
        return f"{messages[-1].content}>{name}"

    worker = FunctionCallingAgentWorker.from_tools([], llm=FunctionLLM(reply))
    agent = AgentRunner(worker, store=InMemoryStore(), conversation_id=None)
    return AgentService(agent, queue, service_name=name, description=f"service {name}")


def pipeline(queue: BaseMessageQueue, names: list[str], *, port: int = 8000) -> ControlPlaneServer:
    """A control plane running `names` as a pipeline."""
    return ControlPlaneServer(queue, PipelineOrchestrator(names), port=port)


async def main(role: str, url: str, prefix: str, port: int, *rest: str) -> None:
    """Run one component until the process is stopped."""
    queue = RedisStreamsMessageQueue(url, stream_prefix=prefix, block_ms=500)
    if role == "control_plane":
        await serve_control_plane(pipeline(queue, rest[0].split(","), port=port))
    else:  # A service needs only the control plane's address, not one of its own.
        service = scripted_service(queue, rest[0], float(rest[1]))
        await serve_service(service, f"http://127.0.0.1:{port}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), *sys.argv[5:]))
