"""An event loop that runs forever on a daemon thread of its own, started on demand.

The runtime's loop (`agent_core.runtime.loop`) and the MCP sessions' loop
(`agent_core.tools._mcp_loop`) are each one of these: what lives on them (SDK clients, anyio
streams) must not be bound to a loop that a Streamlit rerun or a request lets die.
"""

from __future__ import annotations

import asyncio
import threading

__all__ = ["start_loop_thread"]


def start_loop_thread(name: str) -> asyncio.AbstractEventLoop:
    """A new event loop running on a new daemon thread called `name`, once it runs."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        loop.run_forever()

    threading.Thread(target=serve, name=name, daemon=True).start()
    ready.wait()
    return loop
