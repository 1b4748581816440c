"""AddOffsetsToTxn v0-4: hand-written request decoder and response encoder (the construct specs stay the
reference the tests compare them with). v3+ are flexible."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.messages.wire import I16, I32, Reader

if TYPE_CHECKING:
    from protocol.errors import DecodeLimits

FLEXIBLE_FROM = 3


@dataclass(slots=True)
class AddOffsetsToTxnRequest:
    """An AddOffsetsToTxn request's fields: the group whose offsets the transaction will commit."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


def decode_request(version: int, data: bytes, offset: int = 0, limits: DecodeLimits | None = None
                   ) -> AddOffsetsToTxnRequest:
    """AddOffsetsToTxn request body at `offset`; raises DecodeError."""
    r = Reader(data, offset, limits)
    flex = version >= FLEXIBLE_FROM
    req = AddOffsetsToTxnRequest(r.string(flex, False), r.i64(), r.i16(), r.string(flex, False))
    if flex:
        r.skip_tags()
    return req


def encode_response(version: int, body: Mapping[str, Any]) -> bytes:
    out = I32.pack(body.get("throttle_time_ms", 0)) + I16.pack(body.get("error_code", 0))
    return out + b"\x00" if version >= FLEXIBLE_FROM else out
