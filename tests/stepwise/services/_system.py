"""Helpers for the services' tests: scripted agents, a system running in the background."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

from agent_core import AgentRunner
from agent_core.llms import ChatMessage, ChatResponse, FunctionLLM, ToolCall, ToolSpec
from agent_core.store import InMemoryStore
from agent_core.tools.base import BaseTool
from agent_core.workers import FunctionCallingAgentWorker
from stepwise.services import ControlPlaneServer, ServerLauncher
from stepwise.services.message_queues.base import BaseMessageQueue
from stepwise.services.services.base import BaseService

ROOT = Path(__file__).resolve().parents[3]


def call(name: str, call_id: str = "", **args: Any) -> ChatResponse:
    """A model reply that calls one tool."""
    tool_call = ToolCall(id=call_id or f"call_{name}", name=name, args=args)
    return ChatResponse(message=ChatMessage(role="assistant", tool_calls=(tool_call,)))


def runner(llm: Any, tools: Sequence[BaseTool] = (), *, store: Any = None) -> AgentRunner:
    """A function-calling agent on `llm`, its hops independent of each other."""
    worker = FunctionCallingAgentWorker.from_tools(list(tools), llm=llm)
    return AgentRunner(worker, store=store or InMemoryStore(), conversation_id=None)


def echo_agent(transform: Callable[[str], str]) -> tuple[AgentRunner, list[str]]:
    """An agent answering `transform(its input)`; the list records each input it got."""
    seen: list[str] = []

    def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        text = next(m.content for m in reversed(messages) if m.role == "user")
        seen.append(text)
        return transform(text)

    return runner(FunctionLLM(reply)), seen


def load_example(name: str) -> ModuleType:
    """Import `examples/<name>.py` as a module."""
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@asynccontextmanager
async def running(
    services: Sequence[BaseService], control_plane: ControlPlaneServer
) -> AsyncIterator[ControlPlaneServer]:
    """The control plane and services consuming on this loop, services registered."""
    tasks = [await control_plane.launch_local()]
    for service in services:
        await control_plane.register_service(service.service_definition, kind=service.kind)
        tasks.append(await service.launch_local())
    try:
        yield control_plane
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def eventually(predicate: Callable[[], Any], *, within: float = 5.0) -> Any:
    """Poll `predicate` until it returns something truthy."""
    deadline = time.monotonic() + within
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {within} s")
        await asyncio.sleep(0.01)
    return value


def wait_for(fetch: Callable[[], Any], *, within: float = 10.0) -> Any:
    """Call `fetch` (sync) until it returns something truthy."""
    deadline = time.monotonic() + within
    while not (value := fetch()):
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing came within {within} s")
        time.sleep(0.02)
    return value


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def served(
    services: Sequence[BaseService],
    control_plane: ControlPlaneServer,
    message_queue: BaseMessageQueue,
) -> Iterator[str]:
    """`ServerLauncher.launch_servers()` on a loop in a thread; yields the control plane URL."""
    loop = asyncio.new_event_loop()
    launcher = ServerLauncher(services, control_plane, message_queue)

    async def serve() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await launcher.launch_servers()

    job = loop.create_task(serve())
    thread = threading.Thread(target=loop.run_until_complete, args=(job,), daemon=True)
    thread.start()
    url = control_plane.url
    deadline = time.monotonic() + 20
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the control plane did not start")
        time.sleep(0.02)
    try:
        yield url
    finally:
        loop.call_soon_threadsafe(job.cancel)
        thread.join(timeout=20)
        loop.close()
