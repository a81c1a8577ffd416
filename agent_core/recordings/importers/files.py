"""`import_file`: every trace in a file as a read-only task; `detect`: which format a file is.

The format is told from the content, never from the file's name: OTLP JSON (`resourceSpans`,
one object or JSON lines), a Langfuse trace (`observations`), a LangSmith run tree
(`run_type`), or a Stepwise trace (`"format": "stepwise.trace"`, read by `agent_core.trace`).
All of a file's tasks are built before any is stored, so a file that fails stores nothing.
"""

from __future__ import annotations

import os
from typing import Any, Literal, get_args

from agent_core.recordings.importers._messages import Reading
from agent_core.recordings.importers._reading import Source, open_source, parse_json
from agent_core.recordings.importers.langfuse import is_langfuse, read_langfuse
from agent_core.recordings.importers.langsmith import is_langsmith, read_langsmith
from agent_core.recordings.importers.otlp import read_otlp
from agent_core.recordings.importers.recorded import TRACE_GAP, RecordedNote, RecordedRun
from agent_core.recordings.importers.to_task import task_state_of
from agent_core.runtime.fork import new_task_change
from agent_core.store.base import Store
from agent_core.trace import TRACE_FORMAT, import_trace

__all__ = ["IMPORT_FORMATS", "ImportFormat", "detect", "import_file", "read_runs"]

ImportFormat = Literal["auto", "otlp", "openinference", "langfuse", "langsmith", "stepwise"]
"""`import_file`'s formats: `auto` tells them apart by content; `otlp` reads either OTLP
convention, `openinference` only OpenInference's spans."""
IMPORT_FORMATS: tuple[str, ...] = get_args(ImportFormat)
_KNOWN = "OTLP JSON (OpenTelemetry GenAI or OpenInference), Langfuse, LangSmith, Stepwise"


def detect(source: str | os.PathLike[str] | bytes, *, name: str = "") -> str:
    """The format of a file to import (`otlp`, `langfuse`, `langsmith` or `stepwise`).

    Raises:
        TraceImportError: The file cannot be read, or is none of them (`trace_format_unknown`).
    """
    found = open_source(source, name=name)
    return _detect(found, _document(found))


def import_file(
    source: str | os.PathLike[str] | bytes,
    store: Store,
    *,
    format: ImportFormat = "auto",
    name: str = "",
) -> list[str]:
    """Store each trace in the file as a read-only, imported task; their ids, in file order.

    Args:
        source: A file's path, or its bytes (an upload).
        store: Where to put the tasks.
        format: The file's format; `auto` tells it from the content.
        name: The file's name for messages and the tasks' `imported_from` (default: the path).

    Raises:
        TraceImportError: The file is unreadable, too large or deep, of no known format, or
            holds no model call; nothing was stored.
        UserError: A Stepwise trace that `agent_core.trace.import_trace` refuses.
    """
    found = open_source(source, name=name)
    if format == "stepwise" or (format == "auto" and _is_stepwise(found)):
        return [import_trace(found.read_all(), store)]
    states = [task_state_of(run) for run in read_runs(found, format=format)]
    for state in states:
        store.commit(new_task_change(state))
    return [state.task_id for state in states]


def read_runs(source: Source, *, format: ImportFormat = "auto") -> list[RecordedRun]:
    """The file's traces that hold a model call, with what could not be read noted in each.

    Raises:
        TraceImportError: As `import_file`.
    """
    reading = Reading(source)
    document = _document(source)  # For JSON lines, the first line: enough to tell OTLP.
    kind = format if format != "auto" else _detect(source, document)
    if kind in ("otlp", "openinference"):
        convention = "openinference" if format == "openinference" else "auto"
        runs = read_otlp(source, reading, convention=convention)
    elif kind == "langfuse" and is_langfuse(document):
        runs = read_langfuse(document, source, reading)
    elif kind == "langsmith" and is_langsmith(document):
        runs = read_langsmith(document, source, reading)
    else:
        raise _unknown(source, document)
    if not runs:
        raise source.error(
            f"{source.name} holds no model call Stepwise can read ({_what_it_read(kind)}), so "
            "there is nothing to step through",
            code="trace_no_model_calls",
            hint="export the trace of a run that called a model, with message content captured",
        )
    _note_gaps(runs, reading)
    return runs


def _document(source: Source) -> Any:
    if _looks_like_lines(source):
        number, line = next(source.lines())
        return parse_json(source, line, line=number)
    return parse_json(source, source.read_all())


def _looks_like_lines(source: Source) -> bool:
    """Whether the file is JSON lines: a line that is a whole object, and more lines after it."""
    lines = source.lines()
    first, second = next(lines, None), next(lines, None)
    if first is None or second is None:
        return False
    try:
        parse_json(source, first[1], line=first[0])
    except Exception:  # Any failure: it is not a line of JSON lines; the whole-file read says why.
        return False
    return True


def _detect(source: Source, document: Any) -> str:
    if isinstance(document, dict) and "resourceSpans" in document:
        return "otlp"
    if isinstance(document, dict) and document.get("format") == TRACE_FORMAT:
        return "stepwise"
    if is_langfuse(document):
        return "langfuse"
    if is_langsmith(document):
        return "langsmith"
    raise _unknown(source, document)


def _is_stepwise(source: Source) -> bool:
    head = source.head()
    return head.startswith(b"{") and TRACE_FORMAT.encode() in head and b"resourceSpans" not in head


def _unknown(source: Source, document: Any = None) -> Exception:
    said = document.get("format") if isinstance(document, dict) else None
    claim = f" (its format field is {str(said)[:60]!r})" if said is not None else ""
    return source.error(
        f"{source.name} is none of the formats Stepwise imports{claim}: {_KNOWN}",
        code="trace_format_unknown",
        hint="export the run as OTLP JSON, a Langfuse trace or a LangSmith run (see the README's "
        "'Open a run recorded elsewhere'), or give --format",
        params={"supported": list(IMPORT_FORMATS[1:])},
    )


def _what_it_read(kind: str) -> str:
    return {
        "otlp": "no span has gen_ai.operation.name chat or openinference.span.kind LLM",
        "openinference": "no span has openinference.span.kind LLM",
        "langfuse": "no observation is a GENERATION",
        "langsmith": "no run has run_type llm",
    }.get(kind, kind)


def _note_gaps(runs: list[RecordedRun], reading: Reading) -> None:
    """What could not be read, as notes on each task's first step."""
    gaps = list(reading.gaps)
    if reading.source.surrogates:
        gaps.append(
            f"{reading.source.surrogates} lone surrogate(s) (\\ud800-\\udfff, half of a "
            "character) replaced with U+FFFD"
        )
    for run in runs:
        run.events[:0] = [RecordedNote(code=TRACE_GAP, message=gap) for gap in gaps]
