"""Messages signed with the services' shared token, so Redis need not vouch for them.

Anyone who can write to a stream could otherwise forge a hop's result, a new task or a
dead-letter notice. With a token, each message is stored with an HMAC-SHA256 of its JSON
under a key derived from the token, and a consumer drops (to the dead letters, unhandled,
nobody told) any message whose signature is missing or wrong. The token never reaches
Redis. Signing does not hide what a message says (Redis's password, ACL and TLS do), and a
signed message can be replayed as is, which changes nothing: handlers are idempotent by
message id and hop state.
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["SIGNATURE_FIELD", "signature", "signing_key", "verified"]

SIGNATURE_FIELD = "sig"
"""The stream entry's field holding the signature (beside `message`)."""

_CONTEXT = b"stepwise.services message v1\x00"


def signing_key(token: str) -> bytes:
    """The key messages are signed with: derived from the token, never the token itself."""
    return hmac.new(token.encode("utf-8"), _CONTEXT, hashlib.sha256).digest()


def signature(key: bytes, payload: str) -> str:
    """The signature of a message's JSON."""
    return hmac.new(key, payload.encode("utf-8"), hashlib.sha256).hexdigest()


def verified(key: bytes, payload: str, given: str | None) -> bool:
    """Whether `given` is the signature of `payload` (in constant time)."""
    return given is not None and hmac.compare_digest(signature(key, payload), given)
