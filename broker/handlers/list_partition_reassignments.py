"""ListPartitionReassignments: on one broker no reassignment is ever in progress."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "topics": []}
