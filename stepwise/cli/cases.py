"""`stepwise test`: run the cases under some folders; `stepwise test save TASK_ID` writes one.

Each case replays on the current code of its agent with the model answered from the
recording (`agent_core.recordings`). The report is a table (case, result, steps, the
divergence or the failed expectation) and, below it, each failure's diff. The exit status is
0 when every case passed, 1 when any failed, 2 when any could not be read or run as given (a
malformed file, an unknown format, an agent that cannot be replayed); the other cases run.

`--live` runs the agent's own model instead (or, with `--model provider:model`, that one),
`--repeat N` times per case, and reports each case's and each expectation's pass rate; a case
passes when its rate reaches `--min-pass-rate` (default 1.0).

One user-code registry serves the whole run: the code does not change while it runs, and each
case would otherwise read the project's files and import the agent again.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from agent_core.errors import AgentCoreError, UserError
from agent_core.host import open_store
from agent_core.llms.catalog import split_model
from agent_core.recordings import (
    DEFAULT_CASES_DIR,
    Case,
    CaseFileError,
    case_from_task,
    load_case,
    replay_case,
    save_case,
)
from agent_core.recordings.cases import CASE_SUFFIX, case_text
from agent_core.user_code.registry import UserCodeRegistry, parse_entry
from stepwise.cli._case_report import Run, print_report, write_junit

__all__ = ["add_test_parser", "find_cases", "run_test"]

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
_BAD_INPUT_CODES = frozenset(
    {"case_malformed", "case_format_unknown", "case_field_missing", "replay_unsupported"}
)

_EPILOG = """\
Examples:
  stepwise test save 3f2c9a01 --name adds       write stepwise_cases/adds.case.json
  stepwise test                                 run every case under stepwise_cases/
  stepwise test cases/ -k adds --junit-xml out.xml
  stepwise test --agent calc=agent.py:build_agent   replay on another target
  stepwise test --update                        re-record the cases that diverged
  stepwise test --live --repeat 5 --min-pass-rate 0.8
  stepwise test --live --model openai:gpt-4o --repeat 5   the cases on another model

Exit status: 0 all passed, 1 a case failed, 2 a case could not be read or run as given.
"""


def add_test_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `stepwise test` (and its `save` form) on the command's subparsers."""
    test = commands.add_parser(
        "test",
        help="replay saved cases (tasks kept as tests) on your current code",
        description="Replay each case under PATH (default: stepwise_cases/) on the current code "
        "of its agent,\nwith the model answered from the recording. `stepwise test save "
        "TASK_ID` writes a case.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    test.add_argument("paths", nargs="*", metavar="PATH", help="case files or folders")
    test.add_argument(
        "-k",
        dest="pattern",
        metavar="PATTERN",
        help="run the cases whose name or file matches (a substring, or a glob with * and ?)",
    )
    test.add_argument(
        "--agent",
        metavar="NAME=TARGET",
        help="replay on this agent instead "
        "(it replaces the case's agent NAME, or a built-in worker)",
    )
    test.add_argument(
        "--tools",
        choices=("auto", "recorded", "live"),
        help="answer tools "
        "from the recording (recorded), run them all (live), or run all but those "
        "that touch the outside (auto, the cases' default)",
    )
    test.add_argument(
        "--ignore-system-prompt",
        action="store_true",
        help="compare model requests without their system messages",
    )
    test.add_argument("--junit-xml", metavar="FILE", type=Path, help="also write a JUnit report")
    test.add_argument(
        "--update",
        action="store_true",
        help="re-record the cases that diverged, once you agree the new behaviour is right",
    )
    test.add_argument(
        "--live", action="store_true", help="run the agent's own model instead of the recording"
    )
    test.add_argument(
        "--model",
        type=_model,
        metavar="PROVIDER:MODEL",
        help="with --live: run the cases' agents on this model instead of their own "
        "(e.g. openai:gpt-4o; its server: the provider's, or $OPENAI_BASE_URL)",
    )
    test.add_argument(
        "--repeat",
        type=_positive,
        default=1,
        metavar="N",
        help="with --live: run each case N times and report pass rates",
    )
    test.add_argument(
        "--min-pass-rate",
        type=_rate,
        default=1.0,
        metavar="R",
        help="with --repeat: the pass rate (0-1) a case needs (default: 1)",
    )
    test.add_argument(
        "--db",
        metavar="PATH|URL",
        help="save: the database holding the task (default: $STEPWISE_DB, else ./stepwise.db)",
    )
    test.add_argument(
        "--dir",
        type=Path,
        default=Path(DEFAULT_CASES_DIR),
        help="save: the folder to write the case to (default: stepwise_cases)",
    )
    test.add_argument("--name", help="save: the case's name (default: task-<id>)")
    test.set_defaults(command_parser=test)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def _model(text: str) -> str:
    try:
        split_model(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return text.strip()


def _rate(text: str) -> float:
    try:
        rate = float(text)
    except ValueError:
        rate = -1.0
    if not 0.0 <= rate <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a rate between 0 and 1")
    return rate


def run_test(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    """Run `stepwise test ...`; the exit status."""
    stream: TextIO = sys.stdout if out is None else out
    if args.paths[:1] == ["save"]:
        return _save(args, stream)
    if args.model is not None and not args.live:
        # Without --live the recording answers: a model named would silently not be asked.
        print(
            "stepwise test: --model needs --live (a replay answers from the recording)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    try:
        agent = parse_entry(args.agent, kind="agent", base=Path.cwd()) if args.agent else None
    except UserError as exc:
        print(f"stepwise test: --agent: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    runs, missing = _collect(args.paths or [DEFAULT_CASES_DIR], args.pattern)
    for problem in missing:
        print(f"stepwise test: {problem}", file=sys.stderr)
    registry = UserCodeRegistry(project=Path.cwd(), agents={agent[0]: agent[1]} if agent else {})
    try:
        for run in runs:
            if run.case is not None:
                _replay(run, args, agent, registry)
    finally:
        registry.close()  # The MCP servers the cases' agents started.
    print_report(runs, stream, live=args.live, model=args.model)
    if args.junit_xml is not None:
        write_junit(runs, args.junit_xml)
    return _exit_status(runs, bad_paths=bool(missing), min_rate=args.min_pass_rate)


def find_cases(paths: Sequence[str | Path]) -> tuple[list[Path], list[str]]:
    """Every case file under `paths` (folders searched recursively), and paths not found."""
    found: list[Path] = []
    missing: list[str] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found.extend(sorted(path.rglob(f"*{CASE_SUFFIX}")))
        elif path.is_file():
            found.append(path)
        else:
            missing.append(f"{given}: no such case file or folder")
    return list(dict.fromkeys(found)), missing


def _collect(paths: Sequence[str], pattern: str | None) -> tuple[list[Run], list[str]]:
    files, missing = find_cases(paths)
    runs: list[Run] = []
    for path in files:
        try:
            run = Run(path=path, case=load_case(path))
        except CaseFileError as exc:
            run = Run(path=path, load_error=exc)
        if pattern is None or _matches(run, pattern):
            runs.append(run)
    return runs, missing


def _matches(run: Run, pattern: str) -> bool:
    names = [run.name, str(run.path)]
    if any(ch in pattern for ch in "*?["):
        return any(fnmatch.fnmatch(name, pattern) for name in names)
    return any(pattern in name for name in names)


def _replay(
    run: Run,
    args: argparse.Namespace,
    agent: tuple[str, str] | None,
    registry: UserCodeRegistry,
) -> None:
    assert run.case is not None
    repeat = args.repeat if args.live else 1
    for _ in range(repeat):
        result = replay_case(
            run.case,
            agent=agent,
            tools=args.tools,
            ignore_system_prompt=args.ignore_system_prompt or None,
            live=args.live,
            model=args.model,
            registry=registry,
            project=Path.cwd(),
        )
        run.results.append(result)
    if args.update and not args.live and run.results[-1].divergence is not None:
        _update(run, args, agent, registry)


def _update(
    run: Run,
    args: argparse.Namespace,
    agent: tuple[str, str] | None,
    registry: UserCodeRegistry,
) -> None:
    """Re-record a diverged case from a lenient replay; it is kept only if that replay passed."""
    assert run.case is not None
    result = replay_case(
        run.case,
        agent=agent,
        tools=args.tools,
        update=True,
        registry=registry,
        project=Path.cwd(),
        ignore_system_prompt=args.ignore_system_prompt or None,
    )
    if result.updated is None or not result.passed:
        run.note = "not re-recorded: " + (result.reason or "the replay did not finish")
        return
    run.path.write_text(case_text(result.updated), encoding="utf-8")
    run.note = f"re-recorded {run.path}"


def _exit_status(runs: list[Run], *, bad_paths: bool, min_rate: float) -> int:
    bad = bad_paths or any(run.load_error is not None for run in runs)
    bad = bad or any(
        r.error is not None and r.error.code in _BAD_INPUT_CODES
        for run in runs
        for r in run.results
    )
    if bad:
        return EXIT_BAD_INPUT
    if any(run.pass_rate < min_rate for run in runs):
        return EXIT_FAILED
    return EXIT_PASSED


def _save(args: argparse.Namespace, out: TextIO) -> int:
    rest = args.paths[1:]
    if len(rest) != 1:
        print("stepwise test save: give one TASK_ID (stepwise test save TASK_ID)", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        store = open_store(args.db)
        try:
            case = case_from_task(store, _full_task_id(store, rest[0]), name=args.name)
        finally:
            store.close()
        path = save_case(case, args.dir)
    except AgentCoreError as exc:
        print(f"stepwise test save: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT if isinstance(exc, UserError) else EXIT_FAILED
    print(f"{len(case.steps)} steps, expecting: {_expected(case)}", file=out)
    print(path, file=out)  # Last, for scripts.
    return EXIT_PASSED


def _full_task_id(store: object, given: str) -> str:
    """The task id `given` names: whole, or its last digits as the app shows them."""
    list_tasks = getattr(store, "list_tasks", None)
    if len(given) >= 32 or list_tasks is None:
        return given
    matches = [t.task_id for t in list_tasks() if t.task_id.endswith(given)]
    if len(matches) > 1:
        raise UserError(f"{given!r} ends {len(matches)} task ids: give more of the id")
    return matches[0] if matches else given


def _expected(case: Case) -> str:
    parts = []
    if case.expectations.answer is not None:
        parts.append(f"answer {case.expectations.answer!r}")
    calls = case.expectations.tool_calls
    if calls:
        parts.append(f"{len(calls)} tool call(s)")
    return ", ".join(parts) or "no failed step"
