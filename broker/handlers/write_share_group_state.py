"""WriteShareGroupState (the share coordinator's, KIP-932): a partition leader writes what changed in a share
partition (acknowledged, released and archived records with their delivery counts, the start offset; v1: the
delivery complete count)."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.share_state_requests import answer
from coordinator.share_coordinator import batches_in


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    service = ctx.broker.share_coordinator
    return await answer(ctx, req, lambda key, p: service.write(
        key, p.state_epoch, p.leader_epoch, p.start_offset, p.delivery_complete_count, batches_in(p.state_batches)),
        lambda _outcome: {})
