"""Message queues: the embedded in-process queue and the Redis Streams broker."""

from stepwise.services.message_queues.base import (
    BaseMessageQueue,
    BaseMessageQueueConsumer,
    CallableMessageConsumer,
    DeadLetter,
    StartConsumingCallable,
)
from stepwise.services.message_queues.redis_streams import (
    MessageQueueUnavailableError,
    RedisStreamsMessageQueue,
)
from stepwise.services.message_queues.simple import SimpleMessageQueue

__all__ = [
    "BaseMessageQueue",
    "BaseMessageQueueConsumer",
    "CallableMessageConsumer",
    "DeadLetter",
    "MessageQueueUnavailableError",
    "RedisStreamsMessageQueue",
    "SimpleMessageQueue",
    "StartConsumingCallable",
]
