"""IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT on a topic's overrides (AlterConfigs' rules)."""

from __future__ import annotations

from typing import Any

from broker.handlers.alter_configs import alter
from broker.handlers.context import RequestContext


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    return await alter(ctx, req, incremental=True)
