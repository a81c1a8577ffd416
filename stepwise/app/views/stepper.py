"""Stepper: run a task one step at a time, steer it, undo it, and watch its DAG grow.

The page keeps only the task id in the session (and in the URL, so a reload finds the task
again); everything else is read from the store on each rerun. Text that came from a person
or a model is shown with `st.code`, never through markdown.

A control that cannot work now is drawn disabled, with the reason on hover. Every action
acts on the task as the page showed it (`stepwise.app.components.task_version`): a task changed in
another tab refuses it and the page shows its current state.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from itertools import islice
from typing import Any

import streamlit as st

from agent_core import ParallelAgentRunner, StepRun
from agent_core.dag import build_dag
from agent_core.errors import AgentCoreError, UserCodeError
from agent_core.host import check_rebuildable
from agent_core.llms.scripted import HumanLLM
from agent_core.types import StepAction, StepKind, StepStatus, TaskState, TaskStatus, TaskStepOutput
from stepwise.app.components import ready_steps_job, run_until_job, runtime, state, task_version
from stepwise.app.components.actions import show_message, show_notice
from stepwise.app.components.breakpoint_picker import chosen_breakpoints, render_breakpoints
from stepwise.app.components.conversation_editor import (
    conversation_around,
    edit_reason,
    is_conversation_edit,
    render_conversation_editor,
)
from stepwise.app.components.database import (
    DATABASE_DOWN,
    render_database_down,
    when_database_answers,
)
from stepwise.app.components.graph_panel import render_graph_panel
from stepwise.app.components.langgraph_view import node_names, render_graph_view, topology_of
from stepwise.app.components.live_step import (
    render_live_step,
    wait_for_runs_elsewhere,
    watch_live_steps,
)
from stepwise.app.components.memory_view import render_memory
from stepwise.app.components.messages import plain, plural, token_count, tokens_text
from stepwise.app.components.model_choice import max_tokens_text
from stepwise.app.components.rerun_offer import render_rerun_offer
from stepwise.app.components.run_limits import limits_of, limits_text, render_limits_button
from stepwise.app.components.step_card import render_step_card
from stepwise.app.components.step_editor import (
    preview_messages,
    render_kept_text,
    render_upcoming_step,
    save_typed_edits,
    typed_input,
)
from stepwise.app.components.step_travel import Travel, render_step_travel
from stepwise.app.components.task_form import agent_label, render_create_form
from stepwise.app.components.task_list import usage_cost_text
from stepwise.app.components.task_origin import framework_of_task, model_text, replay_text
from stepwise.app.components.task_tests import render_task_tests
from stepwise.app.components.thread_controls import (
    continuing,
    render_continue_button,
    render_continue_form,
    render_lineage,
)
from stepwise.app.components.undo_notice import undo_last_step
from stepwise.app.components.user_code_view import agent_fix_advice, render_code_error
from stepwise.app.components.workspace_view import render_workspace

logger = logging.getLogger("stepwise.app")

CARDS_SHOWN = 10
"""Completed steps drawn as cards on each rerun (the newest); the rest on request."""
_OWN_RUNNER = "stepwise.own_runner"
"""The task this session last found runnable with its own runner (built for it already)."""
TASK_PARAM = "task"
_NOT_REBUILDABLE = "agent_not_rebuildable"
"""The URL query parameter holding the task id, so a page reload keeps the task."""
_SHOWN_STATUSES = (StepStatus.COMPLETED, StepStatus.UNDONE, StepStatus.SKIPPED)
_RUNNABLE = (TaskStatus.ACTIVE, TaskStatus.FAILED)
"""Task statuses whose steps can still run (a failed step waits to be fixed and retried)."""
# A tool name plain enough for a notice (notices are markdown).
_PLAIN_NAME = re.compile(r"[\w.-]{1,40}")
_ANSWERED = (
    "The agent answered. Press Finalize to finish the task, or Undo to go back before the "
    "answer and steer it."
)


@dataclass(frozen=True)
class _View:
    """One page run's view of the task: what it drew, and what its controls may do."""

    runner: ParallelAgentRunner
    task_state: TaskState
    why_read_only: str
    """Why nothing can run ("" when the task is active and its runner is built)."""
    human: HumanLLM | None
    live: frozenset[str]
    """Steps running now, in this process's runtime or another process's."""
    until_running: bool
    runs: tuple[StepRun, ...] = ()
    """Their runs: this process's, and those the host relays from other processes."""

    @property
    def active(self) -> bool:
        return not self.why_read_only

    @property
    def task_id(self) -> str:
        return self.task_state.task_id

    @property
    def answered(self) -> bool:
        """The last step gave the answer and nothing is queued: Finalize or Undo."""
        last = self.task_state.last_output
        return last is not None and last.is_last and not self.task_state.queue


def _current_task_id() -> str | None:
    """The session's task, else the one in the URL (a reload starts a new session)."""
    task_id = state.current_task_id()
    url_id = st.query_params.get(TASK_PARAM)
    if task_id is None and url_id:
        state.set_current_task_id(url_id)
        return url_id
    if task_id is not None and url_id != task_id:
        st.query_params[TASK_PARAM] = task_id
    return task_id


def _leave_task() -> None:
    state.set_current_task_id(None)
    st.query_params.pop(TASK_PARAM, None)


def _human_llm(runner: ParallelAgentRunner) -> HumanLLM | None:
    llm = getattr(runner.agent_worker, "llm", None)
    return llm if isinstance(llm, HumanLLM) else None


def _header(task_state: TaskState, runner: ParallelAgentRunner) -> None:
    task = task_state.task
    st.caption("Task")
    text = task.input[:2000] + ("…" if len(task.input) > 2000 else "")
    st.code(text, language=None, wrap_lines=True)
    usage = task.usage
    spec = runtime.spec_of(task.task_id)
    status = _status_text(task_state) + (" · imported, read only" if task.imported else "")
    parts = [
        plain(replay_text(task.replay_of)),  # First: a test ran this task, not the person.
        f"Status: **{status}**",
        f"{plural(len(task_state.completed), 'step')} done",
        f"{len(task_state.queue):,} upcoming",
        tokens_text(usage),
        usage_cost_text(usage),
    ]
    limits = limits_of(task_state, runner, spec)
    status_col, limits_col = st.columns([6, 1], vertical_alignment="center")
    status_col.caption(" · ".join(part for part in parts if part))
    status_col.caption(limits_text(limits))
    with limits_col:
        render_limits_button(runner, task_state, limits, why_not=_limits_reason(task_state))
    # A framework's agent runs on its own model (BaseAgentWorker.own_model).
    own = getattr(runner.agent_worker, "own_model", None)
    # It sends its own reply cap too: the spec's is not in its requests.
    cap = "" if own or framework_of_task(task) else max_tokens_text(spec)
    model = model_text(task, spec, own_model=own)
    line = f"Model: {model} · Agent: {agent_label(spec)}" + (f" · {cap}" if cap else "")
    st.text(line)  # names: not markdown


def _status_text(task_state: TaskState) -> str:
    """The task's status as a person reads it.

    A failed step waiting to be retried leaves the task active: the runtime calls it failed
    until the step runs again, but nothing is lost and every control still works.
    """
    task = task_state.task
    if task.status is TaskStatus.FAILED and not task.imported:
        failed = sum(task_state.steps[s].status is StepStatus.FAILED for s in task_state.queue)
        return f"active · {plural(failed, 'failed step')} to fix and run again"
    return task.status.value


def _limits_reason(task_state: TaskState) -> str:
    """Why the Limits button cannot change the task's bounds; "" when it can."""
    task = task_state.task
    if task.imported:
        return "Imported from a trace: this copy is read only."
    if task.status not in _RUNNABLE:
        return f"The task is {task.status.value}: its bounds no longer matter."
    return ""


def _nothing_queued(view: _View) -> str:
    if view.answered:
        return "Nothing queued: the agent answered. Press Finalize, or Undo to go back."
    return "Nothing queued: press Undo to go back."


def _run_reason(view: _View, *, until: bool) -> str:
    """Why Run ready steps (or Run until) cannot work now; "" when it can."""
    if not view.active:
        return view.why_read_only
    if until and view.until_running:
        return "Run until is running: Stop run until ends it."
    if view.human is not None:
        return "You are the model: each reply is typed, so run one step at a time (Run step)."
    task_state = view.task_state
    if not task_state.queue:
        return _nothing_queued(view)
    waiting = [task_state.steps[s] for s in task_state.queue if s not in view.live]
    if not waiting:
        return "Every upcoming step is running: wait for it, or press Stop."
    if not any(task_state.is_ready(step) for step in waiting):
        return "No step is ready: each upcoming step waits for another to finish."
    return ""


def _undo_reason(view: _View) -> str:
    if view.task_state.task.imported:
        return "Imported from a trace: this copy is read only, so nothing can be undone."
    if not view.active:
        return view.why_read_only
    if not view.task_state.completed:
        return "Nothing to undo: no step has run yet."
    if view.live or view.until_running:
        return "A step is running: wait for it, or press Stop."
    return ""


def _ran_text(outputs: list[TaskStepOutput]) -> str:
    """What Run ready steps ran, as "Ran steps 4 and 5: add, multiply." (plain names only)."""
    if not outputs:
        return "No step was ready."
    numbers = [str(o.task_step.number or "?") for o in outputs]
    names = []
    for output in outputs:
        step = output.task_step
        calls = [c.tool_name for c in output.tool_calls if _PLAIN_NAME.fullmatch(c.tool_name)]
        names.append(", ".join(calls) if step.kind is StepKind.TOOL and calls else step.kind.value)
    if len(numbers) == 1:
        return f"Ran step {numbers[0]}: {names[0]}."
    listed = ", ".join(numbers[:-1]) + " and " + numbers[-1]
    return f"Ran steps {listed}: {', '.join(names)}."


# --- actions: button callbacks, so a click is answered before the page is drawn, even when
# --- the task changed meanwhile and the button is drawn differently (or not at all).


_CONTROLS = run_until_job.WHERE
"""Where the notices of the task's buttons (Run until, Undo, Finalize...) are shown."""


def _on_run_ready_steps(runner: ParallelAgentRunner, task_id: str) -> None:
    # Started in the runtime, not run here: the page streams each step and can stop them.
    def start() -> None:
        save_typed_edits(runner, task_id)  # What is typed in a step's box is what it runs with.
        ready_steps_job.start(runner, task_id)

    task_version.act(runner, task_id, start, where=_CONTROLS)


def _on_run_until(runner: ParallelAgentRunner, task_id: str) -> None:
    stops = chosen_breakpoints()
    start = lambda: run_until_job.start(runner, task_id, stops)  # noqa: E731
    task_version.act(runner, task_id, start, where=_CONTROLS)


def _on_undo(runner: ParallelAgentRunner, task_id: str) -> None:
    undo = lambda: undo_last_step(runner, task_id, where=_CONTROLS)  # noqa: E731
    task_version.act(runner, task_id, undo, where=_CONTROLS)  # It says what was not undone.


def _on_finalize(runner: ParallelAgentRunner, task_id: str) -> None:
    finalize = lambda: runner.finalize_response(task_id)  # noqa: E731
    task_version.act(runner, task_id, finalize, success="Task finished.", where=_CONTROLS)


def _on_abandon(runner: ParallelAgentRunner, task_id: str) -> None:
    abandon = lambda: runner.abandon_task(task_id)  # noqa: E731
    task_version.act(runner, task_id, abandon, success="Task abandoned.", where=_CONTROLS)


def _abandon(view: _View, column: Any) -> None:
    """Abandon, after a second click in its popover (like Delete on the Tasks page)."""
    abandoned = view.task_state.task.status is TaskStatus.ABANDONED
    with column.popover(
        "Abandon",
        key="abandon",
        disabled=not view.active and not abandoned,
        help=view.why_read_only or "Stops the task for good; its steps stay to inspect.",
    ):
        if abandoned:  # The popover stays open over the page's notice: say it here too.
            st.success("Task abandoned. Its steps stay here to inspect; New task starts another.")
            return
        st.caption(
            "Abandon this task? No step of it can run, be undone or finalized again; its steps "
            "stay here to inspect."
        )
        st.button(
            "Abandon for good",
            key="abandon-confirm",
            type="primary",
            disabled=not view.active,  # A popover left open after abandoning stays harmless.
            on_click=_on_abandon,
            args=(view.runner, view.task_id),
        )


def _controls(view: _View) -> None:
    task_state = view.task_state
    on = (view.runner, view.task_id)
    columns = st.columns([1.5, 1, 1, 1, 1.1, 1.1, 2.8])
    ready_reason = _run_reason(view, until=False)
    columns[0].button(
        "Run ready steps",
        key="act-run-ready",
        disabled=bool(ready_reason),
        help=ready_reason or "Runs every ready step at once (parallel plan items and tool calls).",
        on_click=_on_run_ready_steps,
        args=on,
    )
    until_reason = _run_reason(view, until=True)
    columns[1].button(
        "Run until",
        key="act-run-until",
        disabled=bool(until_reason),
        help=until_reason
        or "Runs steps until a stop you set under Breakpoints, the last step, or a tool call "
        "awaiting approval. Pressed at a stop, it goes on past it. It goes on if you reload; "
        "Stop run until ends it.",
        on_click=_on_run_until,
        args=on,
    )
    undo_reason = _undo_reason(view)
    columns[2].button(
        "Undo",
        key="act-undo",
        disabled=bool(undo_reason),
        help=undo_reason or "Reverts the last step: it is upcoming again, to edit and rerun.",
        on_click=_on_undo,
        args=on,
    )
    finalize_reason = view.why_read_only or (
        "" if view.answered else "The agent has not answered yet: run its steps first."
    )
    columns[3].button(
        "Finalize",
        key="act-finalize",
        disabled=bool(finalize_reason),
        help=finalize_reason or "Finishes the task with the agent's answer.",
        on_click=_on_finalize,
        args=on,
    )
    _abandon(view, columns[4])
    if columns[5].button("New task"):
        _leave_task()
        st.rerun()
    with columns[6]:
        render_breakpoints(
            steps_done=len(task_state.completed),
            disabled=not view.active,
            nodes=node_names(topology_of(task_state)),
        )


_FEEDBACK = "feedback-text"
_FEEDBACK_PROBLEM = "stepwise.feedback_problem"


def _send_feedback(runner: ParallelAgentRunner, task_id: str) -> None:
    """Add the typed feedback; the box is emptied only once it was added (never lost)."""
    text = st.session_state.get(_FEEDBACK, "")
    if not text.strip():
        st.session_state[_FEEDBACK_PROBLEM] = "Type the feedback first."
        return
    add = lambda: runner.add_feedback(task_id, text)  # noqa: E731
    if task_version.act(runner, task_id, add, success="Feedback added."):
        st.session_state[_FEEDBACK] = ""


def _feedback(view: _View) -> None:
    if view.answered:
        st.info(_ANSWERED)  # Feedback now would have no step to read it.
        return
    state = view.task_state
    following = next((s for s in state.step_queue if state.is_ready(s)), None)
    why_not = following.cannot.get(StepAction.FEEDBACK) if following is not None else None
    if why_not:  # The agent's framework has no place for a person's message before it.
        st.caption(f"Add feedback is not offered before this step: {plain(why_not)}")
        return
    with st.form("feedback", border=False):
        st.text_input(
            "Add feedback (a message the model reads before its next step)", key=_FEEDBACK
        )
        problem = st.session_state.pop(_FEEDBACK_PROBLEM, None)
        if problem:
            st.warning(problem)
        # A callback runs before the page draws: it may empty the box, and a refused text
        # stays in it to send again.
        st.form_submit_button(
            "Add feedback", on_click=_send_feedback, args=(view.runner, view.task_id)
        )


def _finished(view: _View) -> None:
    task_state = view.task_state
    status = task_state.task.status
    last = task_state.last_output
    if status is TaskStatus.COMPLETED and last is not None:
        st.success("Finished. The final answer:")
        st.code("" if last.output is None else str(last.output), language=None, wrap_lines=True)
        render_continue_button(task_state.task, leave=_leave_task)
    elif status is TaskStatus.ABANDONED:
        st.info("This task was abandoned: its steps stay here to inspect. Start a new task.")
    elif view.answered:
        if not view.active:
            st.caption("The agent answered; this task is read only.")
        # Active: the line in place of the feedback box says what to do.
    else:
        st.caption(_nothing_queued(view))


def _upcoming(view: _View) -> list[tuple[StepRun, Any]]:
    """Draw the queue; returns the steps running in the runtime, with where to stream them."""
    st.subheader("Upcoming steps", anchor=False)
    render_kept_text(view.task_state.task_id)
    runner, task_state = view.runner, view.task_state
    watched = [(run, render_live_step(runner, run)) for run in view.runs]
    steps = task_state.step_queue
    if not steps or task_state.task.status in (TaskStatus.COMPLETED, TaskStatus.ABANDONED):
        _finished(view)
    # Steps that can run now first: a call waiting for approval is not under steps that wait.
    waiting = sorted(
        (step for step in steps if step.step_id not in view.live),
        key=lambda step: not task_state.is_ready(step),
    )
    if not view.active:
        for step in waiting:
            st.caption(f"{step.kind.value} step (not run: {view.why_read_only})")
        return watched
    for step in waiting:
        render_upcoming_step(runner, task_state, step, human=view.human)
    return watched


# How many cards the history shows for a task: (task id, count), grown by "Show … older".
_MORE = "stepwise.history_shown"


def _show_more(task_id: str, count: int) -> None:
    st.session_state[_MORE] = (task_id, count + CARDS_SHOWN)


def _travel(view: _View) -> Travel:
    """What the cards' Undo to here and Fork from here may do now."""
    # Any task forks, an imported one too (with an agent the card's picker chooses).
    return Travel(view.runner, view.task_state, _undo_reason(view), "")


@st.fragment
def _history(travel: Travel) -> None:
    """The completed steps, newest first; older cards are built only when asked for.

    A fragment: showing more cards redraws these cards, not the controls, queue and DAG.
    """
    task_state = travel.task_state
    st.subheader("Completed steps", anchor=False)
    total = len(task_state.outputs)
    if not total:
        st.caption("No step has run yet.")
        return
    undone = total - len(task_state.completed)
    label = f"Show all {plural(total, 'step')}" + (f" ({undone} undone)" if undone > 0 else "")
    if total > CARDS_SHOWN and st.checkbox(label, key="show-all"):
        _all_steps(travel)
        return
    more: Any = st.session_state.get(_MORE)
    count = more[1] if more and more[0] == task_state.task_id else CARDS_SHOWN
    newest_first = reversed(task_state.outputs)  # dicts keep commit order: no sort, no copy
    last = task_state.last_output
    for step_id in islice(newest_first, count):
        output = task_state.outputs[step_id]
        if output.task_step.status in _SHOWN_STATUSES:
            _card(travel, output, expanded=output is last)
    if total > count:
        st.button(
            f"Show {min(CARDS_SHOWN, total - count)} older steps",
            key="show-more",
            on_click=_show_more,
            args=(task_state.task_id, count),
        )


def _card(travel: Travel, output: TaskStepOutput, *, expanded: bool, key: str = "card") -> None:
    task_state, step = travel.task_state, output.task_step
    load = functools.partial(travel.runner.get_messages_sent, task_state.task_id, step.step_id)
    edit = conversation_around(task_state, step.step_id) if is_conversation_edit(step) else None
    render_step_card(
        output,
        expanded=expanded,
        key=key,
        load_messages_sent=load,
        controls=functools.partial(render_step_travel, travel, step),
        conversation=edit,
    )


def _all_steps(travel: Travel) -> None:
    """Every step as one row of a table; the row picked opens as a card below it.

    Hundreds of cards are too many for a browser to draw on every click; a table row is cheap.
    """
    task_state = travel.task_state
    labels = build_dag(task_state).nodes
    outputs = [
        o for o in reversed(task_state.outputs.values()) if o.task_step.status in _SHOWN_STATUSES
    ]
    rows = [
        {
            "Step": o.task_step.number,
            "What it did": labels[o.task_step.step_id].get("label", ""),
            "Status": o.task_step.status.value,
            "Tokens": token_count(o.usage),
            "Cost": usage_cost_text(o.usage),
            "Latency (ms)": round(o.latency_ms),
        }
        for o in outputs
    ]
    st.caption("Pick a row to open its step's card.")
    picked = st.dataframe(
        rows,
        hide_index=True,
        on_select="rerun",
        selection_mode="single-row",
        key="all-steps",
        width="stretch",
    )
    chosen = picked.selection.rows  # type: ignore[attr-defined]
    if chosen:
        _card(travel, outputs[chosen[0]], expanded=True, key="table")


def _memory(view: _View) -> None:
    task_state = view.task_state
    with st.expander("What the model sees next"):
        ready = (s for s in task_state.step_queue if task_state.is_ready(s))
        step = next(ready, None)
        try:
            typed = None if step is None else typed_input(view.runner, task_state, step)
            messages = preview_messages(view.runner, task_state.task_id, step, typed)
        except AgentCoreError as exc:  # An input the worker refuses: say so, draw the rest.
            show_message("warning", exc, headline="The next step cannot run as it is:")
            return
        if not messages and step is not None:
            st.caption(f"The next step ({step.kind.value}) makes no model call.")
        else:
            render_memory(messages, key="next")
        if view.active:
            reason = edit_reason(view.runner, task_state, answered=view.answered)
            render_conversation_editor(view.runner, task_state, reason=reason)


def _runner_for(task_id: str) -> tuple[ParallelAgentRunner, AgentCoreError | None]:
    """The task's runner, or a read-only one and why its own could not be built.

    A task that can no longer run (finished, abandoned, imported from a trace) is read with
    the reader: its agent is never rebuilt, so a trace naming someone's code imports nothing.
    """
    reader = runtime.reader()
    if st.session_state.get(_OWN_RUNNER) != task_id:  # Not yet seen runnable here.
        task = reader.get_task(task_id)
        if task.status not in _RUNNABLE or task.imported:
            return reader, None
    try:
        # An attached program's agent object: never run it as the default (demo) agent.
        check_rebuildable(runtime.shared_store(), task_id)
        runner = runtime.runner_for(runtime.spec_of(task_id))
    except AgentCoreError as exc:  # No key for its provider, say: still show the task.
        return reader, exc
    # Checked on the task's own runner, whose copy its own steps keep current: the reader's
    # copy went stale with each step, and reloading a 500-step task cost each Run step.
    task = runner.get_task(task_id)
    if task.status not in _RUNNABLE or task.imported:
        st.session_state.pop(_OWN_RUNNER, None)
        return reader, None
    st.session_state[_OWN_RUNNER] = task_id
    return runner, None


def _problem(problem: AgentCoreError) -> None:
    if isinstance(problem, UserCodeError):
        render_code_error(problem, headline="Read only: your agent could not be loaded.")
        st.caption(agent_fix_advice(problem))
    elif problem.code == _NOT_REBUILDABLE:
        show_message("warning", problem, headline="Read only here: your program runs this task.")
    else:
        show_message("warning", problem, headline="Read only: this task's model is not set up.")


def _why_read_only(task_state: TaskState, problem: AgentCoreError | None) -> str:
    task = task_state.task
    if task.imported:
        return "Imported from a trace: this copy is read only."
    if task.status is TaskStatus.COMPLETED:
        return "The task is finished."
    if task.status is TaskStatus.ABANDONED:
        return "The task was abandoned."
    if isinstance(problem, UserCodeError):
        return "Read only: your agent could not be loaded (see above)."
    if problem is not None and problem.code == _NOT_REBUILDABLE:
        return "Read only here: the program that started it runs it (see above)."
    if problem is not None:
        return "Read only: this task's model is not set up (see above)."
    return ""


def _task_view(task_id: str) -> None:
    runner, problem = _runner_for(task_id)
    task_state = runner.snapshot_task_state(task_id)  # Steps may commit while this draws.
    why_read_only = _why_read_only(task_state, problem)
    _header(task_state, runner)
    render_lineage(task_state)
    if problem is not None:
        _problem(problem)
    render_rerun_offer(runner, task_state)  # Re-run on save: the user's code changed since.
    until_running = run_until_job.render_running(task_id)
    ready_steps_job.render_running(runner, task_id)  # Its steps stream under Upcoming steps.
    runs = _live_runs(runner, task_state)
    view = _View(
        runner=runner,
        task_state=task_state,
        why_read_only=why_read_only,
        human=None if why_read_only else _human_llm(runner),
        live=frozenset(run.step_id for run in runs),
        until_running=until_running,
        runs=tuple(runs),
    )
    _controls(view)
    show_notice(where=_CONTROLS)  # What a control just did, right under the controls.
    render_task_tests(runner, task_state)  # Save as test, Replay on current code (issue 29).
    left, right = st.columns([3, 2], gap="large")
    with left:
        watched = _upcoming(view)
        if view.active:
            _feedback(view)
        _history(_travel(view))
    with right:
        render_graph_panel(runner, task_state, active=view.active)
        render_graph_view(task_state)  # A LangGraph task's own graph, beside the step DAG.
        if problem is None:
            _memory(view)
        render_workspace(task_state)
    task_version.remember(task_state)  # Drawn: the next click acts on this version.

    def changed() -> bool:
        return runner.get_task_state(task_id).version != task_state.version

    watch_live_steps(watched, changed=changed)  # Last: the page is drawn while a step streams.
    wait_for_runs_elsewhere(task_id, _running_elsewhere(view), changed=changed)
    if until_running:
        drawn = {run.step_id for run, _ in watched}
        run_until_job.wait_while_running(runner, task_id, drawn, drawn_version=task_state.version)
    if changed():
        st.rerun()  # A step ended while the page was drawn: show what it left.


def _live_runs(runner: ParallelAgentRunner, task_state: TaskState) -> list[StepRun]:
    """The task's runs: this process's, then other processes' whose steps still run.

    Another process's run heard before its step's end reached the store is left out once
    the drawn state says the step ended.
    """
    local = runner.running_steps(task_state.task_id)
    here = {run.step_id for run in local}
    running = {i for i, step in task_state.steps.items() if step.status is StepStatus.RUNNING}
    elsewhere = runtime.shared_host().runs_of(task_state.task_id)
    return [*local, *(r for r in elsewhere if r.step_id not in here and r.step_id in running)]


def _running_elsewhere(view: _View) -> set[str]:
    """Steps another live process runs whose events have not arrived (none yet, or never)."""
    runner, task_state = view.runner, view.task_state
    return {
        step_id
        for step_id, step in task_state.steps.items()
        if step.status is StepStatus.RUNNING
        and step_id not in view.live
        and not runner.is_interrupted(task_state.task_id, step_id)
    }


def _cannot_show(task_id: str, error: Exception) -> None:
    """Say why the task could not be drawn, with a way back; never a traceback on the page."""
    if isinstance(error, AgentCoreError) and error.code == DATABASE_DOWN:
        render_database_down(error)  # Not the task's fault: the fix is the database.
        return
    if not isinstance(error, AgentCoreError):
        logger.exception("showing task %s failed", task_id)
    show_message("error", error, headline="This task could not be shown.")
    if st.button("Back to a new task"):
        _leave_task()
        st.rerun()


def render() -> None:
    """Draw the Stepper page: the new-task form, or the current task (or the database down)."""
    with when_database_answers():
        _render()


def _render() -> None:
    state.load_saved_settings()  # Before the notice: a saved setting that cannot be read says so.
    current = _current_task_id()
    if current is not None:
        run_until_job.report_finished(current)  # Before the notice: this page run shows it.
        ready_steps_job.report_finished(current, _ran_text)
    show_notice()
    if current is None:
        earlier = continuing()  # "Continue this conversation" on a finished task.
        render_continue_form(earlier) if earlier else render_create_form()
        return
    try:
        _task_view(current)
    except Exception as error:  # st.rerun() and st.stop() are not Exceptions: they pass.
        _cannot_show(current, error)
