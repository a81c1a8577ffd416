"""A control plane on PostgreSQL in its own process, for the two-control-planes test.

    python -m tests.faults._control_plane_process CONFIG_JSON

CONFIG_JSON keys: `redis_url`, `prefix`, `visibility` (the queue's visibility timeout), `port`,
`db` (the PostgreSQL URL both control planes share) and `services` (the pipeline, in order).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from stepwise.services import ControlPlaneServer, PipelineOrchestrator, RedisStreamsMessageQueue
from stepwise.services.launchers import serve_control_plane


async def main(config: dict[str, Any]) -> None:
    """Run the control plane until the process is killed."""
    queue = RedisStreamsMessageQueue(
        config["redis_url"],
        stream_prefix=config["prefix"],
        visibility_timeout=config["visibility"],
        block_ms=100,
        max_backoff=0.2,
    )
    orchestrator = PipelineOrchestrator(config["services"])
    server = ControlPlaneServer(queue, orchestrator, db=config["db"], port=config["port"])
    await serve_control_plane(server)


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
