"""ReadShareGroupState (the share coordinator's, KIP-932): a partition leader reads a share partition's state
at its first use (the start offset, state epoch and the state batches of records in flight)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.share_state_requests import answer
from coordinator.share_coordinator import Outcome


def _fields(outcome: Outcome) -> dict[str, Any]:
    state = outcome.state
    if state is None:
        return {"state_epoch": 0, "start_offset": 0, "state_batches": []}
    return {"state_epoch": state.state_epoch, "start_offset": state.start_offset, "state_batches": [
        {"first_offset": b.first_offset, "last_offset": b.last_offset, "delivery_state": b.delivery_state,
         "delivery_count": b.delivery_count} for b in state.batches]}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    service = ctx.broker.share_coordinator
    return await answer(ctx, req, lambda key, p: service.read(key, p.leader_epoch), _fields)
