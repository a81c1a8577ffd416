"""An upcoming step, editable before it runs: Run, Save, Skip; Approve or Reject a tool call.

A step's input is edited as text: plain text for a reasoning step, JSON for a step whose input
is a JSON object (a tool call's arguments, a plan item). Invalid JSON is refused next to the
step before anything runs. In "you are the model" mode the step also shows the exact prompt
the model gets (the runtime's own preview, built by the code that builds the real request)
and a box for its reply; Run step without a reply is refused next to that box.

Every button acts through `task_version.act`: a step drawn from a task that changed since
(in another tab) is left alone. Skip asks again when it would leave nothing to run.
"""

from __future__ import annotations

import json
import re
from typing import Any

import streamlit as st

from agent_core import ParallelAgentRunner
from agent_core.errors import AgentCoreError, UserError
from agent_core.llms.base import ChatMessage
from agent_core.llms.scripted import HumanLLM
from agent_core.types import (
    DONE_STATUSES,
    INTERRUPT_KEY,
    StepAction,
    StepInput,
    StepKind,
    StepStatus,
    TaskState,
    TaskStep,
)
from agent_core.workers.multimodal_react import step_images
from stepwise.app.components import runtime, state, task_version
from stepwise.app.components.actions import show_message
from stepwise.app.components.memory_view import render_memory
from stepwise.app.components.messages import ServerKey, failed_step_text, plain, replaces_message
from stepwise.app.components.step_card import render_traceback
from stepwise.app.components.step_sampling import render_sample_control
from stepwise.app.components.task_images import render_thumbnails
from stepwise.app.components.user_code_view import render_reload_button

__all__ = [
    "preview_messages",
    "render_kept_text",
    "render_preview",
    "render_upcoming_step",
    "typed_input",
    "waiting_reason",
]

_MODEL_KINDS = (StepKind.LLM, StepKind.PLAN, StepKind.FINALIZE)
"""Steps that call the model once (in "you are the model" mode: one typed reply)."""
_PLAIN_NAME = re.compile(r"[\w.-]{1,40}")
_CONFIRM_SKIP = "stepwise.confirm_skip"
"""The step whose Skip was clicked once and now asks to be confirmed."""
_PROBLEM = "stepwise.step_problem"
"""Why the last click on a step did nothing: (step key, where to show it, the text)."""
_KEPT = "stepwise.kept_text"
"""What a person typed into a step when the click was refused as stale: (task id, texts)."""


def _title(runner: ParallelAgentRunner, step: TaskStep, *, ready: bool) -> str:
    parts = [f"Upcoming {step.kind.value} step"]
    if step.name:  # The framework's own words: a node, a turn, a tool (the user's text).
        parts.append(plain(step.name))
    if step.needs_approval:
        parts.append("tool call awaiting your approval")
    elif step.step_state.get("held"):
        parts.append("tool call held at a breakpoint")
    if step.status is StepStatus.FAILED:
        parts.append(f"failed (attempt {step.attempts})")
    if step.status is StepStatus.RUNNING:
        interrupted = runner.is_interrupted(step.task_id, step.step_id)
        parts.append("interrupted: run it again" if interrupted else "running")
    if step.edited:
        parts.append("edited")
    if not ready:
        parts.append("waits for earlier steps")
    return " · ".join(parts)


def preview_messages(
    runner: ParallelAgentRunner, task_id: str, step: TaskStep | None, input: StepInput
) -> list[ChatMessage]:
    """What the model gets if `step` (None: the next one) runs now with `input`.

    The runtime builds it with the code that builds the real request; `[]` for a step that
    makes no model call.
    """
    return runner.preview_messages(task_id, None if step is None else step.step_id, input)


def render_preview(
    runner: ParallelAgentRunner,
    task_id: str,
    step: TaskStep | None,
    input: StepInput,
    *,
    key: str,
) -> list[ChatMessage] | None:
    """Draw what the model gets if `step` runs now; None (and why, in a box) if it cannot run.

    An input the worker refuses (a typed plan naming an unknown agent, say) makes the preview
    raise; it is said here, so the page is drawn to the end and records the task's version,
    and the next Run step acts on this task instead of refusing it as changed in another tab.
    """
    try:
        messages = preview_messages(runner, task_id, step, input)
    except AgentCoreError as exc:
        show_message("warning", exc, headline="This input cannot run as it is:")
        return None
    render_memory(messages, key=key)
    return messages


def _short_name(step: TaskStep) -> str:
    """A step in a few words: the tool it calls (a plain name only: help text is markdown)."""
    if step.kind is StepKind.TOOL and isinstance(step.input, dict):
        tool = step.input.get("tool")
        if isinstance(tool, str) and _PLAIN_NAME.fullmatch(tool):
            return f"the {tool} call"
    return f"the {step.kind.value} step"


def waiting_reason(task_state: TaskState, step: TaskStep) -> str:
    """Why `step` cannot run yet ("" when it is ready), naming what it waits for."""
    if task_state.is_ready(step):
        return ""
    pending = [
        task_state.steps[dep]
        for dep in step.depends_on
        if dep in task_state.steps and task_state.steps[dep].status not in DONE_STATUSES
    ]
    names = ", ".join(_short_name(dep) for dep in pending) or "earlier steps"
    return f"This step waits for {names} to finish: run those first (Run step, or Run ready steps)."


class _BadInput(ValueError):
    """The edited input cannot be used (invalid JSON...); nothing ran."""


def _as_text(value: StepInput) -> str:
    if isinstance(value, dict):
        return json.dumps(value, indent=2, ensure_ascii=False)
    return value or ""


def _parse_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise _BadInput(f"{what} are not valid JSON: {exc}.") from exc
    if not isinstance(value, dict):
        raise _BadInput(f'{what} must be a JSON object, like {{"a": 1}}.')
    return value


def _edited_input(step: TaskStep, text: str) -> tuple[bool, StepInput]:
    """Whether `text` changes the step's input, and the input it stands for."""
    if text == _as_text(step.input):
        return False, step.input
    if isinstance(step.input, dict):
        return True, _parse_object(text, "The input's fields")
    return True, text or None


def _tool_call(step: TaskStep, args_text: str) -> dict[str, Any]:
    args = _parse_object(args_text, "The arguments")
    call = dict(step.input) if isinstance(step.input, dict) else {}
    return {**call, "args": args}


def _run(runner: ParallelAgentRunner, step: TaskStep, new_input: StepInput, changed: bool) -> None:
    """Start the step in the runtime; the page run that follows shows it streaming."""
    if changed and new_input is None:
        # run_step(input=None) means "keep the input": clearing it is an edit of its own.
        runner.edit_step(step.task_id, step.step_id, None)
    runner.start_step(step.task_id, step.step_id, new_input if changed else None)


class _Ctx:
    """What one upcoming step's controls need to know."""

    def __init__(
        self,
        runner: ParallelAgentRunner,
        task_state: TaskState,
        step: TaskStep,
        human: HumanLLM | None,
    ) -> None:
        self.runner = runner
        self.step = step
        self.key = f"{step.step_id}-{step.attempts}-{int(step.edited)}"
        self.waits = waiting_reason(task_state, step)
        # Skipping the only queued step would leave nothing to run: Skip asks first.
        self.only = task_state.queue == [step.step_id]
        # In "you are the model" mode, a step that calls the model runs on a typed reply.
        self.human = human if step.kind in _MODEL_KINDS else None
        # A tool call awaiting approval, or held at a breakpoint: approve, edit or reject it.
        self.pending = step.needs_approval or bool(step.step_state.get("held"))

    def cannot(self, action: StepAction) -> str:
        """Why this step's framework cannot `action` ("" when it can): the greyed control's help."""
        reason = self.step.cannot.get(action)
        return f"Not for this step: {reason}" if reason else ""


# --- actions: button callbacks, so a click is answered even when its button is gone from
# --- the page (the step ran in another tab), and always before the page is drawn.


def _typed(key: str, default: str) -> str:
    value = st.session_state.get(key)
    return value if isinstance(value, str) else default


def _flag(ctx: _Ctx, where: str, text: str) -> None:
    """Keep a refusal to show next to the step (`where`: input, reply or note)."""
    st.session_state[_PROBLEM] = (ctx.key, where, text)


def _act(ctx: _Ctx, action: Any, success: str | None = None) -> None:
    st.session_state.pop(_CONFIRM_SKIP, None)
    if task_version.is_stale(ctx.runner, ctx.step.task_id):
        _keep_typed(ctx)  # The step may be gone from the redrawn page, and its boxes with it.
    task_version.act(ctx.runner, ctx.step.task_id, action, success=success)


def _keep_typed(ctx: _Ctx) -> None:
    """Keep what the person typed into the step's boxes, where it differs from the step's."""
    call = ctx.step.input if isinstance(ctx.step.input, dict) else {}
    shown = {
        f"args-{ctx.key}": json.dumps(call.get("args", {}), indent=2, ensure_ascii=False),
        f"input-{ctx.key}": _as_text(ctx.step.input),
        f"reply-{ctx.key}": "",
        f"reason-{ctx.key}": "",
    }
    typed = [
        text
        for key, default in shown.items()
        if (text := _typed(key, default)).strip() and text != default
    ]
    if typed:
        st.session_state[_KEPT] = (ctx.step.task_id, typed)


def render_kept_text(task_id: str) -> None:
    """What was typed into a step when its click was refused as stale, to copy back."""
    kept: Any = st.session_state.get(_KEPT)
    if not kept or kept[0] != task_id:
        return
    with st.container(border=True):
        st.caption(
            "What you typed before the page caught up (nothing ran with it). Copy it into "
            "the step you mean, then run that step:"
        )
        for text in kept[1]:
            st.code(text, language=None, wrap_lines=True)  # A person's text, shown as typed.
        if st.button("Dismiss", key="kept-text-dismiss"):
            del st.session_state[_KEPT]
            st.rerun()


def _new_input(ctx: _Ctx) -> tuple[bool, StepInput]:
    """Whether the typed input changes the step's, and the input to run with."""
    step = ctx.step
    if step.kind is StepKind.TOOL:
        call = step.input if isinstance(step.input, dict) else {}
        default = json.dumps(call.get("args", {}), indent=2, ensure_ascii=False)
        new_input = _tool_call(step, _typed(f"args-{ctx.key}", default))
        return new_input != step.input, new_input
    return _edited_input(step, _typed(f"input-{ctx.key}", _as_text(step.input)))


def typed_input(runner: ParallelAgentRunner, task_state: TaskState, step: TaskStep) -> StepInput:
    """The input `step` runs with if run now: what is typed into its box, else its own.

    "What the model sees next" previews with it, so an edit shows there before Save edit; an
    input that cannot be used (invalid JSON arguments) previews the step's saved input.
    """
    try:
        return _new_input(_Ctx(runner, task_state, step, None))[1]
    except _BadInput:
        return step.input


def save_typed_edits(runner: ParallelAgentRunner, task_id: str) -> None:
    """Save what was typed into the upcoming steps' boxes as edits, before they run.

    Run ready steps runs the queued steps with their saved inputs; without this, an edit typed
    into a step's box and not saved would be dropped silently.

    Raises:
        UserError: A typed input cannot be used (invalid JSON); nothing is saved or run.
    """
    task_state = runner.get_task_state(task_id)
    edits = []
    for step_id in task_state.queue:
        ctx = _Ctx(runner, task_state, task_state.steps[step_id], None)
        try:
            changed, new_input = _new_input(ctx)
        except _BadInput as exc:
            _flag(ctx, "input", str(exc))
            where = f"the upcoming {ctx.step.kind.value} step {ctx.step.name or ''}".strip()
            raise UserError(f"{exc} ({where}): fix it first; nothing ran.") from exc
        if changed:
            edits.append((step_id, new_input))
    for step_id, new_input in edits:
        runner.edit_step(task_id, step_id, new_input)


def _on_run(ctx: _Ctx) -> None:
    try:
        changed, new_input = _new_input(ctx)
    except _BadInput as exc:
        _flag(ctx, "input", str(exc))
        return
    if _asks(ctx.step) and (new_input is None or not str(new_input).strip()):
        # An empty answer would resume the agent with nothing and fail an attempt.
        _flag(ctx, "input", "Type your answer to the agent's question first. Nothing ran.")
        return
    reply = _typed(f"reply-{ctx.key}", "")
    human = ctx.human
    if human is not None and not reply.strip():
        _flag(ctx, "reply", "Type the model's reply first: here the model is you. Nothing ran.")
        return

    def run() -> None:
        if human is not None:
            human.clear()  # A reply typed for an earlier failed attempt must not answer this.
            human.supply(reply)
        _run(ctx.runner, ctx.step, new_input, changed)

    _act(ctx, run)


def _on_save(ctx: _Ctx) -> None:
    try:
        changed, new_input = _new_input(ctx)
    except _BadInput as exc:
        _flag(ctx, "input", str(exc))
        return
    if not changed:
        _flag(ctx, "note", "Nothing to save: the input is unchanged.")
        return
    step = ctx.step
    _act(ctx, lambda: ctx.runner.edit_step(step.task_id, step.step_id, new_input), "Saved.")


def _on_reject(ctx: _Ctx) -> None:
    step = ctx.step
    reason = _typed(f"reason-{ctx.key}", "")
    _act(ctx, lambda: ctx.runner.reject_step(step.task_id, step.step_id, message=reason))


def _on_skip(ctx: _Ctx, *, confirmed: bool = False) -> None:
    if ctx.only and not confirmed:  # Ask first: nothing would be left to run.
        if task_version.act(ctx.runner, ctx.step.task_id, lambda: None):
            st.session_state[_CONFIRM_SKIP] = ctx.step.step_id
        return
    step = ctx.step
    skip = lambda: ctx.runner.skip_step(step.task_id, step.step_id)  # noqa: E731
    _act(ctx, skip, success="Skipped the step. Undo brings it back.")


def _on_keep(_ctx: _Ctx) -> None:
    st.session_state.pop(_CONFIRM_SKIP, None)


# --- drawing


def _show_problem(ctx: _Ctx, where: str) -> None:
    """The refusal the last click left for this step, if it belongs `where`.

    Drawn in a slot that is always there, so the step's layout does not shift between runs.
    """
    slot = st.empty()
    problem: Any = st.session_state.get(_PROBLEM)
    if not problem or problem[0] != ctx.key or problem[1] != where:
        return
    del st.session_state[_PROBLEM]
    text = problem[2]
    with slot.container():
        if where == "input":
            show_message("error", text, headline="Fix the input first; nothing ran.")
        elif where == "reply":
            st.warning(text)  # The app's own sentence.
        else:
            st.caption(text)


def _skip_button(ctx: _Ctx, column: Any) -> None:
    """Skip, asking once more when the step is the only one left to run."""
    why_not = ctx.cannot(StepAction.SKIP)
    column.button(
        "Skip",
        key=f"skip-{ctx.key}",
        disabled=bool(why_not),
        help=why_not or "Leaves this step out: it never runs. Undo brings it back.",
        on_click=_on_skip,
        args=(ctx,),
    )


def _confirm_skip(ctx: _Ctx) -> None:
    if st.session_state.get(_CONFIRM_SKIP) != ctx.step.step_id:
        return
    with st.container(border=True):
        st.warning(
            "Skip the only upcoming step? Nothing would be left to run; Undo brings it back."
        )
        yes, no = st.columns(2)
        yes.button(
            "Skip anyway",
            key=f"confirm-skip-{ctx.key}",
            type="primary",
            on_click=_on_skip,
            args=(ctx,),
            kwargs={"confirmed": True},
        )
        no.button("Keep it", key=f"keep-{ctx.key}", on_click=_on_keep, args=(ctx,))


def _run_button(ctx: _Ctx, column: Any, label: str, help_text: str) -> None:
    column.button(
        label,
        key=f"run-{ctx.key}",
        type="primary",
        disabled=bool(ctx.waits),
        help=ctx.waits or help_text,
        on_click=_on_run,
        args=(ctx,),
    )


def _render_tool_call(ctx: _Ctx) -> None:
    call = ctx.step.input if isinstance(ctx.step.input, dict) else {}
    st.caption("Tool")
    st.code(str(call.get("tool", "?")), language=None)
    no_edit = ctx.cannot(StepAction.EDIT)
    st.caption("Arguments (JSON)" if no_edit else "Arguments (JSON, editable)")
    st.text_area(
        "Arguments",
        json.dumps(call.get("args", {}), indent=2, ensure_ascii=False),
        key=f"args-{ctx.key}",
        label_visibility="collapsed",
        disabled=bool(no_edit),
        help=no_edit or None,
    )
    no_reject = ctx.cannot(StepAction.REJECT)
    if ctx.pending and not no_reject:
        st.text_input("Reason to reject (the model reads it)", key=f"reason-{ctx.key}")
    run_col, reject_col, skip_col = st.columns(3)
    label = "Approve and run step" if ctx.pending else "Run step"
    _run_button(ctx, run_col, label, "Runs this tool call with the arguments above.")
    if ctx.pending:
        reject_col.button(
            "Reject",
            key=f"reject-{ctx.key}",
            disabled=bool(no_reject),
            help=no_reject or "The call does not run; the model reads your reason.",
            on_click=_on_reject,
            args=(ctx,),
        )
    _skip_button(ctx, skip_col)
    _confirm_skip(ctx)
    _show_problem(ctx, "input")


def _render_question(step: TaskStep) -> None:
    """What the agent asks the person, for a human step it queued (a LangGraph interrupt)."""
    if step.kind is not StepKind.HUMAN or INTERRUPT_KEY not in step.step_state:
        return
    st.caption("The agent asks you (type your answer below, then Run step)")
    st.code(_text_of(step.step_state[INTERRUPT_KEY]), language=None, wrap_lines=True)


def _asks(step: TaskStep) -> bool:
    """Whether the agent queued `step` to ask a person a question (a LangGraph interrupt)."""
    return step.kind is StepKind.HUMAN and INTERRUPT_KEY in step.step_state


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def _render_text_step(ctx: _Ctx) -> None:
    _render_question(ctx.step)
    no_edit = ctx.cannot(StepAction.EDIT)
    asks = ctx.step.kind is StepKind.HUMAN and INTERRUPT_KEY in ctx.step.step_state
    text = st.text_area(
        "Input",
        _as_text(ctx.step.input),
        key=f"input-{ctx.key}",
        placeholder="(your answer)"
        if asks
        else "(no input: the agent continues; type here to steer it)",
        label_visibility="collapsed",
        disabled=bool(no_edit),
        help=no_edit or None,
    )
    render_thumbnails(step_images(ctx.step))  # They go with the input, whatever it becomes.
    if ctx.human is not None:
        try:
            _, new_input = _edited_input(ctx.step, text)
        except _BadInput:
            new_input = ctx.step.input
        with st.expander("The exact prompt the model gets", expanded=True):
            render_preview(
                ctx.runner, ctx.step.task_id, ctx.step, new_input, key=f"editor-{ctx.key}"
            )
        st.text_area("You are the model: type its reply", key=f"reply-{ctx.key}")
        _show_problem(ctx, "reply")  # Right under the box it is about.
    run_col, save_col, skip_col = st.columns(3)
    _run_button(ctx, run_col, "Run step", "Runs this step with the input above.")
    # Not disabled while unchanged: a browser sends the typed text with the click, and a
    # button enabled only once the text is committed would swallow that first click.
    save_col.button(
        "Save edit",
        key=f"save-{ctx.key}",
        disabled=bool(no_edit),
        help=no_edit or "Keeps the input above without running the step.",
        on_click=_on_save,
        args=(ctx,),
    )
    _skip_button(ctx, skip_col)
    _confirm_skip(ctx)
    _show_problem(ctx, "input")
    _show_problem(ctx, "note")
    if ctx.step.kind is StepKind.LLM and ctx.human is None:
        render_sample_control(ctx.runner, ctx.step)


def _server_key(task_id: str) -> ServerKey | None:
    """The server the task's model runs on, and whether this session has its key.

    As `runtime` sends keys: a task with a server address gets only the key typed
    for that server.
    """
    spec = runtime.spec_of(task_id)
    if not spec.base_url:  # A provider's own API: its key is the provider's (Settings says).
        return None
    provider = state.server_provider(spec.base_url)
    return ServerKey(provider.removeprefix("server:"), state.api_key(provider) is not None)


def _running_elsewhere(runner: ParallelAgentRunner, step: TaskStep) -> bool:
    """The step runs in another process (`stepwise serve`, a user's attached program)."""
    return step.status is StepStatus.RUNNING and not runner.is_interrupted(
        step.task_id, step.step_id
    )


def _render_stop_elsewhere(step: TaskStep) -> None:
    """Stop for a step another process runs: the app's host asks that process to stop it."""
    st.caption(
        "Running in another process (a server, or your own program attached to this database)."
    )
    if st.button(
        "Stop",
        key=f"stop-elsewhere-{step.step_id}",
        help="Asks the process running this step to stop it. It is marked failed (stopped by "
        "you); edit it and run it again, or undo.",
    ):
        try:
            runtime.shared_host().cancel_step(step.task_id, step.step_id, wait=10)
            state.push_notice("info", "Stopped the step. Edit its input and run it again.")
        except AgentCoreError as error:
            show_message("error", error)
        st.rerun()


def render_upcoming_step(
    runner: ParallelAgentRunner, task_state: TaskState, step: TaskStep, *, human: HumanLLM | None
) -> None:
    """Draw one upcoming step with its controls; a failed step shows its error to fix."""
    ctx = _Ctx(runner, task_state, step, human)
    with st.container(border=True):
        st.markdown(f"**{_title(runner, step, ready=not ctx.waits)}**")
        if step.error:
            server = _server_key(step.task_id)
            st.error(plain(failed_step_text(step, task_state, server=server)))
            if not replaces_message(step, server):
                st.code(step.error, language=None, wrap_lines=True)
            render_traceback(step)
            if step.error_params.get("traceback"):  # Raised in the user's code: fix, reload.
                render_reload_button(key=f"reload-{ctx.key}")
        if _running_elsewhere(runner, step):
            _render_stop_elsewhere(step)
        if step.kind is StepKind.TOOL:
            _render_tool_call(ctx)
        else:
            _render_text_step(ctx)
