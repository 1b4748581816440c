"""Topics: every topic with its partitions, messages and size; one topic's partitions (leader, replicas, ISR,
log start and end, size) and configs; create, delete, add partitions (CreateTopics, DeleteTopics,
CreatePartitions to the controller: Kafka's validation and error codes)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute

from broker.http.console.admin import EARLIEST, LATEST, AdminError, ClusterMeta
from broker.http.console.app import Console, Ctx
from broker.http.stack import HttpError


async def partition_rows(console: Console, cluster: ClusterMeta, names: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each topic's partitions with their log start and end offsets and the leader replica's size."""
    tps = [(name, p.index) for name in names for p in cluster.topics[name].partitions]
    starts = await console.admin.offsets(cluster, tps, EARLIEST)
    ends = await console.admin.offsets(cluster, tps, LATEST)
    sizes = await console.admin.log_sizes(cluster)
    out: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        rows = []
        for p in cluster.topics[name].partitions:
            start, end = starts.get((name, p.index)), ends.get((name, p.index))
            rows.append({"partition": p, "start": start, "end": end,
                         "messages": end - start if start is not None and end is not None else None,
                         "size": sizes.get((name, p.index, p.leader))})
        out[name] = rows
    return out


def routes(console: Console) -> list[BaseRoute]:
    async def topics(ctx: Ctx, error: str = "", status: int = 200) -> Response:
        cluster = await console.admin.metadata()
        internal = ctx.arg("internal") == "1"
        names = [n for n, t in cluster.topics.items() if internal or not t.internal]
        rows = await partition_rows(console, cluster, names)
        summary = [{"topic": cluster.topics[n], "partitions": len(rows[n]),
                    "messages": sum(r["messages"] or 0 for r in rows[n]),
                    "size": sum(r["size"] or 0 for r in rows[n]),
                    "replication": len(cluster.topics[n].partitions[0].replicas) if rows[n] else 0,
                    "under_replicated": sum(1 for r in rows[n]
                                            if len(r["partition"].isr) < len(r["partition"].replicas))}
                   for n in names]
        return console.render(ctx, "topics.html", status=status, summary=summary, internal=internal, error=error,
                              form=ctx.form, brokers=len(cluster.brokers))

    async def create(ctx: Ctx) -> Response:
        name = ctx.arg("name").strip()
        try:
            partitions = _int(ctx.arg("partitions", "1"), "partitions")
            replication = _int(ctx.arg("replication_factor", "1"), "replication factor")
            configs = _configs(ctx.arg("configs"))
            await console.admin.create_topic(name, partitions, replication, configs)
        except AdminError as exc:
            return await topics(ctx, str(exc), 400)
        return console.redirect(f"/topics/{name}", f"Created topic {name}.")

    async def topic(ctx: Ctx, error: str = "", status: int = 200) -> Response:
        name = ctx.request.path_params["topic"]
        cluster = await console.admin.metadata()
        meta = cluster.topics.get(name)
        if meta is None or meta.error:
            raise HttpError(404, f"No topic {name}" + (f" ({meta.error})" if meta is not None else "") + ".")
        rows = (await partition_rows(console, cluster, [name]))[name]
        configs = await console.admin.topic_configs(name)
        return console.render(ctx, "topic.html", status=status, topic=meta, rows=rows, configs=configs,
                              error=error, messages=sum(r["messages"] or 0 for r in rows))

    async def delete(ctx: Ctx) -> Response:
        name = ctx.request.path_params["topic"]
        try:
            await console.admin.delete_topic(name)
        except AdminError as exc:
            return await topic(ctx, str(exc), 400)
        return console.redirect("/topics", f"Deleted topic {name}.")

    async def add_partitions(ctx: Ctx) -> Response:
        name = ctx.request.path_params["topic"]
        try:
            await console.admin.create_partitions(name, _int(ctx.arg("count"), "partition count"))
        except AdminError as exc:
            return await topic(ctx, str(exc), 400)
        return console.redirect(f"/topics/{name}", f"{name} now has {ctx.arg('count')} partitions.")

    return [console.page("/topics", topics), console.page("/topics", create, methods=("POST",)),
            console.page("/topics/{topic}", topic), console.page("/topics/{topic}/delete", delete, methods=("POST",)),
            console.page("/topics/{topic}/partitions", add_partitions, methods=("POST",))]


def _int(text: str, what: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise AdminError(f"The {what} is a whole number, not {text!r}.") from None


def _configs(text: str) -> dict[str, str]:
    """`name=value` lines (blank lines and # comments skipped)."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise AdminError(f"A config is name=value, not {line!r}.")
        out[key.strip()] = value.strip()
    return out
