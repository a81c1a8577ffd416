"""The debugger's tools: what a coding agent can do to tasks, each a method answering text.

Every tool works on the host's store, the same database the app and `stepwise serve` open, so
a task a coding agent steers shows in the app and the other way round. A task id may be given
whole or as its last digits (as the app shows them); a step as its id, its number among the
completed steps (`3` or `#3`), or `next` for the first upcoming one. Paths (cases, traces) are
relative to the project folder and must stay inside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from agent_core import ParallelAgentRunner, user_code
from agent_core.errors import AgentCoreError, StepNotFoundError, UserError
from agent_core.host import Host
from agent_core.recordings import DEFAULT_CASES_DIR, case_from_task, load_case, replay_case
from agent_core.recordings import save_case as write_case
from agent_core.recordings.cases import CASE_SUFFIX
from agent_core.recordings.importers import import_file
from agent_core.runtime.breakpoints import Breakpoint, OnTool
from agent_core.types import StepKind, StepStatus, TaskState, TaskStatus
from stepwise.mcp.compare import compare_runs, previous_run, run_of
from stepwise.mcp.views import (
    clip,
    run_until_text,
    step_line,
    step_text,
    task_list_text,
    task_text,
)

__all__ = ["TOOL_DESCRIPTIONS", "DebuggerTools"]


TaskId = Annotated[str, Field(description="The task's id, whole or its last digits.")]
StepRef = Annotated[
    str,
    Field(description="A step: its step_id, its number among completed steps (3 or #3), or next."),
]
OptionalStep = Annotated[
    str | None, Field(description="The step (default: the first upcoming one).")
]

TOOL_DESCRIPTIONS: dict[str, str] = {
    "list_tasks": "List the tasks in the Stepwise database, newest first (id, status, steps "
    "done and upcoming, input). Use it first, to find the task to debug.",
    "create_task": "Create a task for an agent (the default built-in agent, or a registered "
    "agent by name) without running it. Use it to reproduce a behaviour from an input.",
    "show_task": "Show a task: status, its completed steps compactly (number, kind, input, "
    "output, tool calls, error), the upcoming step with its input, and the exact messages the "
    "model will be sent next. Use it before deciding what to run, edit, approve or undo.",
    "show_step": "Show one step whole: its full input, output, tool calls, error and the exact "
    "messages its model call was sent. Use it on the failing or suspicious step to see what "
    "the model saw.",
    "run_step": "Run the task's next step, optionally with a new input for it (steering: the "
    "step records what the agent proposed and what ran). Use it to go one step at a time.",
    "run_until": "Run steps until the task's last step, a tool call awaiting approval, an "
    "error, max_steps, or (with before_tools / on_tools) before a tool call runs. Use it to "
    "get to the interesting step fast.",
    "edit_step": "Change an upcoming step's input without running it (text, or a tool call "
    'as {"tool": ..., "args": {...}}). Use it to try a fix, then run_step.',
    "approve": "Run a tool call that waits before it runs, with edited arguments if given. "
    "Use it when the call is right (or right after your edit).",
    "reject": "Refuse a tool call that waits before it runs; the model reads your reason "
    "instead of a result. Use it when the agent calls the wrong tool or with wrong arguments.",
    "undo": "Revert the last completed steps exactly (conversation, state, files); the "
    "undone step is upcoming again, editable. Use it to try another path from a step.",
    "fork": "Make a new task standing where this one stood just after a completed step, "
    "optionally going on with another registered agent. Use it to try a change without "
    "touching the original (imported tasks are forked to go on live).",
    "compare": "Show where two runs first differ: two tasks (a task and its fork), or, with "
    "one task, its current run against the run its latest undo replaced. Use it after a fix, "
    "to see what changed.",
    "save_test": "Save a task as a test case file (stepwise_cases/NAME.case.json): its "
    "recorded steps and expected answer and tool calls. Use it once a run is right.",
    "run_tests": "Replay test case files on the current code with the model answered from "
    "the recording; a table of pass/fail with the first divergence. Use it after a code "
    "change.",
    "reload_code": "Reload the registered agents' and tools' code from disk. Use it after you "
    "edit the agent's code: the next step of any task (and run_tests) runs the new code.",
    "import_trace": "Import a trace file (OTLP JSON, Langfuse, LangSmith, Stepwise export) as "
    "read-only tasks; their ids are returned. Use it to debug a run recorded elsewhere, then "
    "fork it.",
}


class DebuggerTools:
    """The tools over one host; each public method is a tool of the same name.

    Args:
        host: The host (store, runners) the tools act on.
        project: The user's project folder: case and trace paths are read inside it.
    """

    def __init__(self, host: Host, *, project: Path) -> None:
        self.host = host
        self.project = project.resolve()

    # ------------------------------------------------------------------ reading

    def list_tasks(
        self,
        limit: Annotated[int, Field(ge=1, le=200, description="Most tasks listed.")] = 20,
        status: Annotated[
            str | None, Field(description="Only tasks of this status (active, completed, ...).")
        ] = None,
    ) -> str:
        """List the tasks, newest first."""
        summaries = sorted(self.host.store.list_tasks(), key=lambda t: t.created_at, reverse=True)
        if status:
            summaries = [s for s in summaries if s.status.value == status]
        return task_list_text([s for s in summaries if not s.damaged][:limit])

    def show_task(
        self,
        task_id: TaskId,
        max_chars: Annotated[
            int, Field(ge=40, le=100_000, description="Longest value shown before it is cut.")
        ] = 300,
    ) -> str:
        """The task with its steps and what the model sees next."""
        task_id = self._task_id(task_id)
        return self._task_view(self.host.runner_for_task(task_id), task_id, max_chars=max_chars)

    def show_step(self, task_id: TaskId, step: StepRef) -> str:
        """One step whole, with the messages its model was sent."""
        task_id = self._task_id(task_id)
        runner = self.host.runner_for_task(task_id)
        state = runner.get_task_state(task_id)
        step_id = _step_id(state, step)
        sent = runner.get_messages_sent(task_id, step_id)
        return step_text(state.steps[step_id], state.outputs.get(step_id), sent)

    # ------------------------------------------------------------------ changing

    def create_task(
        self,
        input: Annotated[str, Field(min_length=1, description="What the agent is to do.")],
        agent: Annotated[
            str | None, Field(description="A registered agent's name (default: built-in).")
        ] = None,
    ) -> str:
        """A new task, its first step upcoming."""
        runner = self.host.runner_for(self.host.spec_named(agent))
        task = runner.create_task(input)
        return f"created task {task.task_id}\n" + self._task_view(runner, task.task_id)

    def run_step(
        self,
        task_id: TaskId,
        input: Annotated[
            str | dict[str, Any] | None,
            Field(description="Replaces the step's input (steering); omit to run it as is."),
        ] = None,
        step: OptionalStep = None,
    ) -> str:
        """Run one step."""
        task_id = self._task_id(task_id)
        runner = self.host.runner_for_task(task_id)
        step_id = _step_id(runner.get_task_state(task_id), step) if step else None
        output = runner.run_step(task_id, input, step_id=step_id)
        return self._after(runner, task_id, f"ran step #{output.task_step.number}")

    def run_until(
        self,
        task_id: TaskId,
        max_steps: Annotated[int, Field(ge=1, le=1000, description="Most steps run.")] = 20,
        before_tools: Annotated[
            bool, Field(description="Stop before any tool call runs (to approve or reject it).")
        ] = False,
        on_tools: Annotated[
            list[str] | None, Field(description="Stop before calls of these tools run.")
        ] = None,
    ) -> str:
        """Run until a stop."""
        task_id = self._task_id(task_id)
        runner = self.host.runner_for_task(task_id)
        stops: list[Breakpoint] = [OnTool(name) for name in on_tools or []]
        if before_tools:
            stops.append(OnTool())
        result = runner.run_until(task_id, stop=stops, max_steps=max_steps)
        return self._after(runner, task_id, run_until_text(result))

    def edit_step(
        self,
        task_id: TaskId,
        input: Annotated[
            str | dict[str, Any],
            Field(description='The new input: text, or a tool call {"tool": ..., "args": {...}}.'),
        ],
        step: OptionalStep = None,
    ) -> str:
        """Edit an upcoming step."""
        task_id = self._task_id(task_id)
        runner = self.host.runner_for_task(task_id)
        step_id = _step_id(runner.get_task_state(task_id), step or "next")
        runner.edit_step(task_id, step_id, input)
        return self._after(runner, task_id, f"edited step {step_id}")

    def approve(
        self,
        task_id: TaskId,
        step: OptionalStep = None,
        arguments: Annotated[
            dict[str, Any] | None, Field(description="Replace the call's arguments.")
        ] = None,
    ) -> str:
        """Run a waiting tool call."""
        task_id = self._task_id(task_id)
        runner = self.host.runner_for_task(task_id)
        state = runner.get_task_state(task_id)
        step_id = _tool_step(state, step)
        call = state.steps[step_id].input
        edited = None if arguments is None else {**call, "args": arguments}  # type: ignore[dict-item]
        runner.start_step(task_id, step_id, edited).result()
        return self._after(runner, task_id, f"approved and ran tool step {step_id}")

    def reject(
        self,
        task_id: TaskId,
        reason: Annotated[str, Field(description="What the model reads instead of a result.")],
        step: OptionalStep = None,
    ) -> str:
        """Refuse a waiting tool call."""
        task_id = self._task_id(task_id)
        runner = self.host.runner_for_task(task_id)
        step_id = _tool_step(runner.get_task_state(task_id), step)
        runner.reject_step(task_id, step_id, message=reason)
        return self._after(runner, task_id, f"rejected tool step {step_id}")

    def undo(
        self,
        task_id: TaskId,
        steps: Annotated[int, Field(ge=1, le=1000, description="How many steps to undo.")] = 1,
    ) -> str:
        """Undo the last steps."""
        task_id = self._task_id(task_id)
        runner = self.host.runner_for_task(task_id)
        runner.undo_step(task_id, steps=steps)
        return self._after(runner, task_id, f"undid {steps} step(s)")

    def fork(
        self,
        task_id: TaskId,
        step: StepRef,
        agent: Annotated[
            str | None, Field(description="Go on with this registered agent instead.")
        ] = None,
    ) -> str:
        """Fork a task after a completed step."""
        task_id = self._task_id(task_id)
        spec = self.host.spec_named(agent) if agent else None
        runner = self.host.runner_for(spec) if spec else self.host.runner_for_task(task_id)
        step_id = _step_id(runner.get_task_state(task_id), step)
        forked = runner.fork_task(task_id, step_id, agent=spec)
        fork_runner = self.host.runner_for_task(forked.task_id)
        return f"forked task {forked.task_id}\n" + self._task_view(fork_runner, forked.task_id)

    def compare(
        self,
        task_id: TaskId,
        other_task_id: Annotated[
            str | None,
            Field(description="The other task; omit to compare with the run undo replaced."),
        ] = None,
    ) -> str:
        """Where two runs first differ."""
        task_id = self._task_id(task_id)
        state = self.host.reader().get_task_state(task_id)
        if other_task_id is None:
            before = previous_run(state, "before undo")
            if before is None:
                raise UserError(
                    f"task {task_id} has no undone run to compare with",
                    hint="give other_task_id (a fork, say), or undo and run again first",
                )
            return compare_runs(before, run_of(state, "now"))
        other = self.host.reader().get_task_state(self._task_id(other_task_id))
        return compare_runs(
            run_of(state, f"task {task_id}"), run_of(other, f"task {other.task_id}")
        )

    # ------------------------------------------------------------------ tests and traces

    def save_test(
        self,
        task_id: TaskId,
        name: Annotated[
            str | None, Field(description="The case's name (default: task-<last 8 digits>).")
        ] = None,
        directory: Annotated[
            str, Field(description="Folder for the case, in the project.")
        ] = DEFAULT_CASES_DIR,
    ) -> str:
        """Save a task as a case file."""
        task_id = self._task_id(task_id)
        case = case_from_task(self.host.store, task_id, name=name)
        path = write_case(case, self._inside(directory))
        expected = case.expectations
        calls = len(expected.tool_calls)
        answer = f"answer {clip(expected.answer, 100)!r}, " if expected.answer else ""
        return (
            f"saved {path.relative_to(self.project)}: {len(case.steps)} steps, expecting "
            f"{answer}{calls} tool call(s)"
        )

    def run_tests(
        self,
        paths: Annotated[
            list[str] | None, Field(description="Case files or folders (default: stepwise_cases).")
        ] = None,
        pattern: Annotated[
            str | None, Field(description="Only cases whose name contains this.")
        ] = None,
    ) -> str:
        """Replay cases; a pass/fail table."""
        files = self._case_files(paths or [DEFAULT_CASES_DIR])
        rows, failed = [], 0
        registry = user_code.default_registry()
        for path in files:
            row, ok = self._replay(path, pattern, registry)
            if row:
                rows.append(row)
                failed += not ok
        if not rows:
            return "no test cases found: save one with save_test"
        head = f"{len(rows) - failed} passed, {failed} failed"
        return "\n".join([head, *rows])

    def reload_code(self) -> str:
        """Reload the user's code."""
        generation = user_code.reload()
        names = ", ".join(sorted(user_code.default_registry().names("agent"))) or "none"
        return f"reloaded the user's code (generation {generation}); agents: {names}"

    def import_trace(
        self,
        path: Annotated[str, Field(description="The trace file, in the project.")],
        format: Annotated[
            str, Field(description="auto, otlp, openinference, langfuse, langsmith or stepwise.")
        ] = "auto",
    ) -> str:
        """Import a trace file as tasks."""
        task_ids = import_file(self._inside(path), self.host.store, format=format)  # type: ignore[arg-type]
        lines = [f"imported {len(task_ids)} task(s) (read only: fork one to go on live):"]
        return "\n".join([*lines, *task_ids])

    # ------------------------------------------------------------------ helpers

    def _task_id(self, given: str) -> str:
        """The task id `given` names: whole, or its last digits."""
        given = given.strip()
        if len(given) >= 32:
            return given
        matches = [t.task_id for t in self.host.store.list_tasks() if t.task_id.endswith(given)]
        if len(matches) > 1:
            raise UserError(f"{given!r} ends {len(matches)} task ids", hint="give more of the id")
        return matches[0] if matches else given  # Unknown: the runner says so, with its code.

    def _task_view(self, runner: ParallelAgentRunner, task_id: str, *, max_chars: int = 300) -> str:
        state = runner.get_task_state(task_id)
        return task_text(state, upcoming_preview=_preview(runner, state), max_chars=max_chars)

    def _after(self, runner: ParallelAgentRunner, task_id: str, headline: str) -> str:
        """What a change did: the headline, the last completed step, the upcoming ones."""
        state = runner.get_task_state(task_id)
        lines = [headline, f"task {task_id} [{state.task.status.value}] version {state.version}"]
        if state.completed:
            last = state.completed[-1]
            lines.append("last completed:")
            lines.append(step_line(state.steps[last], state.outputs.get(last)))
        lines.append(f"upcoming ({len(state.queue)}):")
        lines.extend(step_line(step, None) for step in state.step_queue)
        if not state.queue:
            lines.append("  (none)")
        return "\n".join(lines)

    def _inside(self, given: str) -> Path:
        path = (self.project / given).resolve()
        if not path.is_relative_to(self.project):
            raise UserError(
                f"{given!r} is outside the project folder {self.project}",
                hint="give a path inside the project folder",
            )
        return path

    def _case_files(self, paths: list[str]) -> list[Path]:
        found: list[Path] = []
        for given in paths:
            path = self._inside(given)
            if path.is_dir():
                found.extend(sorted(path.rglob(f"*{CASE_SUFFIX}")))
            elif path.is_file():
                found.append(path)
            else:
                raise UserError(f"{given}: no such case file or folder")
        return list(dict.fromkeys(found))

    def _replay(self, path: Path, pattern: str | None, registry: Any) -> tuple[str, bool]:
        where = path.relative_to(self.project)
        try:
            case = load_case(path)
        except AgentCoreError as exc:
            return f"ERROR {where}: [{exc.code}] {exc}", False
        if pattern and pattern not in case.name and pattern not in str(where):
            return "", True
        result = replay_case(case, registry=registry, project=self.project)
        if result.passed:
            return f"PASS {case.name} ({where}): {result.steps} steps", True
        return f"FAIL {case.name} ({where}): {clip(result.report(), 2000)}", False


def _preview(runner: ParallelAgentRunner, state: TaskState) -> list | None:
    """What the model is sent next, or None when nothing can run (or no preview is possible)."""
    if not state.queue or state.task.status not in (TaskStatus.ACTIVE, TaskStatus.FAILED):
        return None
    if state.task.imported:
        return None
    try:
        return runner.preview_messages(state.task_id)
    except AgentCoreError:  # A worker that cannot preview: the view shows the steps alone.
        return None


def _step_id(state: TaskState, given: str) -> str:
    """The step `given` names: an id, a completed step's number (3, #3), or `next`."""
    given = given.strip()
    if given in state.steps:
        return given
    if given == "next":
        ready = [s for s in state.step_queue if state.is_ready(s)]
        if not ready:
            raise UserError(
                f"task {state.task_id} has no upcoming step",
                hint="undo a step, or fork the task to go on",
            )
        return ready[0].step_id
    number = given.removeprefix("#")
    if number.isdigit():
        for step_id in state.completed:
            if state.steps[step_id].number == int(number):
                return step_id
    raise StepNotFoundError(
        f"task {state.task_id} has no step {given!r}",
        hint="give a step_id from show_task, a completed step's number, or next",
        task_id=state.task_id,
    )


def _tool_step(state: TaskState, given: str | None) -> str:
    """The tool call `given` names, else the first one waiting before it runs."""
    if given:
        step_id = _step_id(state, given)
    else:
        waiting = [s for s in state.step_queue if s.kind is StepKind.TOOL]
        if not waiting:
            raise UserError(
                f"task {state.task_id} has no tool call waiting to run",
                hint="run_until with before_tools=true stops before the next one",
            )
        step_id = waiting[0].step_id
    step = state.steps[step_id]
    if step.kind is not StepKind.TOOL or step.status is not StepStatus.UPCOMING:
        raise UserError(
            f"step {step_id} is not a tool call waiting to run",
            hint="show_task lists the upcoming steps",
        )
    return step_id
