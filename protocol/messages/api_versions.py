"""ApiVersions v0-5: hand-written request decoder and response encoder, so that a broker's first answer needs
neither construct nor the JSON definitions (startup time). A response with feature fields set (Kafka 4
profiles) goes through the generic codec."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.messages.wire import I16, I32, Reader, count

if TYPE_CHECKING:
    from protocol.errors import DecodeLimits

FLEXIBLE_FROM = 3
_ENTRY = I16  # api_key, min_version, max_version: three INT16s


@dataclass(slots=True)
class ApiVersionsRequest:
    """An ApiVersions request's fields (v3+: the client's software; v5: the cluster and node it means)."""

    client_software_name: str | None = None
    client_software_version: str | None = None
    cluster_id: str | None = None  # v5 (KIP-1242): the cluster and node the client means to reach
    node_id: int = -1


def decode_request(version: int, data: bytes, offset: int = 0, limits: DecodeLimits | None = None
                   ) -> ApiVersionsRequest:
    req = ApiVersionsRequest()
    if version >= FLEXIBLE_FROM:
        r = Reader(data, offset, limits)
        req.client_software_name = r.string(True, False)
        req.client_software_version = r.string(True, False)
        if version >= 5:
            req.cluster_id = r.string(True, True)
            req.node_id = r.i32()
        r.skip_tags()
    return req


def _needs_generic(body: Mapping[str, Any]) -> bool:
    return bool(body.get("supported_features") or body.get("finalized_features") or body.get("zk_migration_ready")
                or body.get("finalized_features_epoch", -1) != -1)


def encode_response(version: int, body: Mapping[str, Any]) -> bytes:
    flex = version >= FLEXIBLE_FROM
    if flex and _needs_generic(body):
        from protocol.schema import message

        return message("ApiVersionsResponse").encode(version, body)
    api_keys = body.get("api_keys") or ()  # the generic codec's default: an empty array
    out = [I16.pack(body.get("error_code", 0)), count(len(api_keys), flex)]
    tail = b"\x00" if flex else b""
    for entry in api_keys:
        out.append(_ENTRY.pack(entry["api_key"]) + _ENTRY.pack(entry["min_version"]) +
                   _ENTRY.pack(entry["max_version"]) + tail)
    if version >= 1:
        out.append(I32.pack(body.get("throttle_time_ms", 0)))
    out.append(tail)
    return b"".join(out)
