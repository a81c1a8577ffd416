"""A consumer in its own process, for tests that kill it with SIGKILL mid-handling.

`python -m tests.stepwise.services._queue_worker URL PREFIX TYPE VISIBILITY_TIMEOUT` consumes
TYPE and, for each message, prints `started <id_> <delivery_count>` and then hangs (a long task), so
the test knows which message the process holds when it kills it.
"""

from __future__ import annotations

import asyncio
import sys

from stepwise.services import CallableMessageConsumer, QueueMessage, RedisStreamsMessageQueue


async def _hang(message: QueueMessage) -> None:
    print(f"started {message.id_} {message.delivery_count}", flush=True)
    await asyncio.sleep(3600)


async def main(url: str, prefix: str, message_type: str, visibility_timeout: float) -> None:
    queue = RedisStreamsMessageQueue(
        url, stream_prefix=prefix, visibility_timeout=visibility_timeout, block_ms=100
    )
    consumer = CallableMessageConsumer(message_type=message_type, handler=_hang)
    start = await queue.register_consumer(consumer)
    print("ready", flush=True)
    await start()


if __name__ == "__main__":
    url, prefix, message_type, timeout = sys.argv[1:5]
    asyncio.run(main(url, prefix, message_type, float(timeout)))
