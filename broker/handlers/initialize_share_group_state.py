"""InitializeShareGroupState (the share coordinator's, KIP-932): the group coordinator starts a share
partition's state, at a start offset (-1: share.auto.offset.reset decides at the leader) and a state epoch."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.share_state_requests import answer


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    service = ctx.broker.share_coordinator
    return await answer(ctx, req, lambda key, p: service.initialize(key, p.state_epoch, p.start_offset),
                        lambda _outcome: {})
