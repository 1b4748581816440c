"""UpdateFeatures: finalized feature levels changed (or, validate_only, checked) as the profile's release does
it (broker/services/features.py). ALTER on the cluster, as Kafka authorizes it."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.security.access import AclOperation, cluster_authorized
from broker.services.features import FeatureUpdate, UpgradeType
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    version = ctx.header.api_version
    if not cluster_authorized(ctx, AclOperation.ALTER):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {"throttle_time_ms": 0, "error_code": error, "error_message": None,
                "results": [{"feature": u.feature, "error_code": error, "error_message": None}
                            for u in req.feature_updates]}
    # v0 has allow_downgrade instead of an upgrade type: Kafka 4 reads it as an upgrade (recorded), Kafka 3.9
    # as a safe downgrade when set.
    kraft = ctx.broker.features.kraft
    updates = [FeatureUpdate(u.feature, u.max_version_level,
                             u.upgrade_type if version >= 1 else
                             UpgradeType.SAFE_DOWNGRADE if u.allow_downgrade and not kraft else UpgradeType.UPGRADE)
               for u in req.feature_updates]
    outcome = ctx.broker.features.update(updates, version >= 1 and req.validate_only)
    return {"throttle_time_ms": 0, "error_code": outcome.error, "error_message": outcome.message,
            "results": [{"feature": name, "error_code": error, "error_message": "NONE" if error == 0 else message}
                        for name, error, message in outcome.results]}
