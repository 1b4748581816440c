"""StopReplica (from the controller): stop following or leading partitions, and delete their logs when
asked (a topic being deleted, a replica reassigned away)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.control import control_error, zookeeper_mode
from protocol.header import ErrorCode


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    error = control_error(ctx, req)
    results = {} if error else zookeeper_mode(ctx)[1].apply_stop_replica(req)
    return {"error_code": error, "partition_errors": [
        {"topic_name": t.topic_name, "partition_index": p.partition_index,
         "error_code": error or results.get((t.topic_name, p.partition_index), ErrorCode.NONE)}
        for t in req.topic_states for p in t.partition_states]}
