"""Orchestrators: who takes a task's next hop (an LLM's tool call, or a fixed pipeline)."""

from agent_services.orchestrators.agent import AgentOrchestrator
from agent_services.orchestrators.base import BaseOrchestrator, Decision, FinalAnswer, NextHop
from agent_services.orchestrators.pipeline import PipelineOrchestrator

__all__ = [
    "AgentOrchestrator",
    "BaseOrchestrator",
    "Decision",
    "FinalAnswer",
    "NextHop",
    "PipelineOrchestrator",
]
