"""ApiVersions: the version ranges and features of the broker's version profile (broker/config/kafka_versions.py:
the Kafka release of --kafka-version, 3.9 by default); KIP-511 for unknown versions."""

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


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if ctx.header.api_version >= 3 and not (
        _SOFTWARE.match(req.client_software_name or "") and _SOFTWARE.match(req.client_software_version or "")
    ):
        # Kafka's error answer: no versions, no features (the client must fix its request first).
        return {"error_code": ErrorCode.INVALID_REQUEST, "api_keys": [], "throttle_time_ms": 0,
                "supported_features": [], "finalized_features_epoch": -1, "finalized_features": [],
                "zk_migration_ready": False}
    versions = ctx.broker.versions
    return {"error_code": ErrorCode.NONE, "api_keys": api_keys(versions), "throttle_time_ms": 0,
            **versions.features, "zk_migration_ready": False}
