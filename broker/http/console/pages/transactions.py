"""Transactions: the ongoing ones with their partitions, state, age and timeout (ListTransactions to every
broker, DescribeTransactions to their coordinators), and the producers of each partition (DescribeProducers to
the leaders): id, epoch, last sequence and timestamp, the first offset of an open transaction."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute

from broker.http.console.app import Console, Ctx

OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort")


def routes(console: Console) -> list[BaseRoute]:
    async def transactions(ctx: Ctx) -> Response:
        cluster = await console.admin.metadata()
        everything = ctx.arg("all") == "1"
        found = await console.admin.transactions(cluster)
        shown = [t for t in found if everything or t.state in OPEN_STATES]
        tps = [(name, p.index) for name, t in cluster.topics.items() if not t.internal for p in t.partitions]
        producers = await console.admin.producers(cluster, tps)
        return console.render(ctx, "transactions.html", transactions=shown, everything=everything,
                              total=len(found), now_ms=console.broker.now_ms(),
                              producers=[(tp, p) for tp, ps in sorted(producers.items()) for p in ps])

    return [console.page("/transactions", transactions)]
