"""InitProducerId v0-5: hand-written request decoder and response encoder (every idempotent or transactional
producer's first request; the construct specs stay the reference the tests compare them with). v2+ are
flexible; v3+ carry the producer's current id and epoch (KIP-360)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.messages.wire import I16, I32, I64, Reader

if TYPE_CHECKING:
    from protocol.errors import DecodeLimits

FLEXIBLE_FROM = 2
PRODUCER_FROM = 3
TWO_PHASE_FROM = 6  # KIP-939, not served: decoded as the generic codec does


@dataclass(slots=True)
class InitProducerIdRequest:
    """An InitProducerId request's fields (absent ones at their defaults, as the generic codec gives them)."""

    transactional_id: str | None
    transaction_timeout_ms: int
    producer_id: int = -1
    producer_epoch: int = -1
    enable2_pc: bool = False
    keep_prepared_txn: bool = False


def decode_request(version: int, data: bytes, offset: int = 0, limits: DecodeLimits | None = None
                   ) -> InitProducerIdRequest:
    """InitProducerId request body at `offset`; raises DecodeError."""
    r = Reader(data, offset, limits)
    flex = version >= FLEXIBLE_FROM
    req = InitProducerIdRequest(r.string(flex, True), r.i32())
    if version >= PRODUCER_FROM:
        req.producer_id = r.i64()
        req.producer_epoch = r.i16()
    if version >= TWO_PHASE_FROM:
        req.enable2_pc = r.i8() != 0
        req.keep_prepared_txn = r.i8() != 0
    if flex:
        r.skip_tags()
    return req


def encode_response(version: int, body: Mapping[str, Any]) -> bytes:
    out = I32.pack(body.get("throttle_time_ms", 0)) + I16.pack(body.get("error_code", 0)) + \
        I64.pack(body.get("producer_id", 0)) + I16.pack(body.get("producer_epoch", 0))
    if version >= TWO_PHASE_FROM:
        out += I64.pack(body.get("ongoing_txn_producer_id", 0)) + I16.pack(body.get("ongoing_txn_producer_epoch", -1))
    return out + b"\x00" if version >= FLEXIBLE_FROM else out
