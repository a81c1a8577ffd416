"""Orchestrators: who takes a task's next hop (an LLM's tool call, or a fixed pipeline)."""

from stepwise.services.orchestrators.agent import AgentOrchestrator
from stepwise.services.orchestrators.base import BaseOrchestrator, Decision, FinalAnswer, NextHop
from stepwise.services.orchestrators.pipeline import PipelineOrchestrator

__all__ = [
    "AgentOrchestrator",
    "BaseOrchestrator",
    "Decision",
    "FinalAnswer",
    "NextHop",
    "PipelineOrchestrator",
]
