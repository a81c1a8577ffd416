"""The Agent Protocol v1 over `AgentRunner`: tasks and steps, one step per call.

A Stepwise task is an Agent Protocol task and its steps are the protocol's steps, one to
one. Listings show the live branch: completed steps in order, then upcoming ones; an undone
or skipped step is still readable by id. Status: upcoming and failed steps (which can run
again) are `created`, a running one `running`, the rest `completed`; Stepwise's own status,
kind, number, branch, proposed input, usage, tool calls and error are in `additional_output`.
A step whose run died with its process (killed mid-step) is `created` too, and its Stepwise
status `interrupted`, as the app shows it: it runs again, and nothing runs it now.
An artifact is a file in the task's workspace; its id is its path, URL-safe base64.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import mimetypes
import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, File, Form, Query, UploadFile
from fastapi.responses import Response

from agent_core import confined
from agent_core.dag import describe_step
from agent_core.errors import TaskNotActiveError, UserError
from agent_core.runtime.claims import claim_is_stale
from agent_core.task_files import TaskFile, list_files, workspace_folder
from agent_core.types import StepStatus, TaskState, TaskStep
from stepwise.http.errors import ApiError
from stepwise.http.security import RouteLimit
from stepwise.server._ap_models import (
    Artifact,
    ArtifactList,
    Pagination,
    Step,
    StepList,
    StepRequestBody,
    Task,
    TaskList,
    TaskRequestBody,
)
from stepwise.server.runtime import Runtime

__all__ = ["MAX_ARTIFACT_BYTES", "UPLOAD_LIMIT", "router", "step_of", "task_of"]

router = APIRouter(prefix="/ap/v1/agent", tags=["agent protocol"])

MAX_ARTIFACT_BYTES = 50_000_000
"""The largest file an upload takes, and (with the form's own bytes) the upload's body limit."""
_FORM_BYTES = 64 * 1024  # The multipart envelope around the file: boundaries, headers, path.
_UPLOAD_HINT = f"upload a smaller file: artifacts are at most {MAX_ARTIFACT_BYTES:,} bytes"
UPLOAD_LIMIT = RouteLimit(
    path=re.compile(r"/ap/v1/agent/tasks/[^/]+/artifacts"),
    max_bytes=MAX_ARTIFACT_BYTES + _FORM_BYTES,
    hint=_UPLOAD_HINT,
)
"""The upload route's body limit, for the server's gate (every other route reads 1 MB)."""
_STATUS: dict[StepStatus, Literal["created", "running", "completed"]] = {
    StepStatus.UPCOMING: "created",
    StepStatus.FAILED: "created",
    StepStatus.RUNNING: "running",
}
Page = Annotated[int, Query(ge=1, description="1-based page number.")]
PageSize = Annotated[int, Query(ge=1, le=100, description="Items per page (at most 100).")]


# ----------------------------------------------------------------------------- tasks


@router.post("/tasks", response_model=Task, summary="Create a task")
def create_task(body: TaskRequestBody, runtime: Runtime) -> Task:
    """A new task for the agent named in `additional_input.agent`, else the server's default.

    `additional_input.continue_from` names a finalized task whose conversation it goes on.
    """
    extra = body.additional_input or {}
    agent = extra.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise ApiError(422, "invalid_request", "additional_input.agent must be an agent's name")
    if not body.input or not body.input.strip():
        raise ApiError(422, "invalid_request", "a task needs an input: say what the agent is to do")
    continue_from = extra.get("continue_from")
    if continue_from is not None and not isinstance(continue_from, str):
        raise ApiError(422, "invalid_request", "additional_input.continue_from must be a task id")
    runner = runtime.runner_for(runtime.spec_named(agent))
    task = runner.create_task(body.input, continue_from=continue_from)
    return Task(task_id=task.task_id, input=task.input, additional_input=body.additional_input)


@router.get("/tasks", response_model=TaskList, summary="List tasks, newest first")
def list_tasks(runtime: Runtime, current_page: Page = 1, page_size: PageSize = 10) -> TaskList:
    """A page of the store's tasks (the app's too), ids and inputs.

    `GET /tasks/{id}` gives a task's agent and artifacts. Listed from the store's summaries:
    loading every task of every page grew a fresh server from 78 MB to 313 MB.
    """
    summaries = sorted(runtime.store.list_tasks(), key=lambda t: t.created_at, reverse=True)
    page, pagination = _page(summaries, current_page, page_size)
    tasks = [Task(task_id=s.task_id, input=s.input) for s in page if not s.damaged]
    return TaskList(tasks=tasks, pagination=pagination)


@router.get("/tasks/{task_id}", response_model=Task, summary="Get a task")
def get_task(task_id: str, runtime: Runtime) -> Task:
    """The task and its artifacts."""
    return task_of(runtime.reader().get_task_state(task_id))


# ----------------------------------------------------------------------------- steps


@router.post("/tasks/{task_id}/steps", response_model=Step, summary="Run the next step")
async def run_step(task_id: str, runtime: Runtime, body: StepRequestBody | None = None) -> Step:
    """Run the task's next ready step; a non-empty `input` replaces its input (steering)."""
    runner = runtime.runner_for_task(task_id)
    steering = body.input if body is not None and body.input else None
    # Awaited on the runtime loop (no thread of the pool held), as a run that records its
    # events, so /events watchers see it live.
    run = await runner.astart_step(task_id, None, steering)
    async for _ in run.awatch():
        pass
    output = run.result(timeout=0)
    state = runner.get_task_state(task_id)
    step = state.steps.get(output.task_step.step_id)
    if step is None or step.step_id not in state.completed:
        # Another client's undo took it back (or dropped it) after it ran: a race, not a bug.
        raise ApiError(
            409,
            "task_changed",
            f"task {task_id} changed while its step ran (another client undid it); reload it",
            hint=f"GET /ap/v1/agent/tasks/{task_id}/steps shows the task as it is",
        )
    return step_of(state, step)


@router.get("/tasks/{task_id}/steps", response_model=StepList, summary="List a task's steps")
def list_steps(
    task_id: str, runtime: Runtime, current_page: Page = 1, page_size: PageSize = 10
) -> StepList:
    """Completed steps in order, then upcoming ones."""
    state = runtime.reader().get_task_state(task_id)
    live = [state.steps[s] for s in [*state.completed, *state.queue]]
    page, pagination = _page(live, current_page, page_size)
    return StepList(steps=[step_of(state, step) for step in page], pagination=pagination)


@router.get("/tasks/{task_id}/steps/{step_id}", response_model=Step, summary="Get a step")
def get_step(task_id: str, step_id: str, runtime: Runtime) -> Step:
    """Any step of the task, undone and skipped ones too."""
    state = runtime.reader().get_task_state(task_id)
    step = state.steps.get(step_id)
    if step is None:
        raise ApiError(404, "step_not_found", f"task {task_id} has no step {step_id}")
    return step_of(state, step)


# ------------------------------------------------------------------------- artifacts


@router.get(
    "/tasks/{task_id}/artifacts", response_model=ArtifactList, summary="List the task's files"
)
def list_artifacts(
    task_id: str, runtime: Runtime, current_page: Page = 1, page_size: PageSize = 10
) -> ArtifactList:
    """The files in the task's workspace."""
    artifacts = _artifacts(runtime.reader().get_task_state(task_id))
    page, pagination = _page(artifacts, current_page, page_size)
    return ArtifactList(artifacts=page, pagination=pagination)


@router.post(
    "/tasks/{task_id}/artifacts",
    response_model=Artifact,
    summary="Upload a file to the task",
    description=f"A file of at most {MAX_ARTIFACT_BYTES:,} bytes into the task's workspace; "
    "an imported task is read only (409 `task_not_active`).",
)
def upload_artifact(
    task_id: str,
    runtime: Runtime,
    file: Annotated[UploadFile, File(description="The file's content.")],
    relative_path: Annotated[str | None, Form(description="Where in the workspace.")] = None,
) -> Artifact:
    """Write a file into the task's workspace (confined to it, as the agent's file tools)."""
    state = runtime.reader().get_task_state(task_id)
    _check_writable(state)
    folder = _folder(state)
    path = _safe_path(relative_path or file.filename or "")
    data = file.file.read(MAX_ARTIFACT_BYTES + 1)
    if len(data) > MAX_ARTIFACT_BYTES:
        raise ApiError(
            413,
            "body_too_large",
            f"the file is over {MAX_ARTIFACT_BYTES:,} bytes, the most an artifact may be",
            hint=_UPLOAD_HINT,
        )
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with confined.update_file(folder, path, keep_limit=None) as update:
            update.replace(data)
    except OSError as exc:
        raise ApiError(
            422, "invalid_path", f"cannot write {path!r}: {exc.strerror or exc}"
        ) from None
    return Artifact(
        artifact_id=_artifact_id(path),
        agent_created=False,
        file_name=PurePosixPath(path).name,
        relative_path=path,
    )


@router.get(
    "/tasks/{task_id}/artifacts/{artifact_id}",
    summary="Download a file of the task",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {}}}},
)
def download_artifact(task_id: str, artifact_id: str, runtime: Runtime) -> Response:
    """The file's bytes."""
    state = runtime.reader().get_task_state(task_id)
    path = _path_of(artifact_id)
    try:
        data = confined.read_file(_folder(state), path, limit=MAX_ARTIFACT_BYTES)
    except FileNotFoundError:
        raise ApiError(404, "artifact_not_found", f"task {task_id} has no file {path!r}") from None
    except OSError as exc:
        raise ApiError(
            422, "invalid_path", f"cannot read {path!r}: {exc.strerror or exc}"
        ) from None
    kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
    name = PurePosixPath(path).name
    headers = {"Content-Disposition": content_disposition(name)}
    return Response(data, media_type=kind, headers=headers)


# --------------------------------------------------------------------------- mapping


def task_of(state: TaskState) -> Task:
    """The protocol's view of a Stepwise task."""
    task = state.task
    agent = (task.spec or {}).get("agent") if task.spec else None
    return Task(
        task_id=task.task_id,
        input=task.input if isinstance(task.input, str) else json.dumps(task.input),
        additional_input={"agent": agent} if agent else None,
        artifacts=_artifacts(state),
    )


def step_of(state: TaskState, step: TaskStep) -> Step:
    """The protocol's view of a Stepwise step."""
    output = state.outputs.get(step.step_id)
    done = step.status is StepStatus.COMPLETED and output is not None
    interrupted = _interrupted(step)
    extra: dict[str, Any] = {
        "stepwise_status": "interrupted" if interrupted else step.status.value,
        "kind": step.kind.value,
        "number": step.number,
        "branch_id": step.branch_id,
        "edited": step.edited,
    }
    if step.edited:
        extra["proposed_input"] = step.proposed_input
    if step.error:
        extra["error"] = step.error
    if step.error_code:  # What failed it, as a stable code a client can match.
        extra["error_code"], extra["error_params"] = step.error_code, step.error_params
    if output is not None:
        extra["usage"] = output.usage.model_dump(mode="json")
        extra["latency_ms"] = output.latency_ms
        extra["tool_calls"] = [call.model_dump(mode="json") for call in output.tool_calls]
    return Step(
        task_id=state.task_id,
        step_id=step.step_id,
        name=describe_step(step, output if done else None),
        status=_ap_status(step, interrupted=interrupted),
        input=_text(step.input),
        output=_text(output.output) if output is not None else None,
        additional_output=extra,
        is_last=bool(done and output is not None and output.is_last),
    )


def _ap_status(step: TaskStep, *, interrupted: bool) -> Literal["created", "running", "completed"]:
    if interrupted:  # It runs again, as an upcoming or failed step does.
        return "created"
    return _STATUS.get(step.status, "completed")


def _interrupted(step: TaskStep) -> bool:
    """Stored as running, but its run is gone (its process died): how the app tells."""
    return step.status is StepStatus.RUNNING and claim_is_stale(step.claimed_by, step.step_id)


def _text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _artifacts(state: TaskState) -> list[Artifact]:
    return [_artifact(f) for f in list_files(state)]


def _artifact(found: TaskFile) -> Artifact:
    return Artifact(
        artifact_id=_artifact_id(found.path),
        agent_created=found.step_number is not None,
        file_name=PurePosixPath(found.path).name,
        relative_path=found.path,
    )


def _artifact_id(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode()).decode().rstrip("=")


def _path_of(artifact_id: str) -> str:
    try:
        path = base64.urlsafe_b64decode(artifact_id + "=" * (-len(artifact_id) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ApiError(
            404, "artifact_not_found", f"no artifact has the id {artifact_id!r}"
        ) from None
    return _safe_path(path)


def _path_error(verb: str, path: str, exc: OSError) -> ApiError:
    return ApiError(422, "invalid_path", f"cannot {verb} {path!r}: {exc.strerror or exc}")


def _safe_path(path: str) -> str:
    """A relative path inside the workspace, or a 422 that says why not."""
    pure = PurePosixPath(path.replace("\\", "/"))
    parts = [p for p in pure.parts if p not in ("", ".")]
    if not path or "\x00" in path or pure.is_absolute() or ".." in parts or not parts:
        raise ApiError(
            422,
            "invalid_path",
            f"refused path {path!r}: give a relative path inside the task's workspace, without"
            " '..', e.g. data/input.csv",
        )
    return "/".join(parts)


def _check_writable(state: TaskState) -> None:
    """Refuse an upload into an imported task: a read-only copy of someone's trace."""
    if state.task.imported:
        raise TaskNotActiveError(
            f"task {state.task_id} is an imported copy, read only, so it takes no uploads",
            hint="its files stay readable; POST /ap/v1/agent/tasks starts a task to upload to",
            task_id=state.task_id,
            params={"status": "imported", "action": "take uploads"},
        )


def _folder(state: TaskState) -> Path:
    folder = workspace_folder(state.task)
    if folder is None:
        raise UserError(f"task {state.task_id} has no workspace folder (it records no agent)")
    return folder


def _page(items: list, current_page: int, page_size: int) -> tuple[list, Pagination]:
    start = (current_page - 1) * page_size
    pagination = Pagination(
        total_items=len(items),
        total_pages=max(1, math.ceil(len(items) / page_size)),
        current_page=current_page,
        page_size=page_size,
    )
    return items[start : start + page_size], pagination


def content_disposition(name: str) -> str:
    """An attachment header for any file name (RFC 6266).

    An ASCII `filename` for old clients, and the name itself as UTF-8 in `filename*` (RFC
    5987) when it is not ASCII. A header is Latin-1 on the wire: a name such as `日本.txt`
    written as is failed the response (a 500).
    """
    plain = "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name)
    header = f'attachment; filename="{plain}"'
    if plain != name:
        header += f"; filename*=UTF-8''{quote(name, safe='')}"
    return header
