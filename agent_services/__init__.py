"""Multi-agent services over a message queue, after llama-agents, steppable by a person.

Each agent is a service that takes tasks from a queue; a control plane tracks tasks and
services and asks an orchestrator which service takes a task's next hop. Never imports
streamlit.
"""

from agent_services.message_queues import (
    BaseMessageQueue,
    BaseMessageQueueConsumer,
    CallableMessageConsumer,
    DeadLetter,
    MessageQueueUnavailableError,
    RedisStreamsMessageQueue,
    SimpleMessageQueue,
)
from agent_services.messages import (
    ActionTypes,
    QueueMessage,
    ServiceDefinition,
    TaskDefinition,
    TaskResult,
)

__all__ = [
    "ActionTypes",
    "BaseMessageQueue",
    "BaseMessageQueueConsumer",
    "CallableMessageConsumer",
    "DeadLetter",
    "MessageQueueUnavailableError",
    "QueueMessage",
    "RedisStreamsMessageQueue",
    "ServiceDefinition",
    "SimpleMessageQueue",
    "TaskDefinition",
    "TaskResult",
]
