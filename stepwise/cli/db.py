"""`stepwise db copy SRC DST`: every task of one store written into another, then counted.

Moving a team from the embedded SQLite file to PostgreSQL (or back) copies each task whole:
its state, every step (undone and failed ones too), outputs with the prompts they sent, undo
snapshots and memory, in one `TaskChange` per task, as importing a trace writes one, but under
the task's own ids and version. The task ledger's rows go with their task (in the same
commit), then the settings and the shared conversations. At the end the destination is read
back and counted; a count that differs fails the command.

A task that is already in the destination is never overwritten unless `--replace`: without
it the copy refuses before writing anything. A task that cannot be read in the source (a
damaged row) is skipped, named and counted.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from agent_core.errors import AgentCoreError, StoreError, UserError
from agent_core.host import is_url, masked_target, open_store
from agent_core.runtime.fork import new_task_change
from agent_core.store.base import MemoryWrite
from agent_core.types import TaskState, short_id
from stepwise.cli._db_rows import Names, names_in

__all__ = ["CopyCounts", "add_db_parser", "copy_store", "run_db"]

_SHOWN = 5  # Task ids named in a refusal; the rest are counted.

_EPILOG = """\
SRC and DST are each a SQLite file's path or a PostgreSQL URL
(postgresql://user:password@host:5432/db, with ?schema=NAME for a schema other than
"stepwise"). DST's tables are created when missing.

Examples:
  stepwise db copy stepwise.db postgresql://stepwise@db.internal/stepwise
  stepwise db copy postgresql://stepwise@db.internal/stepwise backup.db
"""


@dataclass(slots=True)
class Tally:
    """One kind of row: how many the source had, were copied, skipped, found back."""

    source: int = 0
    copied: int = 0
    skipped: int = 0
    found: int = 0


@dataclass(slots=True)
class CopyCounts:
    """What `copy_store` copied and then found in the destination."""

    tasks: Tally = field(default_factory=Tally)
    steps: Tally = field(default_factory=Tally)
    ledger_rows: Tally = field(default_factory=Tally)
    settings: Tally = field(default_factory=Tally)
    conversations: Tally = field(default_factory=Tally)
    skipped: list[str] = field(default_factory=list)
    """The ids of the source's tasks that could not be read (damaged), so were not copied."""

    @property
    def match(self) -> bool:
        """Every copied row was found back in the destination."""
        return all(t.copied == t.found for t in self.tallies().values())

    def tallies(self) -> dict[str, Tally]:
        """Each kind of row's tally, by the name printed."""
        return {
            "tasks": self.tasks,
            "steps": self.steps,
            "ledger rows": self.ledger_rows,
            "settings": self.settings,
            "conversations": self.conversations,
        }


def add_db_parser(commands: Any) -> None:
    """Add `db copy` to the `stepwise` subcommands."""
    db = commands.add_parser(
        "db",
        help="the database's tasks: copy them to another database (SQLite or PostgreSQL)",
        description="Work on a Stepwise database as a whole.",
    )
    actions = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    copy = actions.add_parser(
        "copy",
        help="copy every task, the task ledger and the settings from SRC to DST",
        description="Copy every task (steps, outputs, undo snapshots, memory), the task ledger,\n"
        "the settings and the shared conversations from SRC to DST, then count them in DST.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    copy.add_argument("source", metavar="SRC", help="the database to copy from (path or URL)")
    copy.add_argument("target", metavar="DST", help="the database to copy into (path or URL)")
    copy.add_argument(
        "--replace",
        action="store_true",
        help="overwrite the tasks, settings and conversations DST already has under the same "
        "ids (without it the copy refuses before writing anything)",
    )


def run_db(args: argparse.Namespace) -> int:
    """Run `stepwise db ...`; the exit status (1: refused, failed or counts differ)."""
    try:
        counts = _copy_between(args.source, args.target, replace=args.replace)
    except AgentCoreError as exc:
        print(f"stepwise db copy: {exc}", file=sys.stderr)
        return 1
    _print_counts(counts, sys.stdout)
    if not counts.match:
        print("stepwise db copy: the counts differ (see above)", file=sys.stderr)
        return 1
    return 0


def _copy_between(source: str, target: str, *, replace: bool) -> CopyCounts:
    if _same(source, target):
        raise UserError("SRC and DST are the same database: give two different ones")
    if not is_url(source) and not Path(source).expanduser().is_file():
        # Opening it would create an empty database, and "copy" nothing without a word.
        raise UserError(f"there is no database file {source!r} to copy from")
    src = open_store(source)
    try:
        dst = open_store(target)
        try:
            print(f"Copying {masked_target(source)} -> {masked_target(target)}", flush=True)
            return copy_store(src, dst, replace=replace, log=sys.stderr)
        finally:
            dst.close()
    finally:
        src.close()


def _same(source: str, target: str) -> bool:
    if is_url(source) or is_url(target):
        return source == target
    return Path(source).expanduser().resolve() == Path(target).expanduser().resolve()


def copy_store(
    src: Any, dst: Any, *, replace: bool = False, log: TextIO | None = None
) -> CopyCounts:
    """Copy every task, ledger row, setting and conversation of `src` into `dst`; the counts.

    Raises:
        UserError: `dst` already holds some of them (and not `replace`), or a ledger key
            that names another task; nothing was written.
        StoreError: A store failed to read or write (what was committed stays).
    """
    counts = CopyCounts()
    names = names_in(src)
    summaries = src.list_tasks()[::-1]  # Oldest first: the destination lists them alike.
    counts.tasks.source = len(summaries)
    counts.ledger_rows.source = len(names.ledger_keys)
    counts.settings.source = len(names.settings)
    counts.conversations.source = len(names.conversations)
    ledger = _ledger_by_task(src, names)
    if not replace:
        _refuse_overwrites(src, dst, summaries, names)
    _refuse_ledger_clashes(dst, ledger)
    copied = _copy_tasks(src, dst, [s.task_id for s in summaries], ledger, counts, replace, log)
    settings = {name: src.get_setting(name) for name in names.settings}
    for name, value in settings.items():
        dst.put_setting(name, value)
    conversations = {c: src.load_conversation(c) for c in names.conversations}
    for conversation_id, messages in conversations.items():
        dst.write_conversation(conversation_id, MemoryWrite(keep=0, append=messages))
    counts.settings.copied, counts.conversations.copied = len(settings), len(conversations)
    _count_back(dst, counts, copied, ledger, settings, conversations)
    return counts


def _copy_tasks(
    src: Any,
    dst: Any,
    task_ids: list[str],
    ledger: dict[str, list[Any]],
    counts: CopyCounts,
    replace: bool,
    log: TextIO | None,
) -> dict[str, int]:
    """Copy each readable task with its ledger rows; the copied tasks' ids and step counts."""
    copied: dict[str, int] = {}
    for task_id in task_ids:
        state = _readable(src, task_id, counts, log)
        if state is None:
            continue
        _copy_task(src, dst, state, ledger.get(task_id, []), replace=replace)
        copied[task_id] = len(state.steps)
        counts.ledger_rows.copied += len(ledger.get(task_id, []))
    counts.tasks.copied, counts.steps.copied = len(copied), sum(copied.values())
    counts.ledger_rows.skipped = counts.ledger_rows.source - counts.ledger_rows.copied
    if counts.ledger_rows.skipped and log is not None:
        print(
            f"warning: {counts.ledger_rows.skipped} task ledger row(s) name a task the source "
            "does not have (or could not read): not copied",
            file=log,
        )
    return copied


def _ledger_by_task(src: Any, names: Names) -> dict[str, list[Any]]:
    """The source's ledger entries, by the task each names."""
    by_task: dict[str, list[Any]] = {}
    for key in names.ledger_keys:
        entry = src.ledger_entry(key)
        if entry is not None:  # Trimmed since it was listed.
            by_task.setdefault(entry.task_id, []).append(entry)
    return by_task


def _refuse_overwrites(src: Any, dst: Any, summaries: list[Any], names: Names) -> None:
    """Refuse, before writing anything, when `dst` holds a task or setting `src` would replace."""
    held = [s.task_id for s in summaries if dst.task_version(s.task_id) is not None]
    settings = [n for n in names.settings if dst.get_setting(n) not in (None, src.get_setting(n))]
    chats = [
        c
        for c in names.conversations
        if dst.load_conversation(c) not in ([], src.load_conversation(c))
    ]
    if not (held or settings or chats):
        return
    parts = []
    if held:
        shown = ", ".join(short_id(t) for t in held[:_SHOWN])
        more = f" and {len(held) - _SHOWN} more" if len(held) > _SHOWN else ""
        parts.append(f"{len(held)} of its tasks ({shown}{more})")
    if settings:
        parts.append(f"other values for {len(settings)} setting(s) ({', '.join(settings)})")
    if chats:
        parts.append(f"other messages in {len(chats)} conversation(s)")
    raise UserError(
        f"the destination already holds {'; '.join(parts)}; nothing was copied. Pass "
        "--replace to overwrite them with the source's, or copy into an empty database"
    )


def _refuse_ledger_clashes(dst: Any, ledger: dict[str, list[Any]]) -> None:
    """A ledger key that names another task in `dst` would answer a request with the wrong task."""
    for task_id, entries in ledger.items():
        for entry in entries:
            there = dst.ledger_entry(entry.key)
            if there is not None and there.task_id != task_id:
                raise UserError(
                    f"the destination's task ledger already records the key {entry.key!r} for "
                    f"task {short_id(there.task_id)}, where the source has task "
                    f"{short_id(task_id)}; nothing was copied"
                )


def _readable(src: Any, task_id: str, counts: CopyCounts, log: TextIO | None) -> TaskState | None:
    """The source's task, or None (counted and named) when its rows cannot be read."""
    try:
        state = src.load_task(task_id)
    except StoreError as exc:
        state, why = None, str(exc)
    else:
        why = "" if state is not None else "deleted while copying"
    if state is None:
        counts.tasks.skipped += 1
        counts.skipped.append(task_id)
        if log is not None:
            print(f"warning: task {task_id} skipped: {why}", file=log)
    return state


def _copy_task(src: Any, dst: Any, state: TaskState, entries: list[Any], *, replace: bool) -> None:
    """Write `state` into `dst` in one commit, with its first ledger entry."""
    for step_id, output in state.outputs.items():  # load_task leaves the prompts out.
        output.messages_sent = src.load_messages_sent(state.task_id, step_id)
    if replace and dst.task_version(state.task_id) is not None:
        dst.delete_task(state.task_id)
    change = new_task_change(state)
    first = entries[0] if entries else None
    if first is not None and dst.ledger_entry(first.key) is None:
        change.ledger_key = first.key
    dst.commit(change)
    for entry in entries:  # A task has one, written above; a second is rare (see the report).
        if entry.result is not None and _ledger_result(dst, entry.key) != entry.result:
            dst.finish_ledger_entry(entry.key, entry.result)


def _ledger_result(dst: Any, key: str) -> str | None:
    entry = dst.ledger_entry(key)
    return None if entry is None else entry.result


def _count_back(
    dst: Any,
    counts: CopyCounts,
    copied: dict[str, int],
    ledger: dict[str, list[Any]],
    settings: dict[str, Any],
    conversations: dict[str, list[Any]],
) -> None:
    """Read the destination back: each copied row found there as it was, counted."""
    for task_id, steps in copied.items():
        state = dst.load_task(task_id)
        if state is not None:
            counts.tasks.found += 1
            counts.steps.found += min(len(state.steps), steps)
        for entry in ledger.get(task_id, []):
            there = dst.ledger_entry(entry.key)
            if there is not None and (there.task_id, there.result) == (task_id, entry.result):
                counts.ledger_rows.found += 1
    counts.settings.found = sum(dst.get_setting(n) == v for n, v in settings.items())
    counts.conversations.found = sum(
        len(dst.load_conversation(c)) == len(m) for c, m in conversations.items()
    )


def _print_counts(counts: CopyCounts, out: TextIO) -> None:
    print(f"{'':15}{'source':>8}{'copied':>8}{'skipped':>9}{'in DST':>8}", file=out)
    for name, t in counts.tallies().items():
        source = "" if name == "steps" else t.source  # Steps of a damaged task are uncounted.
        print(f"{name:15}{source!s:>8}{t.copied:>8}{t.skipped:>9}{t.found:>8}", file=out)
    if counts.skipped:
        print(f"skipped (unreadable in SRC): {', '.join(counts.skipped)}", file=out)
    print("counts match" if counts.match else "COUNTS DIFFER", file=out, flush=True)
