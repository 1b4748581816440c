"""DeleteShareGroupState (the share coordinator's, KIP-932): the group coordinator deletes share partitions'
state with the group or its offsets."""

from __future__ import annotations

from typing import Any

from broker.handlers.context import RequestContext
from broker.handlers.share_state_requests import answer


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    service = ctx.broker.share_coordinator
    return await answer(ctx, req, lambda key, _p: service.delete(key), lambda _outcome: {})
