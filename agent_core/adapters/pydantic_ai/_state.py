"""The pydantic-ai adapter's task state: the run's message history and what waits in it.

Everything lives as JSON under `task.extra_state["pydantic_ai"]`, so the runner's snapshots
undo it exactly and a restarted process rebuilds the run from it:

- `messages`: the run's message history, as `ModelMessagesTypeAdapter` writes it. It ends in
  a `ModelRequest` not yet sent (the next model request's tool results), in a `ModelResponse`
  whose tool calls have not run, or in the final response.
- `usage`: the run's `RunUsage` so far, handed back to each step's run so that the agent's
  `UsageLimits` (50 requests by default) count the whole task, not one step.
- `batch`: the tool calls of the last response that have not run yet, each with its kind as
  pydantic-ai's tool manager told it (`function`, `unapproved`, `output`, `unknown`), and the
  decisions a person made on them (approved with these arguments, or denied with a reason).
- `output`: the run's output once it ended, as JSON.
- `seen`: how many messages of `task.memory` the adapter knows of; a user message past them
  is a person's feedback, handed to the next model request. `feedback` keeps what a tool step
  found of it until then.
- `from_thread`: the history began with the thread's earlier turns (a task that continues a
  conversation), as Stepwise's memory kept them: without the agent's system prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter
from pydantic_ai import DeferredToolResults, ModelMessagesTypeAdapter, ToolApproved, ToolDenied
from pydantic_ai.messages import ModelMessage, ModelRequest
from pydantic_ai.usage import RunUsage

from agent_core.types import Task

__all__ = ["STATE_KEY", "Batch", "Call", "Decision", "RunRecord"]

STATE_KEY = "pydantic_ai"
"""The key of the adapter's state in `task.extra_state`."""

_USAGE = TypeAdapter(RunUsage)


@dataclass(frozen=True)
class Call:
    """One tool call of the model's last response, as pydantic-ai classified it."""

    tool: str
    args: dict[str, Any]
    call_id: str
    kind: str
    """`function`, `unapproved` (the tool requires approval), `output`, `external` or `unknown`."""

    def as_json(self) -> dict[str, Any]:
        """The call as stored (and as a tool step's input, without `kind`)."""
        return {"tool": self.tool, "args": self.args, "call_id": self.call_id, "kind": self.kind}


@dataclass(frozen=True)
class Decision:
    """A person's word on one call: run it (with these arguments), or deny it with a reason."""

    args: dict[str, Any] | None = None
    """Arguments to run the call with instead of the model's; None keeps the model's."""
    denied: str | None = None
    """Why the person refused the call; the model reads it in place of a result."""

    def as_result(self) -> ToolApproved | ToolDenied:
        """The decision in pydantic-ai's words, for `DeferredToolResults.approvals`."""
        if self.denied is not None:
            return ToolDenied(self.denied)
        return ToolApproved(override_args=self.args)


@dataclass
class Batch:
    """The tool calls waiting to run (one `CallToolsNode`) and the decisions made on them."""

    calls: list[Call]
    decisions: dict[str, Decision] = field(default_factory=dict)

    @property
    def names(self) -> str:
        """The tools it calls, in the model's order, each once: "add, multiply"."""
        return ", ".join(dict.fromkeys(call.tool for call in self.calls))

    def results(self, answered: set[str]) -> DeferredToolResults | None:
        """The results to resume the run with, or None to run the calls as pydantic-ai would.

        Once a person decided on any call, every call not yet `answered` needs a result
        (pydantic-ai refuses a resume that leaves one out): the decision, or plain approval.
        """
        if not self.decisions:
            return None
        approvals: dict[str, ToolApproved | ToolDenied] = {}
        for call in self.calls:
            if call.call_id in answered:
                continue
            decision = self.decisions.get(call.call_id)
            approvals[call.call_id] = decision.as_result() if decision else ToolApproved()
        return DeferredToolResults(approvals=dict(approvals))

    def as_json(self) -> dict[str, Any]:
        """The batch as stored."""
        return {
            "calls": [call.as_json() for call in self.calls],
            "decisions": {
                call_id: {"args": d.args, "denied": d.denied}
                for call_id, d in self.decisions.items()
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Batch:
        """A batch as `as_json` stored it."""
        return cls(
            calls=[Call(**call) for call in data["calls"]],
            decisions={
                call_id: Decision(args=d.get("args"), denied=d.get("denied"))
                for call_id, d in data.get("decisions", {}).items()
            },
        )


@dataclass
class RunRecord:
    """The run as one step finds it in `task.extra_state` and leaves it there."""

    messages: list[ModelMessage] = field(default_factory=list)
    usage: RunUsage = field(default_factory=RunUsage)
    batch: Batch | None = None
    seen: int | None = None
    """Messages of `task.memory` the adapter knows of; None before the first step."""
    output: Any = None
    """The run's output once it ended (JSON), for `finalize_task`."""
    feedback: list[str] = field(default_factory=list)
    """Feedback a tool step found in memory, kept for the next model request."""
    from_thread: bool = False
    """The history began with a thread's earlier turns, which carry no system prompt."""
    request_limit: int | None = None
    """The task's bound on model requests (`Task.limits.max_iterations`; not stored here)."""

    @classmethod
    def load(cls, task: Task) -> RunRecord:
        """The record in `task.extra_state` (an empty one before the first step)."""
        data = task.extra_state.get(STATE_KEY)
        if not data:
            return cls(request_limit=task.limits.max_iterations)
        batch = data.get("batch")
        return cls(
            request_limit=task.limits.max_iterations,
            messages=ModelMessagesTypeAdapter.validate_python(data["messages"]),
            usage=_USAGE.validate_python(data["usage"]),
            batch=Batch.from_json(batch) if batch else None,
            seen=data.get("seen"),
            output=data.get("output"),
            feedback=list(data.get("feedback", [])),
            from_thread=bool(data.get("from_thread", False)),
        )

    def take_feedback(self, task: Task) -> list[str]:
        """What a person said since the adapter last looked (`add_feedback`), taken once."""
        start = self.seen if self.seen is not None else task.history_length
        said = [m.content for m in task.memory.get_all()[start:] if m.role == "user"]
        taken, self.feedback = [*self.feedback, *said], []
        self.seen = len(task.memory.get_all())
        return taken

    def save(self, task: Task) -> None:
        """Write the record into `task.extra_state`, noting every memory message as seen."""
        self.seen = len(task.memory.get_all())
        task.extra_state[STATE_KEY] = {
            "messages": ModelMessagesTypeAdapter.dump_python(self.messages, mode="json"),
            "usage": _USAGE.dump_python(self.usage, mode="json"),
            "batch": self.batch.as_json() if self.batch else None,
            "seen": self.seen,
            "output": self.output,
            "feedback": self.feedback,
            "from_thread": self.from_thread,
        }

    @property
    def pending_request(self) -> ModelRequest | None:
        """The request the next model request sends (tool results, a retry), if one waits."""
        last = self.messages[-1] if self.messages else None
        return last if isinstance(last, ModelRequest) else None

    def answered(self) -> set[str]:
        """Ids of the calls the waiting request already answers (they ran before a deferral)."""
        request = self.pending_request
        if request is None:
            return set()
        ids = (getattr(part, "tool_call_id", None) for part in request.parts)
        return {call_id for call_id in ids if isinstance(call_id, str)}
