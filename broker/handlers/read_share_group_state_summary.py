"""ReadShareGroupStateSummary (the share coordinator's, KIP-932): the start offset and epochs of share
partitions (DescribeShareGroupOffsets); v1 (Kafka 4.2+, KIP-1226) the delivery complete count too. An
uninitialized share partition answers start offset -1, no error."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.share_state_requests import answer
from coordinator.share_coordinator import UNINITIALIZED_START_OFFSET, UNKNOWN, Outcome


def _fields(outcome: Outcome) -> dict[str, Any]:
    state = outcome.state
    if state is None:
        return {"state_epoch": 0, "leader_epoch": 0, "delivery_complete_count": UNKNOWN,
                "start_offset": UNINITIALIZED_START_OFFSET if not outcome.error else 0}
    return {"state_epoch": state.state_epoch, "leader_epoch": state.leader_epoch, "start_offset": state.start_offset,
            "delivery_complete_count": state.delivery_complete_count}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    service = ctx.broker.share_coordinator
    return await answer(ctx, req, lambda key, _p: service.summary(key), _fields)
