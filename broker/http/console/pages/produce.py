"""Produce one message (key, value, headers, partition) with acks=all to the partition's leader: a Produce
request, so the broker checks it as it checks any client's. Without a partition, a keyed message goes where
Kafka's default partitioner puts it, one without a key to a random partition."""

from __future__ import annotations

import random
import time

from starlette.responses import Response
from starlette.routing import BaseRoute

from broker.http.console.admin import AdminError
from broker.http.console.app import Console, Ctx
from broker.http.console.partitioner import partition_for_key
from broker.http.stack import HttpError
from protocol import records as wire


def parse_headers(text: str) -> list[tuple[str, bytes]]:
    """`name: value` (or `name=value`) a line."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        colon, equals = line.find(":"), line.find("=")
        cut = min(i for i in (colon, equals) if i >= 0) if colon >= 0 or equals >= 0 else -1
        if cut <= 0:
            raise AdminError(f"A header is name: value, not {line!r}.")
        out.append((line[:cut].strip(), line[cut + 1:].strip().encode()))
    return out


def routes(console: Console) -> list[BaseRoute]:
    async def form(ctx: Ctx, error: str = "", status: int = 200) -> Response:
        topic = ctx.request.path_params["topic"]
        cluster = await console.admin.metadata([topic])
        meta = cluster.topics.get(topic)
        if meta is None or meta.error:
            raise HttpError(404, f"No topic {topic}.")
        return console.render(ctx, "produce.html", status=status, topic=meta, error=error, form=ctx.form,
                              partition=ctx.arg("partition"))

    async def produce(ctx: Ctx) -> Response:
        topic = ctx.request.path_params["topic"]
        try:
            cluster = await console.admin.metadata([topic])
            meta = cluster.topics.get(topic)
            if meta is None or meta.error or not meta.partitions:
                raise AdminError(f"No topic {topic}.")
            key = ctx.form.get("key", "").encode() if ctx.form.get("key") else None
            chosen = ctx.form.get("partition", "").strip()
            if chosen:
                if not chosen.isdigit():
                    raise AdminError(f"The partition is a number, not {chosen!r}.")
                partition = int(chosen)
            elif key is not None:
                partition = partition_for_key(key, len(meta.partitions))
            else:
                partition = random.randrange(len(meta.partitions))
            record = wire.Record(0, 0, key, ctx.form.get("value", "").replace("\r\n", "\n").encode(),
                                 parse_headers(ctx.form.get("headers", "")))
            batch = wire.build_batch([record], base_timestamp=int(time.time() * 1000))
            offset = await console.admin.produce(cluster, topic, partition, batch)
        except AdminError as exc:
            return await form(ctx, str(exc), 400)
        return console.redirect(f"/topics/{topic}/messages?partition={partition}&from=offset&offset={offset}",
                                f"Produced to {topic}-{partition} at offset {offset}.")

    return [console.page("/topics/{topic}/produce", form),
            console.page("/topics/{topic}/produce", produce, methods=("POST",))]
