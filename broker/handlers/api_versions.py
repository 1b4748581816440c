"""ApiVersions: the version ranges and features of the broker's version profile (broker/config/kafka_versions.py:
the Kafka release of --kafka-version, 3.9 by default); KIP-511 for unknown versions."""

from __future__ import annotations

import re
from typing import Any

from broker.config.kafka_versions import VersionProfile
from broker.handlers.context import RequestContext
from protocol.header import ErrorCode

# KIP-511: client software name and version must match this when given (ApiVersions v3+).
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def api_keys(versions: VersionProfile) -> list[dict[str, int]]:
    return [{"api_key": key, "min_version": lo, "max_version": hi}
            for key, (lo, hi) in sorted(versions.advertised.items())]


def unsupported_version_body(versions: VersionProfile) -> dict[str, Any]:
    """The v0 answer to an ApiVersions version we do not know, listing what we do support."""
    return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": api_keys(versions)}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    error = ErrorCode.NONE
    if ctx.header.api_version >= 3 and not (
        _SOFTWARE.match(req.client_software_name or "") and _SOFTWARE.match(req.client_software_version or "")
    ):
        error = ErrorCode.INVALID_REQUEST
    versions = ctx.broker.versions
    return {"error_code": error, "api_keys": api_keys(versions), "throttle_time_ms": 0,
            **versions.features, "zk_migration_ready": False}
