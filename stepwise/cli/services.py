"""`stepwise services`: start multi-agent services from a TOML file, or print their state.

`stepwise services up CONFIG` starts the control plane and each service (times its
replicas) as its own process, on the Redis URL the file names, prints where each one is,
restarts one that dies (with backoff; `services_supervise`), and stops them all on Ctrl-C or
SIGTERM. With `queue = "simple"` every part runs in this one
process instead (an in-process queue cannot cross processes). Processes on other machines
join with their own file: the same Redis URL, `[control_plane] url = ...` pointing at the
running control plane (so none is started there), and their own `[[services]]`.

`stepwise services status [--url URL]` prints the Services page's summary in a terminal:
services, tasks with status, hops waiting for approval, and questions waiting for a person.

Each part's process runs `python -m stepwise.cli.services CONFIG PART`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import httpx

from agent_core.errors import AgentCoreError
from stepwise.cli.services_config import CONTROL_PLANE_PART, ServicesConfig, load_config
from stepwise.cli.services_supervise import REFUSED, Part, supervise
from stepwise.http.settings import api_token, check_exposure
from stepwise.services import ServicesClient, ServicesError
from stepwise.services.errors import QueueUnavailableError

_STOP_WITHIN_S = 10.0

__all__ = ["print_status", "run_part", "run_services"]


def run_services(args: argparse.Namespace) -> int:
    """Run `stepwise services ...` from parsed arguments; the exit status."""
    if args.services_command == "status":
        return print_status(args.url, token=api_token())
    return run_up(load_config(args.config))


# --------------------------------------------------------------------------- status


def _line(text: str, width: int = 70) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _status_lines(client: ServicesClient) -> list[str]:
    services, tasks = client.list_services(), client.list_tasks(limit=20)
    pending, inbox = client.pending_hops(), client.list_human_requests()
    lines = [f"Services ({len(services)}):"]
    lines += [
        f"  {s.service_name:<24} {s.kind.value:<6} {_line(s.description, 50)}" for s in services
    ]
    lines.append(f"Tasks ({len(tasks)}, newest first):")
    for task in tasks:
        outcome = task.result if task.result is not None else task.error or ""
        lines.append(
            f"  {task.task_id[:8]}  {task.status.value:<17} {task.hop_count} hops  "
            f"{_line(task.input, 40)}" + (f"  → {_line(outcome, 40)}" if outcome else "")
        )
    lines.append(f"Hops waiting for approval ({len(pending)}):")
    lines += [
        f"  task {h.task_id[:8]} hop {h.seq}: {h.proposed_service} ← {_line(h.proposed_input, 50)}"
        for h in pending
    ]
    lines.append(f"Human requests waiting ({len(inbox)}):")
    lines += [f"  {r.request_id[:8]} from {r.service_name}: {_line(r.prompt, 50)}" for r in inbox]
    return lines


def print_status(url: str, *, token: str | None = None) -> int:
    """Print the control plane's summary; 1 (with what to do) when it cannot be read."""
    try:
        with ServicesClient(url, token=token, timeout=10.0) as client:
            lines = _status_lines(client)
    except httpx.TransportError:
        print(
            f"stepwise services status: no control plane answers at {url}: start it with "
            "`stepwise services up CONFIG`, or give its address with --url",
            file=sys.stderr,
        )
        return 1
    except ServicesError as exc:
        print(f"stepwise services status: {exc}", file=sys.stderr)
        return 1
    print(f"Control plane {url}")
    print("\n".join(lines), flush=True)
    return 0


# --------------------------------------------------------------------------- up


def _parts(config: ServicesConfig) -> list[Part]:
    """Each process to start: the control plane (unless joining one), each replica."""
    names = [] if config.external_url else [(CONTROL_PLANE_PART, 1)]
    for entry in config.services:
        names += [(entry.name, replica) for replica in range(1, entry.replicas + 1)]
    command = [sys.executable, "-m", "stepwise.cli.services", str(config.path)]
    return [
        Part(
            label=_label(config, part, replica),
            start=lambda part=part: subprocess.Popen([*command, part], cwd=config.folder),
            announce=lambda pid, part=part, replica=replica: _announce(config, part, replica, pid),
        )
        for part, replica in names
    ]


def _label(config: ServicesConfig, part: str, replica: int) -> str:
    if part == CONTROL_PLANE_PART:
        return "the control plane"
    copies = config.service(part).replicas
    return f"service {part}" + (f" replica {replica}/{copies}" if copies > 1 else "")


def _announce(config: ServicesConfig, part: str, replica: int, pid: int) -> str:
    if part == CONTROL_PLANE_PART:
        return f"control plane       {config.control_plane_url}  (pid {pid})"
    entry = config.service(part)
    copies = f" replica {replica}/{entry.replicas}" if entry.replicas > 1 else ""
    return f"{entry.kind} service {part}{copies}: consumes {part} from the queue  (pid {pid})"


def _stop_all(children: Sequence[subprocess.Popen[bytes]]) -> None:
    # Stopping is bounded (SIGKILL after _STOP_WITHIN_S): a second Ctrl-C or SIGTERM while
    # it runs must not cut it short with a traceback and leave children behind.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + _STOP_WITHIN_S
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def run_up(config: ServicesConfig) -> int:
    """Start every part of `config`, print where each is, and stop them all on a signal."""
    if config.in_process:
        return _run_in_process(config)
    if not config.external_url:
        check_exposure(config.host, config.token)  # Refused here, before any part starts.
    print(f"Stepwise services from {config.path}, queue {config.queue}", flush=True)
    parts = _parts(config)
    # Ctrl-C and SIGTERM set a flag the watch loop reads, never raise: an exception thrown
    # into Popen.poll() can leave its wait lock held, and stopping then hung on that child.
    stopping = threading.Event()
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum in previous:
        signal.signal(signum, lambda signum, frame: stopping.set())
    try:
        for part in parts:
            if stopping.is_set():
                break
            part.launch()
            assert part.process is not None
            print(part.announce(part.process.pid), flush=True)
        else:
            print(f"Clients and the app's Services page: {config.control_plane_url}", flush=True)
            print("Ctrl-C stops them all; a part that dies is restarted.", flush=True)
            code = supervise(parts, stopping)
            if code:
                return code
        print("Stopping every service…", flush=True)
        return 0
    finally:
        _stop_all([part.process for part in parts if part.process is not None])
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _run_in_process(config: ServicesConfig) -> int:
    from stepwise.services import ServerLauncher

    queue = config.build_queue()
    services = [config.build_service(entry, queue) for entry in config.services]
    control_plane = config.build_control_plane(queue)
    print(f'Stepwise services from {config.path}, in this process (queue "simple")')
    print(f"control plane       {config.control_plane_url}")
    for service in services:
        print(f"{service.kind.value} service {service.service_name}")
    print("Ctrl-C stops them all.", flush=True)
    return _serve(ServerLauncher(services, control_plane, queue).launch_servers())


def _serve(main: Any) -> int:
    """Run `main` until it ends or SIGINT / SIGTERM cancels it."""

    async def run() -> None:
        task = asyncio.ensure_future(main)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(run())
    return 0


def run_part(config_path: str, part: str) -> int:
    """Run one part of the file in this process (the children `up` starts).

    A refusal (a `UserError` and the like: a bad setting, a token too short) is printed as
    its message and hint and exits with `REFUSED`, which `up` does not restart.
    """
    try:
        return _run_part(config_path, part)
    except QueueUnavailableError as exc:  # Passing: restarted, with backoff.
        print(f"stepwise services up: {part}: {exc}", file=sys.stderr, flush=True)
        return 1
    except AgentCoreError as exc:
        print(f"stepwise services up: {part}: {exc}", file=sys.stderr, flush=True)
        return REFUSED


def _run_part(config_path: str, part: str) -> int:
    from stepwise.services.launchers import serve_control_plane, serve_service

    config = load_config(config_path)
    queue = config.build_queue()
    if part == CONTROL_PLANE_PART:
        return _serve(serve_control_plane(config.build_control_plane(queue)))
    service = config.build_service(config.service(part), queue)
    return _serve(serve_service(service, config.control_plane_url, token=config.token))


if __name__ == "__main__":
    sys.exit(run_part(*sys.argv[1:3]))
