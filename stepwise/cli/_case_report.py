"""What `stepwise test` prints and writes: the table of cases, their diffs, a JUnit file."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from agent_core.recordings import Case, CaseFileError, CaseResult

__all__ = ["Run", "print_report", "write_junit"]

_DETAIL_WIDTH = 90


@dataclass
class Run:
    """One case file and what became of it: its replays, or why it could not be read."""

    path: Path
    case: Case | None = None
    load_error: CaseFileError | None = None
    results: list[CaseResult] = field(default_factory=list)
    note: str = ""
    """What `--update` did."""

    @property
    def name(self) -> str:
        """The case's name, or its file's when it could not be read."""
        return self.case.name if self.case is not None else self.path.name

    @property
    def pass_rate(self) -> float:
        """Passed replays over replays (0 when none ran)."""
        if not self.results:
            return 0.0
        return sum(r.passed for r in self.results) / len(self.results)

    @property
    def status(self) -> str:
        """PASS, FAIL or ERROR (could not be read or run)."""
        if self.load_error is not None or any(r.error is not None for r in self.results):
            return "ERROR"
        return "PASS" if self.results and all(r.passed for r in self.results) else "FAIL"

    @property
    def detail(self) -> str:
        """Why it failed, in one line."""
        if self.load_error is not None:
            return f"[{self.load_error.code}] {self.load_error}"
        failed = next((r for r in self.results if not r.passed), None)
        return "" if failed is None else failed.reason


def _cut(text: str) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= _DETAIL_WIDTH else line[: _DETAIL_WIDTH - 1] + "…"


def print_report(
    runs: list[Run], out: TextIO, *, live: bool = False, model: str | None = None
) -> None:
    """The table, then each failure's whole report (with its diff), then a count.

    `model`: the model a live run used instead of the agents' own, named above the rates.
    """
    if not runs:
        print("no cases found", file=out)
        return
    rows = [("CASE", "RESULT", "STEPS", "DIVERGENCE / FAILED EXPECTATION")]
    for run in runs:
        steps = str(run.results[-1].steps) if run.results else "-"
        result = run.status
        if live and len(run.results) > 1:
            result = f"{result} {sum(r.passed for r in run.results)}/{len(run.results)}"
        rows.append((run.name, result, steps, _cut(run.detail)))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[3]]).rstrip(), file=out)
    _print_failures(runs, out)
    if live:
        _print_rates(runs, out, model)
    passed = sum(run.status == "PASS" for run in runs)
    print(f"\n{passed} passed, {len(runs) - passed} failed or in error", file=out)


def _print_failures(runs: list[Run], out: TextIO) -> None:
    for run in runs:
        failed = next((r for r in run.results if not r.passed), None)
        text = run.detail if failed is None else failed.report()
        if text or run.note:
            print(f"\n== {run.name} ({run.path})", file=out)
            if text:
                print(text, file=out)
            if run.note:
                print(run.note, file=out)


def _print_rates(runs: list[Run], out: TextIO, model: str | None = None) -> None:
    print(f"\nPass rates on {model}:" if model else "\nPass rates:", file=out)
    for run in runs:
        if not run.results:
            continue
        print(f"  {run.name}: {run.pass_rate:.0%} of {len(run.results)} runs", file=out)
        held: dict[str, list[bool]] = defaultdict(list)
        for result in run.results:
            for expectation in result.expectations:
                held[expectation.name].append(expectation.passed)
        for name, passes in held.items():
            print(f"    {name}: {sum(passes) / len(passes):.0%}", file=out)


def write_junit(runs: list[Run], path: Path) -> None:
    """A JUnit XML report: one test case per case file, its failure message the divergence."""
    suite = ET.Element("testsuite", name="stepwise", tests=str(len(runs)))
    failures = errors = 0
    for run in runs:
        item = ET.SubElement(suite, "testcase", classname="stepwise_cases", name=run.name)
        item.set("file", str(run.path))
        if run.status == "ERROR":
            errors += 1
            ET.SubElement(item, "error", message=_cut(run.detail)).text = run.detail
        elif run.status == "FAIL":
            failures += 1
            failed = next(r for r in run.results if not r.passed)
            ET.SubElement(item, "failure", message=_cut(failed.reason)).text = failed.report()
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
