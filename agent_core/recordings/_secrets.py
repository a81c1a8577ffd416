"""Keys out of a case: the values of key-holding environment variables and key-shaped strings.

`agent_core.redaction.scrub` takes the credentials out of URLs and `key=value` pairs; a case
also holds free text (a task's input, a model's messages) where a key can sit bare, so this
adds the keys this process knows (its environment's `*_KEY`, `*_TOKEN`, ... values) and the
shapes providers give their keys. A replay redacts what it compares the same way, so a
redacted recording still matches the request that held the key.
"""

from __future__ import annotations

import os
import re
from typing import Any

from agent_core.redaction import REDACTED, scrub

__all__ = ["environment_secrets", "redact_text", "redact_tree"]

_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic
    r"|gh[pousr]_[A-Za-z0-9]{20,}"  # GitHub
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|AIza[0-9A-Za-z_-]{30,})"  # Google
    r"|(?<=Bearer )[A-Za-z0-9._~+/=-]{12,}"
)
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
_MIN_SECRET_CHARS = 8  # Shorter values ("1", "true") would redact ordinary words.


def environment_secrets() -> list[str]:
    """The values of this process's key-holding variables (`*_KEY`, `*_TOKEN`, ...), longest first.

    Read once per replay, not per text: a replay redacts thousands of texts, and reading the
    environment decodes every variable. Only the names are scanned; a value is read when its
    name holds a key.
    """
    environ = os.environ
    values = {environ.get(name, "") for name in list(environ) if _SECRET_NAME.search(name)}
    kept = (value for value in values if len(value) >= _MIN_SECRET_CHARS)
    return sorted(kept, key=len, reverse=True)  # A longer key first: it may hold a shorter.


def redact_text(text: str, secrets: list[str] | None = None) -> str:
    """`text` with every known or key-shaped secret, and URL credentials, replaced.

    `secrets` is `environment_secrets()` read once by the caller (default: read now).
    """
    for secret in environment_secrets() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return scrub(_KEY_SHAPES.sub(REDACTED, text))


def redact_tree(data: Any, secrets: list[str] | None = None) -> Any:
    """A copy of JSON `data` with `redact_text` applied to every string (keys included)."""
    if secrets is None:
        secrets = environment_secrets()
    if isinstance(data, str):
        return redact_text(data, secrets)
    if isinstance(data, dict):
        return {redact_text(str(k), secrets): redact_tree(v, secrets) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [redact_tree(item, secrets) for item in data]
    return data
