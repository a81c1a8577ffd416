"""Runs one part of the quickstart on Redis in its own process (for the end-to-end tests).

python _quickstart_process.py all REDIS_URL PREFIX PORT            # ServerLauncher
python _quickstart_process.py control_plane REDIS_URL PREFIX PORT
python _quickstart_process.py SERVICE_NAME REDIS_URL PREFIX PORT   # one agent service
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _system import load_example  # After the path is set.

from stepwise.services import RedisStreamsMessageQueue, ServerLauncher
from stepwise.services.launchers import serve_control_plane, serve_service


async def main(role: str, redis_url: str, prefix: str, port: int) -> None:
    quickstart = load_example("services_quickstart")
    queue = RedisStreamsMessageQueue(
        redis_url, stream_prefix=prefix, visibility_timeout=5, block_ms=200
    )
    services, control_plane, _ = quickstart.build(message_queue=queue, port=port)
    if role == "all":
        await ServerLauncher(services, control_plane, queue).launch_servers()
    elif role == "control_plane":
        await serve_control_plane(control_plane)
    else:
        (service,) = [s for s in services if s.service_name == role]
        await serve_service(service, control_plane.url)


if __name__ == "__main__":
    role, url, prefix, port = sys.argv[1:5]
    asyncio.run(main(role, url, prefix, int(port)))
