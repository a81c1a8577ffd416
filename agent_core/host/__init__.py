"""The host under every face: one store, runners per spec, live events and acts across processes.

`Host` is what the app, `stepwise serve`, `stepwise mcp` and a user's own program hold;
`attach` (`stepwise.session`) runs a program's agent on it with breakpoints that wait for a
person in the app.
"""

from agent_core.host.attach import Session, SessionResult, attach, check_rebuildable
from agent_core.host.events import EventHub
from agent_core.host.host import Host
from agent_core.store.open import DB_ENV, DEFAULT_DB, is_url, masked_target

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
]
