"""The services' tests use the session's `redis-server` from the `tests._redis_server` plugin.

Its fixtures (`redis_server`, `redis_url`, `stream_prefix`) are loaded by the root conftest so
that tests/faults shares the same server; `RedisServer` stays importable from here.
"""

from tests._redis_server import RedisServer

__all__ = ["RedisServer"]
