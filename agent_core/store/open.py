"""`open_store`: the store a face is pointed at, from a path or a URL, the same way in every face.

The app, `stepwise serve`, the services' control plane and `stepwise db copy` all take one
target string (`--db` or `$STEPWISE_DB`): a `postgresql://` (or `postgres://`) URL opens a
`PostgresStore`, anything else is a SQLite file, the embedded default.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from agent_core.errors import UserError
from agent_core.store.sqlite import SQLiteStore

if TYPE_CHECKING:  # psycopg is an extra: loaded only when a URL names PostgreSQL.
    from agent_core.store.postgres import PostgresStore

__all__ = [
    "DB_ENV",
    "DEFAULT_DB",
    "DEFAULT_SCHEMA",
    "POSTGRES_SCHEMES",
    "is_url",
    "masked_target",
    "open_store",
    "split_schema",
]

DB_ENV = "STEPWISE_DB"
"""The environment variable every face reads its store from."""
DEFAULT_DB = "stepwise.db"
"""The embedded SQLite file, in the working folder, when nothing names a store."""
DEFAULT_SCHEMA = "stepwise"
"""The PostgreSQL schema the tables live in unless the URL's `schema=` says otherwise."""
POSTGRES_SCHEMES = ("postgresql", "postgres")

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def is_url(target: str | Path) -> bool:
    """Whether `target` is a URL (`scheme://...`) rather than a file path."""
    return isinstance(target, str) and _SCHEME.match(target) is not None


def masked_target(target: str | Path) -> str:
    """`target` to show or log: a URL without its password, a path as given."""
    if not is_url(target):
        return str(target)
    from agent_core.store.postgres import masked_url  # No psycopg: only its text rules.

    return masked_url(str(target))


def open_store(
    target: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    max_connections: int | None = None,
    default: str | Path = DEFAULT_DB,
) -> SQLiteStore | PostgresStore:
    """Open the store `target` names.

    Args:
        target: A `postgresql://` or `postgres://` URL (a `schema=` query parameter picks the
            schema, default "stepwise"; it is taken off before libpq reads the URL), or a
            SQLite file's path ("~" is expanded). None reads `$STEPWISE_DB` from `env`, and
            without it opens `default`.
        env: Where to read `$STEPWISE_DB` (default: this process's environment).
        max_connections: A PostgreSQL store's pool size (its own default when None); a SQLite
            store has one connection.
        default: The face's own file when neither `target` nor `$STEPWISE_DB` names one.

    Raises:
        UserError: A URL of another scheme (code `unsupported_store_url`), or a bad schema.
        MissingExtraError: A PostgreSQL URL without the `postgres` extra installed.
        StoreError: The store cannot be opened (no such server, a file that is not a database).
    """
    if target is None or target == "":
        target = (os.environ if env is None else env).get(DB_ENV) or default
    if isinstance(target, Path) or not is_url(target):
        return SQLiteStore(Path(target).expanduser())
    scheme = target.split("://", 1)[0].lower()
    if scheme not in POSTGRES_SCHEMES:
        raise UserError(
            f"the database URL's scheme {scheme}:// is not one Stepwise stores tasks in: give a "
            "postgresql:// (or postgres://) URL, or a SQLite file's path",
            code="unsupported_store_url",
            params={"scheme": scheme, "supported": list(POSTGRES_SCHEMES)},
        )
    return _postgres(target, max_connections)


def _postgres(url: str, max_connections: int | None) -> PostgresStore:
    from agent_core.store.postgres import PostgresStore

    url, schema = split_schema(url)
    options = {} if max_connections is None else {"max_connections": max_connections}
    try:
        return PostgresStore(url, schema=schema, **options)
    except ValueError as exc:  # A schema that is no plain SQL name.
        raise UserError(f"the database URL's schema= is not usable: {exc}") from None


def split_schema(url: str, default: str = DEFAULT_SCHEMA) -> tuple[str, str]:
    """The URL without its `schema=` parameter (libpq knows none), and that schema.

    The other parameters are kept byte for byte: re-encoding them (urlencode) would turn a
    space into "+", which libpq does not read back as a space.
    """
    base, _, rest = url.partition("?")
    query, hash_mark, fragment = rest.partition("#")
    schema = default
    kept = []
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        if unquote(name) == "schema":
            schema = unquote(value)
        else:
            kept.append(part)
    rebuilt = base + ("?" + "&".join(kept) if kept else "") + hash_mark + fragment
    return rebuilt, schema
