"""OTLP JSON traces: what an OpenTelemetry Collector's file exporter writes, or an OTLP/HTTP body.

A file is one `{"resourceSpans": [...]}` object, or JSON lines of them (the file exporter's
output), read one line at a time. Each span's attributes are decoded from OTLP's typed values;
spans are grouped by trace, and each trace is read with the convention its spans follow: the
OpenTelemetry GenAI semantic conventions (`gen_ai.operation.name`) or OpenInference
(`openinference.span.kind`), chosen per span, so a trace mixing both reads too.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from typing import Any

from agent_core.recordings.importers import _genai, _openinference
from agent_core.recordings.importers._arrange import SpanNode, arrange
from agent_core.recordings.importers._messages import Reading
from agent_core.recordings.importers._reading import Source, parse_json
from agent_core.recordings.importers._span import Span
from agent_core.recordings.importers.recorded import RecordedRun
from agent_core.types import ImportSource

__all__ = ["MAX_SPANS", "Span", "read_otlp", "spans_of"]

MAX_SPANS = 50_000
"""Spans one file may hold; past it the file is refused (export fewer traces per file)."""


def read_otlp(source: Source, reading: Reading, *, convention: str = "auto") -> list[RecordedRun]:
    """Every trace in the file with a model call, as a recorded run.

    Args:
        source: The file.
        reading: Where gaps are noted.
        convention: `auto` (per span), or `openinference` / `genai` to read only that one.
    """
    traces: dict[str, list[Span]] = {}
    for span in spans_of(source, _documents(source)):
        traces.setdefault(span.trace_id, []).append(span)
    runs = []
    for trace_id, spans in traces.items():
        run = _run_of(trace_id, spans, reading, convention, source)
        if run is not None:
            runs.append(run)
    return runs


def _documents(source: Source) -> Iterator[Any]:
    """The file's OTLP documents: one JSON object, or one per line."""
    lines = source.lines()
    first = next(lines, None)
    second = next(lines, None)
    if first is None:
        return
    if second is None:  # One document, possibly spread over lines: read it whole.
        yield parse_json(source, source.read_all())
        return
    for number, line in (first, second, *lines):
        yield parse_json(source, line, line=number)


def spans_of(source: Source, documents: Iterable[Any]) -> Iterator[Span]:
    """Every span of OTLP JSON documents, in file order, at most `MAX_SPANS`.

    Raises:
        TraceImportError: A document or span lacks what OTLP requires, or too many spans.
    """
    count = 0
    for document in documents:
        for resource in _list(source, document, "resourceSpans", where="the document"):
            scopes = resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans")
            for scope in scopes or []:
                scope_name = str((scope.get("scope") or {}).get("name") or "")
                for raw in scope.get("spans") or []:
                    count += 1
                    if count > MAX_SPANS:
                        raise source.error(
                            f"{source.name} holds more than {MAX_SPANS:,} spans",
                            code="trace_too_large",
                            hint="export fewer traces into one file (filter by trace id)",
                            params={"what": "spans", "size": count, "limit": MAX_SPANS},
                        )
                    yield _span(source, raw, scope_name, count)


def _list(source: Source, document: Any, key: str, *, where: str) -> list[Any]:
    found = document.get(key) if isinstance(document, dict) else None
    if not isinstance(found, list):
        raise source.error(
            f"{where} in {source.name} has no {key!r} list, so it is not OTLP JSON",
            code="trace_malformed",
            params={"field": key, "detail": "missing"},
        )
    return found


def _span(source: Source, raw: Any, scope: str, order: int) -> Span:
    if not isinstance(raw, dict) or not raw.get("traceId") or not raw.get("spanId"):
        raise source.error(
            f"span #{order} in {source.name} has no traceId or spanId",
            code="trace_malformed",
            span=f"#{order}",
            params={"field": "spanId", "detail": "missing"},
        )
    status = raw.get("status") or {}
    failed = status.get("code") in (2, "STATUS_CODE_ERROR")
    return Span(
        trace_id=_id(raw["traceId"]),
        span_id=_id(raw["spanId"]),
        parent_id=_id(raw.get("parentSpanId") or ""),
        name=str(raw.get("name") or ""),
        start_ns=_int(raw.get("startTimeUnixNano")),
        end_ns=_int(raw.get("endTimeUnixNano")),
        attributes=attributes(raw.get("attributes")),
        events=[
            (str(e.get("name") or ""), attributes(e.get("attributes")))
            for e in raw.get("events") or []
            if isinstance(e, dict)
        ],
        error=(str(status.get("message") or "error")) if failed else None,
        scope=scope,
        order=order,
    )


def _id(value: Any) -> str:
    """A trace or span id as hex (OTLP JSON's), also from protobuf JSON's base64."""
    text = str(value)
    if len(text) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    try:
        return base64.b64decode(text, validate=True).hex()
    except ValueError:
        return text


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def attributes(raw: Any) -> dict[str, Any]:
    """OTLP's `[{"key", "value": {"stringValue": ...}}]` as a plain dict."""
    found: dict[str, Any] = {}
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            found[item["key"]] = _value(item.get("value"))
    return found


def _value(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if "arrayValue" in value:
        return [_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values"))
    if "intValue" in value:
        return _int(value["intValue"])
    for key in ("stringValue", "doubleValue", "boolValue", "bytesValue"):
        if key in value:
            return value[key]
    return None


def _run_of(
    trace_id: str, spans: list[Span], reading: Reading, convention: str, source: Source
) -> RecordedRun | None:
    """The trace as a run, or None when it holds no model call."""
    nodes = [_node(span, reading, convention) for span in spans]
    if not any(node.call is not None and node.call.kind == "model" for node in nodes):
        return None
    ids = {span.span_id for span in spans}
    roots = [span for span in spans if span.parent_id not in ids]
    openinference = any("openinference.span.kind" in s.attributes for s in spans)
    question = _openinference.question(roots, reading) if openinference else ""
    framework = _framework(spans)
    return RecordedRun(
        question=question,
        answer=_genai.answer(roots) if not openinference else _openinference.answer(roots),
        events=arrange(nodes, reading),
        source=ImportSource(
            format="openinference" if openinference else "otlp",
            file=source.name,
            trace_id=trace_id,
            framework=framework,
        ),
    )


def _node(span: Span, reading: Reading, convention: str) -> SpanNode:
    call = None
    if convention in ("auto", "openinference") and "openinference.span.kind" in span.attributes:
        call = _openinference.call_of(span, reading)
        label = f"{span.name} ({span.attributes['openinference.span.kind']})"
    elif convention in ("auto", "genai"):
        call = _genai.call_of(span, reading)
        label = f"{span.name} ({span.attributes.get('gen_ai.operation.name', 'span')})"
    else:
        label = span.name
    return SpanNode(
        id=span.span_id,
        parent=span.parent_id,
        start=span.start_ns / 1e9,
        order=span.order,
        label=label,
        call=call,
    )


def _framework(spans: list[Span]) -> str:
    for span in spans:
        if span.scope:
            return span.scope
    return ""
