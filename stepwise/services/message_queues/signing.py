"""Messages signed with the services' shared token, so Redis need not vouch for them.

Anyone who can write to a stream could otherwise forge a hop's result, a new task or a
dead-letter notice. With a token, each message is stored with an HMAC-SHA256 under a key
derived from the token, and a consumer drops (to the dead letters, unhandled, nobody told)
any message whose signature is missing or wrong. The token never reaches Redis. Signing does
not hide what a message says (Redis's password, ACL and TLS do).

The signature covers where the message goes, not only what it says: the stream it was
written to, its addressee (the message type) and its hop id, each stored beside the message
so a refusal can say what was copied where. A signed entry copied into another service's
stream is refused there, so one service's hop cannot be answered by another; the control
plane refuses a replayed result itself (a hop takes one result, from its own service). An
entry signed the old way (the message alone, before routing was signed) is refused too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import NamedTuple

__all__ = [
    "ADDRESSEE_FIELD",
    "HOP_FIELD",
    "MESSAGE_FIELD",
    "SIGNATURE_FIELD",
    "STREAM_FIELD",
    "Refusal",
    "refusal",
    "signature",
    "signed_fields",
    "signing_key",
]

MESSAGE_FIELD = "message"
"""The stream entry's field holding the message's JSON."""
SIGNATURE_FIELD = "sig"
"""The stream entry's field holding the signature (beside `message`)."""
STREAM_FIELD = "stream"
"""The stream the entry was signed for."""
ADDRESSEE_FIELD = "to"
"""The message type (the service, or `control_plane`) the entry was signed for."""
HOP_FIELD = "hop"
"""The hop id the entry was signed for ("" for a message that names no hop)."""

_CONTEXT = b"stepwise.services message v1\x00"
_VERSION = "v2"  # v1 signed the message alone; its entries lack STREAM_FIELD.


class Refusal(NamedTuple):
    """Why a consumer refused an entry: a stable `reason` (the dead letter's) and a log line."""

    reason: str
    detail: str


def signing_key(token: str) -> bytes:
    """The key messages are signed with: derived from the token, never the token itself."""
    return hmac.new(token.encode("utf-8"), _CONTEXT, hashlib.sha256).digest()


def signature(key: bytes, *, stream: str, addressee: str, hop_id: str, payload: str) -> str:
    """The signature of a message's JSON bound to its stream, addressee and hop."""
    # JSON of a list, so no choice of field values can make two entries sign the same text.
    signed = json.dumps([_VERSION, stream, addressee, hop_id, payload], separators=(",", ":"))
    return hmac.new(key, signed.encode("utf-8"), hashlib.sha256).hexdigest()


def signed_fields(
    key: bytes | None, *, stream: str, addressee: str, hop_id: str, payload: str
) -> dict[str, str]:
    """The fields of a stream entry: the message, its routing, and (with a key) its signature."""
    fields = {
        MESSAGE_FIELD: payload,
        STREAM_FIELD: stream,
        ADDRESSEE_FIELD: addressee,
        HOP_FIELD: hop_id,
    }
    if key is not None:
        fields[SIGNATURE_FIELD] = signature(
            key, stream=stream, addressee=addressee, hop_id=hop_id, payload=payload
        )
    return fields


def refusal(key: bytes, fields: dict[str, str], *, stream: str) -> Refusal | None:
    """Why the entry `fields`, read from `stream`, must not be handled; None when it may be."""
    given = fields.get(SIGNATURE_FIELD)
    if given is None:
        return Refusal("missing signature", "it has no signature")
    signed_stream = fields.get(STREAM_FIELD)
    if signed_stream is None and _v1_verified(key, fields.get(MESSAGE_FIELD, ""), given):
        return Refusal(
            "old-format signature",
            "it was signed without its stream, addressee and hop (an older part of the "
            "system: upgrade every part to the same version)",
        )
    expected = signature(
        key,
        stream=signed_stream or "",
        addressee=fields.get(ADDRESSEE_FIELD, ""),
        hop_id=fields.get(HOP_FIELD, ""),
        payload=fields.get(MESSAGE_FIELD, ""),
    )
    if signed_stream is None or not hmac.compare_digest(expected, given):
        return Refusal(
            "wrong signature",
            "its signature is wrong (a part with another STEPWISE_API_TOKEN, or a message "
            "written to Redis by someone else)",
        )
    if signed_stream != stream:
        return Refusal(
            "signed for another stream",
            f"it was signed for {signed_stream} and copied into {stream} (a replay)",
        )
    return None


def _v1_verified(key: bytes, payload: str, given: str) -> bool:
    """Whether `given` signs `payload` the old way (the message alone), to name it so."""
    old = hmac.new(key, payload.encode("utf-8"), hashlib.sha256).hexdigest()
    return hmac.compare_digest(old, given)
