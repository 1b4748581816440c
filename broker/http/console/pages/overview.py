"""Overview: the cluster (id, controller, brokers), this broker's version profile, listeners and HTTP services,
topics and partitions, and the bytes in and out per second now (this broker's metrics)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute

from broker.http.console.app import Console, Ctx


def routes(console: Console) -> list[BaseRoute]:
    async def overview(ctx: Ctx) -> Response:
        broker = console.broker
        cluster = await console.admin.metadata()
        metrics = console.instruments.metrics
        rate_in, rate_out = console.rates.update(sum(metrics.bytes_in.values()), sum(metrics.bytes_out.values()))
        topics = [t for t in cluster.topics.values() if not t.internal]
        listeners = [{"name": li.name, "bound": f"{li.host}:{li.port}",
                      "advertised": f"{li.advertised_host}:{li.advertised_port}" if li.advertised_host else "",
                      "protocol": broker.config.listener_protocol(li)} for li in broker.config.listeners]
        bound = [f"{e.bound_host}:{e.bound_port}" for e in broker.endpoints]
        return console.render(
            ctx, "overview.html", cluster=cluster, topics=topics,
            partitions=sum(len(t.partitions) for t in topics),
            internal=[t for t in cluster.topics.values() if t.internal],
            offline=sum(1 for t in topics for p in t.partitions if p.leader < 0),
            under_replicated=sum(1 for t in topics for p in t.partitions if len(p.isr) < len(p.replicas)),
            rate_in=rate_in, rate_out=rate_out, release=broker.versions.release, listeners=listeners,
            bound=bound, mode="ZooKeeper cluster" if broker.cluster.replicated else "single broker",
            clock="virtual" if broker.clock.virtual else "wall", now_ms=broker.now_ms(),
            registry=console.registry.url if console.registry is not None else None)

    return [console.page("/", overview)]
