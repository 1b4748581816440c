"""EndTxn v0-5: hand-written request decoder and response encoder (a transaction's last request; the construct
specs stay the reference the tests compare them with). v3+ are flexible; v5 (KIP-890, transaction version 2)
answers the producer id and epoch of the next transaction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.messages.wire import I16, I32, I64, Reader

if TYPE_CHECKING:
    from protocol.errors import DecodeLimits

FLEXIBLE_FROM = 3
PRODUCER_IN_ANSWER_FROM = 5


@dataclass(slots=True)
class EndTxnRequest:
    """An EndTxn request's fields."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


def decode_request(version: int, data: bytes, offset: int = 0, limits: DecodeLimits | None = None) -> EndTxnRequest:
    """EndTxn request body at `offset`; raises DecodeError."""
    r = Reader(data, offset, limits)
    flex = version >= FLEXIBLE_FROM
    req = EndTxnRequest(r.string(flex, False), r.i64(), r.i16(), r.i8() != 0)
    if flex:
        r.skip_tags()
    return req


def encode_response(version: int, body: Mapping[str, Any]) -> bytes:
    out = I32.pack(body.get("throttle_time_ms", 0)) + I16.pack(body.get("error_code", 0))
    if version >= PRODUCER_IN_ANSWER_FROM:
        out += I64.pack(body.get("producer_id", -1)) + I16.pack(body.get("producer_epoch", -1))
    return out + b"\x00" if version >= FLEXIBLE_FROM else out
