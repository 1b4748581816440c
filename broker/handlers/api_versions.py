"""ApiVersions: the version ranges and features of the broker's version profile (broker/config/kafka_versions.py:
the Kafka release of --kafka-version, 3.9 by default); KIP-511 for unknown versions, KIP-1242 (v5) for a
client that reached another cluster or node than it meant to."""

from __future__ import annotations

import re
from typing import Any

from broker.config.kafka_versions import VersionProfile
from broker.handlers.context import RequestContext
from protocol.header import ApiKey, ErrorCode

# KIP-511: client software name and version must match this when given (ApiVersions v3+).
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def api_keys(versions: VersionProfile) -> list[dict[str, int]]:
    return [{"api_key": key, "min_version": lo, "max_version": hi}
            for key, (lo, hi) in sorted(versions.advertised.items())]


def unsupported_version_body(versions: VersionProfile) -> dict[str, Any]:
    """The v0 answer to an ApiVersions version we do not know: UNSUPPORTED_VERSION with the versions of
    ApiVersions itself, so the client retries with one of those (KIP-511; Kafka lists no other API)."""
    lo, hi = versions.advertised[ApiKey.API_VERSIONS]
    return {"error_code": ErrorCode.UNSUPPORTED_VERSION,
            "api_keys": [{"api_key": ApiKey.API_VERSIONS, "min_version": lo, "max_version": hi}]}


def client_software(version: int, req: Any) -> str | None:
    """"name/version" of the client's software (v3+), for the protocol trace."""
    return f"{req.client_software_name}/{req.client_software_version}" if version >= 3 else None


def _error(error: ErrorCode) -> dict[str, Any]:
    """Kafka's error answer: no versions, no features (the client must fix its request, or go elsewhere)."""
    return {"error_code": error, "api_keys": [], "throttle_time_ms": 0, "supported_features": [],
            "finalized_features_epoch": -1, "finalized_features": [], "zk_migration_ready": False}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    if version >= 3 and not (
        _SOFTWARE.match(req.client_software_name or "") and _SOFTWARE.match(req.client_software_version or "")
    ):
        return _error(ErrorCode.INVALID_REQUEST)
    if version >= 5 and (req.cluster_id is not None or req.node_id != -1):
        # KIP-1242: a client names the cluster and node it means to reach (both or neither); another
        # cluster or node behind this address (a reused address, a moved broker) makes it bootstrap again.
        if req.cluster_id is None or req.node_id == -1:
            return _error(ErrorCode.INVALID_REQUEST)
        if req.cluster_id != ctx.broker.cluster_id or req.node_id != ctx.broker.node_id:
            return _error(ErrorCode.REBOOTSTRAP_REQUIRED)
    return {"error_code": ErrorCode.NONE, "api_keys": api_keys(ctx.broker.versions), "throttle_time_ms": 0,
            **ctx.broker.features.api_versions_fields(), "zk_migration_ready": False}
