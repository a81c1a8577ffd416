"""llama-agents 0.0.14: two zero-latency scripted agents in a pipeline, one task at a time.

Run in bench/.venv-llama-agents (its llama-index-core < 0.11 cannot share any other env):

    bench/.venv-llama-agents/bin/python bench/anchors/llama_agents_pipeline.py --tasks 10

Its own `SimpleMessageQueue`, `PipelineOrchestrator` over a `QueryPipeline` of
`ServiceComponent`s, and `LocalLauncher.launch_single`, as its README builds them; each
agent is a `ReActAgent` on a scripted LLM that answers at once. Prints one JSON line with
each task's latency after one warm-up task.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from typing import Any

from llama_agents import (
    AgentService,
    ControlPlaneServer,
    LocalLauncher,
    PipelineOrchestrator,
    ServiceComponent,
    SimpleMessageQueue,
)
from llama_index.core.agent import ReActAgent
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.query_pipeline import QueryPipeline


class InstantLLM(CustomLLM):
    """A scripted model: every reply is a final ReAct answer, at once."""

    answer: str = "done"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="instant")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=f"Thought: I can answer.\nAnswer: {self.answer}")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        yield self.complete(prompt)


def build() -> LocalLauncher:
    """The two-service pipeline on llama-agents' in-process queue."""
    queue = SimpleMessageQueue()
    services = [
        AgentService(
            agent=ReActAgent.from_tools([], llm=InstantLLM(answer=f"hello>{name}")),
            message_queue=queue,
            description=f"service {name}",
            service_name=name,
        )
        for name in ("first", "second")
    ]
    chain = [ServiceComponent.from_service_definition(s) for s in services]
    orchestrator = PipelineOrchestrator(QueryPipeline(chain=chain))
    control_plane = ControlPlaneServer(message_queue=queue, orchestrator=orchestrator)
    return LocalLauncher(services, control_plane, queue)


def main() -> None:
    """Time `--tasks` launches after a warm-up; print them as JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10)
    args = parser.parse_args()
    logging.disable(logging.INFO)
    launcher = build()
    launcher.launch_single("hello")
    latencies = []
    for _ in range(args.tasks):
        started = time.perf_counter()
        launcher.launch_single("hello")
        latencies.append(time.perf_counter() - started)
    print(json.dumps({"framework": "llama-agents 0.0.14", "latencies_s": latencies}))


if __name__ == "__main__":
    main()
