"""The local control plane: the quickstart's scripted demo services inside the app's process.

"Local" on the Services page means this: the quickstart's two agents
(`examples/services_quickstart.py`), played here by scripted models as the example plays them
offline (this module ships in the package; the example does not), a human service whose
requests wait in the page's inbox, and an `AgentOrchestrator` on the scripted demo router
(`stepwise.services.demo`), all on a `SimpleMessageQueue` in one background thread, with the
control plane's HTTP API on a free loopback port behind a random token. It starts once per
server process (`st.cache_resource`), needs no Redis and makes no model calls, so `make run`
shows a working Services page. The agents keep their Stepwise tasks in the app's own store,
so each hop's step DAG opens on the Stepper page.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from agent_core import AgentRunner
from agent_core.llms import ChatMessage, ChatResponse, FunctionLLM, ToolCall, ToolSpec
from agent_core.store import Store
from agent_core.tools import FunctionTool
from agent_core.workers import FunctionCallingAgentWorker
from stepwise.services import (
    AgentOrchestrator,
    AgentService,
    ControlPlaneServer,
    HumanService,
    ServerLauncher,
    SimpleMessageQueue,
)
from stepwise.services.demo import demo_router_llm
from stepwise.services.services.base import BaseService

__all__ = [
    "DEMO_NOTE",
    "LocalControlPlane",
    "start_local_control_plane",
    "stop_local_control_planes",
]

SECRET_FACT = "The secret fact is: A baby llama is called a 'Cria'."
DUMB_FACT = "Llamas hum to each other."
DEMO_NOTE = (
    "Scripted demo services, running inside this app: the quickstart's secret_fact_agent and "
    "dumb_fact_agent, and a human service that asks you in the inbox. The orchestrator is a "
    "scripted router, not a model: it sends a task to each service its text names, in that "
    'order (e.g. "the secret fact, then a dumb fact, then ask a human"), else to the first '
    "service."
)
_START_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class LocalControlPlane:
    """Where the local control plane answers, the token it wants, and what runs it."""

    url: str
    token: str
    thread: threading.Thread
    loop: asyncio.AbstractEventLoop
    job: asyncio.Task[None]

    @property
    def alive(self) -> bool:
        """Whether its thread still runs."""
        return self.thread.is_alive()

    def stop(self) -> None:
        """Stop the services and the control plane, and wait for the thread to end."""
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.job.cancel)
            self.thread.join(timeout=10)


_started: list[LocalControlPlane] = []


def get_the_secret_fact() -> str:
    """Returns the secret fact."""
    return SECRET_FACT


def _last_tool_answer(messages: Sequence[ChatMessage]) -> str | None:
    answers = [message.content for message in messages if message.role == "tool"]
    return answers[-1] if answers else None


def _secret_agent(messages: list[ChatMessage], tools: list[ToolSpec]) -> ChatResponse | str:
    """Call the secret-fact tool, then answer with what it said."""
    answer = _last_tool_answer(messages)
    if answer is not None:
        return answer
    call = ToolCall(id="call_get_the_secret_fact", name="get_the_secret_fact", args={})
    return ChatResponse(message=ChatMessage(role="assistant", tool_calls=(call,)))


def demo_services(queue: SimpleMessageQueue, store: Store) -> list[BaseService]:
    """The quickstart's two agents (their tasks in `store`) and a human service."""
    secret_llm = FunctionLLM(_secret_agent, model="scripted secret agent")
    dumb_llm = FunctionLLM(lambda messages, tools: DUMB_FACT, model="scripted dumb")
    tool = FunctionTool.from_defaults(fn=get_the_secret_fact)
    secret = FunctionCallingAgentWorker.from_tools([tool], llm=secret_llm)
    dumb = FunctionCallingAgentWorker.from_tools([], llm=dumb_llm)
    return [
        AgentService(
            AgentRunner(secret, store=store, conversation_id=None),
            queue,
            service_name="secret_fact_agent",
            description="Useful for getting the secret fact (scripted demo agent).",
        ),
        AgentService(
            AgentRunner(dumb, store=store, conversation_id=None),
            queue,
            service_name="dumb_fact_agent",
            description="Useful for getting random dumb facts (scripted demo agent).",
        ),
        HumanService(
            queue,
            service_name="human",
            description="Asks a person in the Services page's inbox.",
        ),
    ]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serve_in_thread(
    launcher: ServerLauncher,
) -> tuple[threading.Thread, asyncio.AbstractEventLoop, asyncio.Task[None]]:
    async def serve() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await launcher.launch_servers()

    loop = asyncio.new_event_loop()
    job = loop.create_task(serve())
    # A daemon thread: it ends with the server process, as the app's runtime loop does.
    thread = threading.Thread(
        target=loop.run_until_complete, args=(job,), name="stepwise local services", daemon=True
    )
    thread.start()
    return thread, loop, job


def _wait_until_up(port: int, thread: threading.Thread) -> None:
    # A bare connect, not an HTTP client: building one costs a TLS context each time.
    deadline = time.monotonic() + _START_TIMEOUT_S
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            pass
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the local control plane did not start on port {port}")
        time.sleep(0.02)


def start_local_control_plane(store: Store) -> LocalControlPlane:
    """Start the demo system in a background thread; where its API answers."""
    queue = SimpleMessageQueue()
    # A token even on loopback: other local users and processes cannot drive the demo.
    token = secrets.token_urlsafe(24)
    control_plane = ControlPlaneServer(
        message_queue=queue,
        orchestrator=AgentOrchestrator(llm=demo_router_llm()),
        port=_free_port(),
        token=token,
    )
    launcher = ServerLauncher(demo_services(queue, store), control_plane, queue)
    thread, loop, job = _serve_in_thread(launcher)
    local = LocalControlPlane(url=control_plane.url, token=token, thread=thread, loop=loop, job=job)
    _started.append(local)
    _wait_until_up(control_plane.port, thread)
    return local


def stop_local_control_planes() -> None:
    """Stop every local control plane this process started (tests; a clean shutdown)."""
    while _started:
        _started.pop().stop()
