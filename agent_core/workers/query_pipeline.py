"""`QueryPipelineAgentWorker`: every step runs your `Pipeline` of components once.

The pipeline reads what the worker hands it, by name, among `PIPELINE_ARGS`: `input` (the
step's input when a person gave one, else the task's question),
`state` (a dict that carries over between steps), `task_input` (the task's question),
`history` (the conversation so far, as `ChatMessage`s) and `step` (1 on the first step).
Its output component, the last to run unless you name one, returns the reply: a
`PipelineReply(response, done)`, a `(response, done)` pair, or a bare response, which ends
the task.

`state` lives in the task's `extra_state`, so it is stored with the task and undo returns it to
what it was before the step; it must stay JSON. Each component's inputs, output and latency
are recorded on the step's output (`TaskStepOutput.components`), which the step card draws.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from agent_core.errors import StepError, UserError
from agent_core.llms.base import ChatMessage
from agent_core.types import StepKind, Task, TaskStep, TaskStepOutput
from agent_core.workers.base import BaseAgentWorker
from agent_core.workers.pipeline import Pipeline, PipelineBuildError

__all__ = ["PIPELINE_ARGS", "PipelineReply", "QueryPipelineAgentWorker"]

PIPELINE_ARGS = ("input", "state", "task_input", "history", "step")
"""The values a step hands its pipeline, by name; a pipeline's `args` are some of these."""

_STATE_KEY = "pipeline_state"
_STEPS_KEY = "pipeline_steps"
_LAST_REPLY_KEY = "last_reply"


class PipelineReply(NamedTuple):
    """What a pipeline's output component returns: the step's reply, and whether it is final."""

    response: Any
    done: bool = True


def _reply_of(value: Any, component: str) -> PipelineReply:
    if isinstance(value, PipelineReply):
        return value
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], bool):
        return PipelineReply(*value)
    if isinstance(value, tuple):
        raise StepError(
            f"the output component {component!r} returned a tuple of {len(value)}; return "
            "(response, done) with done a bool, a PipelineReply, or the response alone"
        )
    return PipelineReply(value, True)


class QueryPipelineAgentWorker(BaseAgentWorker):
    """An agent whose every step runs a `Pipeline`; see the module docstring.

    Args:
        pipeline: The components; its `args` must be among `PIPELINE_ARGS`.
        output: The component whose output is the step's reply (default: the last to run).
        max_steps: Steps allowed before the task fails with a clear error.
        initial_state: The `state` a task starts with (JSON; copied per task).

    Raises:
        PipelineBuildError: The pipeline's wiring is wrong, it takes an arg no step provides,
            or `output` names no component.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        output: str | None = None,
        max_steps: int = 10,
        initial_state: dict[str, Any] | None = None,
    ) -> None:
        self.pipeline = pipeline.build()
        unknown = [arg for arg in pipeline.args if arg not in PIPELINE_ARGS]
        if unknown:
            raise PipelineBuildError(
                f"the pipeline takes {unknown[0]!r}, which no step provides; a step provides "
                f"{', '.join(PIPELINE_ARGS)}"
            )
        if output is not None and output not in pipeline.names:
            raise PipelineBuildError(
                f"output={output!r} names no component (components: {pipeline.names})"
            )
        if max_steps < 1:
            raise UserError(f"max_steps must be at least 1, got {max_steps}")
        self.output = output
        self.max_steps = max_steps
        self.initial_state = dict(initial_state or {})

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        """Give the task its starting state; the first step's input is the task's question."""
        task.extra_state[_STATE_KEY] = self.initial_state.copy()
        return TaskStep(task_id=task.task_id, input=task.input, kind=StepKind.CUSTOM)

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Run the pipeline once; queue another step unless its reply says it is done."""
        done_steps = int(task.extra_state.get(_STEPS_KEY, 0))
        if done_steps >= self.max_steps:
            raise StepError(
                f"the pipeline ran max_steps={self.max_steps} steps without finishing; undo "
                "and steer it with a new input, or build the worker with a higher max_steps"
            )
        if step.input is not None and not isinstance(step.input, str):
            raise UserError("a pipeline step's input must be text (or empty)")
        state = task.extra_state.setdefault(_STATE_KEY, {})
        offered = {
            # Later steps have no input of their own unless a person steers one.
            "input": step.input if step.input is not None else task.input,
            "state": state,
            "task_input": task.input,
            "history": task.memory.get(),
            "step": done_steps + 1,
        }
        result = await self.pipeline.arun(**{arg: offered[arg] for arg in self.pipeline.args})
        output_name = self.output or result.last
        reply = _reply_of(result.outputs[output_name], output_name)
        response = "" if reply.response is None else str(reply.response)
        if step.input:
            task.memory.put(ChatMessage(role="user", content=step.input))
        task.memory.put(ChatMessage(role="assistant", content=response))
        task.extra_state[_STEPS_KEY] = done_steps + 1
        task.extra_state[_LAST_REPLY_KEY] = response
        return TaskStepOutput(
            output=response,
            task_step=step,
            is_last=reply.done,
            next_steps=[] if reply.done else [step.get_next_step(kind=StepKind.CUSTOM)],
            components=result.runs,
        )

    def finalize_task(self, task: Task, **kwargs: Any) -> list[ChatMessage]:
        """The question and the last reply join the conversation."""
        return [
            ChatMessage(role="user", content=task.input),
            ChatMessage(role="assistant", content=task.extra_state.get(_LAST_REPLY_KEY, "")),
        ]
