"""The SQL of `PostgresStore`: its tables and every statement it sends, for one schema.

`{s}` in each text stands for the quoted schema, filled in once when a store is made
(`Statements.in_schema`). JSON is kept as text, as SQLite keeps it: the store writes what
pydantic wrote and reads it back unparsed by the database (and a damaged row stays readable
enough to list and delete). `seq` keeps insertion order, as SQLite's rowid does.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["LAYOUT_VERSION", "TABLES", "Statements"]

LAYOUT_VERSION = 1
"""The layout this code writes, kept in the schema's `layout` table."""

TABLES = [
    """CREATE TABLE IF NOT EXISTS {s}.tasks (
    task_id TEXT PRIMARY KEY,
    seq BIGINT GENERATED ALWAYS AS IDENTITY,
    version BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    steps_completed INTEGER NOT NULL,
    steps_upcoming INTEGER NOT NULL,
    usage TEXT NOT NULL,
    imported BOOLEAN NOT NULL,
    thread_id TEXT NOT NULL,
    task TEXT NOT NULL,
    extra_state TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS tasks_by_created ON {s}.tasks (created_at, seq)",
    "CREATE TABLE IF NOT EXISTS {s}.messages (owner TEXT NOT NULL, idx INTEGER NOT NULL, "
    "data TEXT NOT NULL, PRIMARY KEY (owner, idx))",
    "CREATE TABLE IF NOT EXISTS {s}.steps (task_id TEXT NOT NULL, step_id TEXT NOT NULL, "
    "seq BIGINT GENERATED ALWAYS AS IDENTITY, data TEXT NOT NULL, output TEXT, snapshot TEXT, "
    "PRIMARY KEY (task_id, step_id))",
    "CREATE TABLE IF NOT EXISTS {s}.prompts (task_id TEXT NOT NULL, step_id TEXT NOT NULL, "
    "data TEXT NOT NULL, PRIMARY KEY (task_id, step_id))",
    # Each task's log of the messages its steps sent (`agent_core.store._prompt_log`).
    "CREATE TABLE IF NOT EXISTS {s}.prompt_log (task_id TEXT NOT NULL, idx INTEGER NOT NULL, "
    "data TEXT NOT NULL, PRIMARY KEY (task_id, idx))",
    "CREATE TABLE IF NOT EXISTS {s}.settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {s}.task_ledger (key TEXT PRIMARY KEY, task_id TEXT NOT NULL, "
    "created_at TIMESTAMPTZ NOT NULL, result TEXT, finished_at TIMESTAMPTZ)",
    "CREATE INDEX IF NOT EXISTS task_ledger_by_created ON {s}.task_ledger (created_at)",
    "CREATE INDEX IF NOT EXISTS task_ledger_by_finished ON {s}.task_ledger (finished_at) "
    "WHERE finished_at IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS {s}.layout (version INTEGER NOT NULL)",
]


@dataclass(frozen=True, slots=True)
class Statements:
    """Every statement the store sends, with its schema filled in."""

    create_task: str = (
        "INSERT INTO {s}.tasks (task_id, version, created_at, input, status, updated_at, "
        "steps_completed, steps_upcoming, usage, imported, thread_id, task, extra_state) "
        "VALUES (%s, %s, %s, %s, '', %s, 0, 0, '', false, '', '', '') ON CONFLICT DO NOTHING"
    )
    update_task: str = (
        "UPDATE {s}.tasks SET version = %s, status = %s, updated_at = %s, steps_completed = %s, "
        "steps_upcoming = %s, usage = %s, imported = %s, thread_id = %s, task = %s, "
        "extra_state = %s WHERE task_id = %s AND version = %s"
    )
    move_version: str = "UPDATE {s}.tasks SET version = %s WHERE task_id = %s AND version = %s"
    # Every write of a task takes its row's lock first, whatever version it was made against:
    # a stale change's compare-and-update matches no row and so locks none, and wrote its
    # steps unserialised, deadlocking with a current change writing them in another order.
    lock_task: str = "SELECT 1 FROM {s}.tasks WHERE task_id = %s FOR UPDATE"
    # A step, its output and its undo snapshot share one row, as on SQLite: a NULL output or
    # snapshot keeps the stored one; an empty snapshot drops it (undo).
    upsert_step: str = (
        "INSERT INTO {s}.steps AS old (task_id, step_id, data, output, snapshot) "
        "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (task_id, step_id) DO UPDATE SET "
        "data = excluded.data, output = COALESCE(excluded.output, old.output), "
        "snapshot = CASE WHEN excluded.snapshot = '' THEN NULL "
        "ELSE COALESCE(excluded.snapshot, old.snapshot) END"
    )
    upsert_prompt: str = (
        "INSERT INTO {s}.prompts (task_id, step_id, data) VALUES (%s, %s, %s) "
        "ON CONFLICT (task_id, step_id) DO UPDATE SET data = excluded.data"
    )
    # One statement reads the whole task, so it sees one snapshot of the database (no commit can
    # land between the task row and its steps), in one round trip.
    load_task: str = (
        "SELECT t.input, t.task, t.extra_state, t.version, "
        "ARRAY(SELECT data FROM {s}.messages WHERE owner = t.task_id ORDER BY idx), "
        "s.ids, s.data, s.outputs, s.snapshots FROM {s}.tasks t LEFT JOIN LATERAL ("
        "SELECT array_agg(step_id ORDER BY seq) ids, array_agg(data ORDER BY seq) data, "
        "array_agg(output ORDER BY seq) outputs, array_agg(snapshot ORDER BY seq) snapshots "
        "FROM {s}.steps WHERE task_id = t.task_id) s ON true WHERE t.task_id = %s"
    )
    list_tasks: str = (
        "SELECT task_id, input, status, created_at, updated_at, steps_completed, steps_upcoming, "
        "usage, imported, thread_id FROM {s}.tasks ORDER BY created_at DESC, seq DESC"
    )
    delete_task: str = (
        "WITH s AS (DELETE FROM {s}.steps WHERE task_id = %(id)s), "
        "p AS (DELETE FROM {s}.prompts WHERE task_id = %(id)s), "
        "l AS (DELETE FROM {s}.prompt_log WHERE task_id = %(id)s), "
        "m AS (DELETE FROM {s}.messages WHERE owner = %(id)s) "
        "DELETE FROM {s}.tasks WHERE task_id = %(id)s"
    )
    # An output or a snapshot written apart from its step (an undo drops one: NULL).
    set_output: str = "UPDATE {s}.steps SET output = %s WHERE task_id = %s AND step_id = %s"
    set_snapshot: str = "UPDATE {s}.steps SET snapshot = %s WHERE task_id = %s AND step_id = %s"
    set_layout: str = "WITH old AS (DELETE FROM {s}.layout) INSERT INTO {s}.layout VALUES (%s)"
    task_version: str = "SELECT version FROM {s}.tasks WHERE task_id = %s"
    drop_step: str = "DELETE FROM {s}.steps WHERE task_id = %s AND step_id = %s"
    drop_prompt: str = "DELETE FROM {s}.prompts WHERE task_id = %s AND step_id = %s"
    load_prompt: str = "SELECT data FROM {s}.prompts WHERE task_id = %s AND step_id = %s"
    prompt_log_size: str = "SELECT COALESCE(MAX(idx) + 1, 0) FROM {s}.prompt_log WHERE task_id = %s"
    read_prompt_log: str = (
        "SELECT data FROM {s}.prompt_log WHERE task_id = %s AND idx >= %s AND idx < %s ORDER BY idx"
    )
    read_prompts: str = "SELECT step_id, data FROM {s}.prompts WHERE task_id = %s"
    copy_prompt_log: str = (
        "INSERT INTO {s}.prompt_log (task_id, idx, data) "
        "SELECT %s, idx, data FROM {s}.prompt_log WHERE task_id = %s AND idx < %s"
    )
    append_prompt_log: str = "INSERT INTO {s}.prompt_log (task_id, idx, data) VALUES (%s, %s, %s)"
    truncate_messages: str = "DELETE FROM {s}.messages WHERE owner = %s AND idx >= %s"
    append_message: str = "INSERT INTO {s}.messages (owner, idx, data) VALUES (%s, %s, %s)"
    read_messages: str = "SELECT data FROM {s}.messages WHERE owner = %s ORDER BY idx"
    get_setting: str = "SELECT value FROM {s}.settings WHERE name = %s"
    delete_setting: str = "DELETE FROM {s}.settings WHERE name = %s"
    put_setting: str = (
        "INSERT INTO {s}.settings (name, value) VALUES (%s, %s) "
        "ON CONFLICT (name) DO UPDATE SET value = excluded.value"
    )
    add_ledger_entry: str = (
        "INSERT INTO {s}.task_ledger (key, task_id, created_at) VALUES (%s, %s, %s) "
        "ON CONFLICT DO NOTHING"
    )
    ledger_holder: str = "SELECT task_id FROM {s}.task_ledger WHERE key = %s"
    ledger_entry: str = (
        "SELECT key, task_id, created_at, result, finished_at FROM {s}.task_ledger WHERE key = %s"
    )
    finish_ledger_entry: str = (
        "UPDATE {s}.task_ledger SET result = %s, finished_at = %s WHERE key = %s"
    )
    trim_finished: str = "DELETE FROM {s}.task_ledger WHERE finished_at < %s"
    trim_oldest: str = (
        "DELETE FROM {s}.task_ledger WHERE key IN (SELECT key FROM {s}.task_ledger "
        "ORDER BY created_at DESC, key OFFSET %s)"
    )

    @classmethod
    def in_schema(cls, schema: str) -> Statements:
        """The statements for `schema`, a name the store checked (letters, digits, _)."""
        quoted = f'"{schema}"'
        return cls(**{f.name: str(f.default).replace("{s}", quoted) for f in fields(cls)})
