"""Multi-agent services over a message queue, after llama-agents, steppable by a person.

Each agent is a service that takes tasks from a queue; a control plane tracks tasks and
services and asks an orchestrator which service takes a task's next hop. Never imports
streamlit.
"""

from stepwise.services.client import AsyncServicesClient, ServicesClient
from stepwise.services.control_plane import ControlPlaneServer
from stepwise.services.errors import ControlPlaneError, ServicesError, TaskFailedError
from stepwise.services.launchers import LocalLauncher, ServerLauncher
from stepwise.services.message_queues import (
    BaseMessageQueue,
    BaseMessageQueueConsumer,
    CallableMessageConsumer,
    DeadLetter,
    MessageQueueUnavailableError,
    RedisStreamsMessageQueue,
    SimpleMessageQueue,
)
from stepwise.services.messages import (
    ActionTypes,
    QueueMessage,
    ServiceDefinition,
    TaskDefinition,
    TaskResult,
    ToolCall,
    ToolCallResult,
)
from stepwise.services.orchestrators import AgentOrchestrator, PipelineOrchestrator
from stepwise.services.services import (
    AgentService,
    HumanService,
    MetaServiceTool,
    ServiceAsTool,
    ToolService,
)

__all__ = [
    "ActionTypes",
    "AgentOrchestrator",
    "AgentService",
    "AsyncServicesClient",
    "BaseMessageQueue",
    "BaseMessageQueueConsumer",
    "CallableMessageConsumer",
    "ControlPlaneError",
    "ControlPlaneServer",
    "DeadLetter",
    "HumanService",
    "LocalLauncher",
    "MessageQueueUnavailableError",
    "MetaServiceTool",
    "PipelineOrchestrator",
    "QueueMessage",
    "RedisStreamsMessageQueue",
    "ServerLauncher",
    "ServiceAsTool",
    "ServiceDefinition",
    "ServicesClient",
    "ServicesError",
    "SimpleMessageQueue",
    "TaskDefinition",
    "TaskFailedError",
    "TaskResult",
    "ToolCall",
    "ToolCallResult",
    "ToolService",
]
