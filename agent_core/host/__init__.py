"""The host under every face: one store, runners per spec, live events and acts across processes.

`Host` is what the app, `stepwise serve`, `stepwise mcp` and a user's own program hold;
`attach` (`stepwise.session`) runs a program's agent on it with breakpoints that wait for a
person in the app.

A face names its database with one target string (`--db`, `$STEPWISE_DB`) and opens it here
too (`open_store`, `is_url`, `masked_target`, `split_schema`), never from `agent_core.store`
itself: the faces-open-stores-through-host contract in pyproject.toml holds them to it.
"""

from agent_core.host.attach import Session, SessionResult, attach, check_rebuildable
from agent_core.host.events import EventHub
from agent_core.host.host import Host
from agent_core.store.open import (
    DB_ENV,
    DEFAULT_DB,
    is_url,
    masked_target,
    open_store,
    split_schema,
)

__all__ = [
    "DB_ENV",
    "DEFAULT_DB",
    "EventHub",
    "Host",
    "Session",
    "SessionResult",
    "attach",
    "check_rebuildable",
    "is_url",
    "masked_target",
    "open_store",
    "split_schema",
]
