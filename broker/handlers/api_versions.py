"""ApiVersions: the version ranges of every API in the dispatch table (KIP-511 for unknown versions)."""

from __future__ import annotations

import re
from typing import Any

from broker.dispatch import RequestContext, table
from protocol.header import ErrorCode

# KIP-511: client software name and version must match this when given (ApiVersions v3+).
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def api_keys() -> list[dict[str, int]]:
    return [{"api_key": key, "min_version": lo, "max_version": hi}
            for key, (lo, hi) in sorted((k, api.advertised_range) for k, api in table().items())]


def unsupported_version_body() -> dict[str, Any]:
    """The v0 answer to an ApiVersions version we do not know, listing what we do support."""
    return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": api_keys()}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    error = ErrorCode.NONE
    if ctx.header.api_version >= 3 and not (
        _SOFTWARE.match(req.client_software_name or "") and _SOFTWARE.match(req.client_software_version or "")
    ):
        error = ErrorCode.INVALID_REQUEST
    return {
        "error_code": error,
        "api_keys": api_keys(),
        "throttle_time_ms": 0,
        "supported_features": [],
        "finalized_features_epoch": -1,
        "finalized_features": [],
        "zk_migration_ready": False,
    }
