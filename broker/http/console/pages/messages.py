"""Messages of a topic or one partition: from an offset, a timestamp or the newest; key, value and headers as
text, JSON, hex or decoded through the schema registry; transaction markers and aborted records marked (Fetch
read_uncommitted at each partition's leader). The live tail: server-sent events of the records produced from now
on, a long-polling Fetch per partition on a connection of its own."""

from __future__ import annotations

import datetime
import logging

import trio
from starlette.responses import Response
from starlette.routing import BaseRoute

from broker.http.console.admin import EARLIEST, LATEST, AdminError, ClusterMeta, Session
from broker.http.console.app import Console, Ctx
from broker.http.console.records_view import FORMATS, ShownRecord, next_offset, shown_records
from broker.http.console.sse import Emit, EventStream
from broker.http.stack import HttpError
from protocol.header import ErrorCode

log = logging.getLogger(__name__)

MAX_LIMIT = 500
FETCH_BYTES = 1024 * 1024
MAX_FETCHES = 20  # per partition and page
TAIL_WAIT_MS = 1000
_LEADER_MOVED = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH,
                 ErrorCode.LEADER_NOT_AVAILABLE}


def parse_timestamp(text: str) -> int:
    """Milliseconds since the epoch, or a UTC date and time ("2026-01-31 12:00:00", ISO 8601)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text.replace(" ", "T"))
    except ValueError:
        raise AdminError(f"A timestamp is milliseconds since the epoch or a UTC date and time, not {text!r}.") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


async def read_partition(console: Console, cluster: ClusterMeta, topic: str, partition: int, start: int, limit: int,
                         wanted: str) -> list[ShownRecord]:
    """Up to `limit` records of one partition from offset `start`."""
    rows: list[ShownRecord] = []
    offset = start
    for _ in range(MAX_FETCHES):
        result = await console.admin.fetch(cluster, topic, partition, offset, FETCH_BYTES)
        data = bytes(result.records or b"")
        # Kafka lists aborted transactions in read_committed answers only (up to the last stable offset)
        aborted = await console.admin.aborted(cluster, topic, partition, offset, FETCH_BYTES) if data else []
        rows += shown_records(data, aborted, result.last_stable_offset, start=offset, limit=limit - len(rows),
                              wanted=wanted, decoder=console.decoder)
        following = next_offset(data)
        if len(rows) >= limit or following is None or following >= result.high_watermark:
            break
        offset = following
    return rows


def routes(console: Console) -> list[BaseRoute]:
    async def messages(ctx: Ctx) -> Response:
        topic = ctx.request.path_params["topic"]
        cluster = await console.admin.metadata()
        meta = cluster.topics.get(topic)
        if meta is None or meta.error:
            raise HttpError(404, f"No topic {topic}.")
        choice = ctx.arg("partition")
        partitions = [p.index for p in meta.partitions]
        if choice:
            if not choice.isdigit() or int(choice) not in partitions:
                raise HttpError(400, f"{topic} has no partition {choice}.")
            partitions = [int(choice)]
        wanted = ctx.arg("format", "auto")
        if wanted not in FORMATS:
            raise HttpError(400, f"The format is one of {', '.join(FORMATS)}.")
        mode = ctx.arg("from", "newest")
        limit = min(max(_int(ctx.arg("limit", "50")), 1), MAX_LIMIT)
        error = ""
        rows: list[tuple[int, ShownRecord]] = []
        tps = [(topic, p) for p in partitions]
        try:
            if mode == "offset":
                wanted_offset = _int(ctx.arg("offset", "0"))
                starts = dict.fromkeys(tps, wanted_offset)
            elif mode == "timestamp":
                found = await console.admin.offsets(cluster, tps, parse_timestamp(ctx.arg("timestamp")))
                ends = await console.admin.offsets(cluster, tps, LATEST)
                starts = {tp: found.get(tp) if found.get(tp) is not None else ends.get(tp) for tp in tps}
            elif mode == "newest":
                firsts = await console.admin.offsets(cluster, tps, EARLIEST)
                ends = await console.admin.offsets(cluster, tps, LATEST)
                starts = {tp: max(firsts.get(tp) or 0, (ends.get(tp) or 0) - limit) for tp in tps}
            else:
                raise AdminError("Read from the newest, an offset or a timestamp.")
            for tp, start in starts.items():
                if start is None:
                    continue
                rows += [(tp[1], r) for r in await read_partition(console, cluster, topic, tp[1], start, limit,
                                                                  wanted)]
        except AdminError as exc:
            error = str(exc)
        if mode == "newest":
            rows.sort(key=lambda pr: (pr[1].timestamp, pr[1].offset), reverse=True)
        else:
            rows.sort(key=lambda pr: (pr[1].timestamp, pr[0], pr[1].offset))
        return console.render(ctx, "messages.html", status=400 if error else 200, topic=meta, rows=rows[:limit],
                              error=error, mode=mode, limit=limit, format=wanted, formats=FORMATS, choice=choice,
                              offset=ctx.arg("offset", "0"), timestamp=ctx.arg("timestamp"),
                              tail=ctx.arg("tail") == "1")

    async def tail(ctx: Ctx) -> Response:
        topic = ctx.request.path_params["topic"]
        choice = ctx.arg("partition")
        wanted = ctx.arg("format", "auto")
        if wanted not in FORMATS:
            raise HttpError(400, f"The format is one of {', '.join(FORMATS)}.")
        cluster = await console.admin.metadata([topic])
        meta = cluster.topics.get(topic)
        if meta is None or meta.error:
            raise HttpError(404, f"No topic {topic}.")
        partitions = [p.index for p in meta.partitions if not choice or str(p.index) == choice]
        if not partitions:
            raise HttpError(400, f"{topic} has no partition {choice}.")
        ends = await console.admin.offsets(cluster, [(topic, p) for p in partitions], LATEST)
        row = console.templates.get_template("record_row.html")

        async def produce(emit: Emit) -> None:
            async with trio.open_nursery() as nursery:
                for p in partitions:
                    nursery.start_soon(follow, emit, p, ends.get((topic, p)) or 0)

        async def follow(emit: Emit, partition: int, offset: int) -> None:
            session: Session | None = None
            try:
                while True:
                    if session is None:
                        current = await console.admin.metadata([topic])
                        leader = current.partition(topic, partition).leader
                        if leader < 0:
                            await trio.sleep(1)
                            continue
                        session = console.admin.session(leader)
                    try:
                        result = await session.fetch(topic, partition, offset, max_wait_ms=TAIL_WAIT_MS,
                                                     max_bytes=FETCH_BYTES)
                    except AdminError as exc:
                        if exc.error in _LEADER_MOVED or exc.error is None:
                            await session.aclose()
                            session = None
                            await trio.sleep(0.5)
                            continue
                        raise
                    data = bytes(result.records or b"")
                    aborted = await session.aborted(topic, partition, offset, FETCH_BYTES) if data else []
                    for record in shown_records(data, aborted, result.last_stable_offset, start=offset,
                                                limit=MAX_LIMIT, wanted=wanted, decoder=console.decoder):
                        await emit("row", row.render(partition=partition, r=record, topic=topic))
                    offset = max(offset, next_offset(data) or offset)
            except AdminError as exc:
                await emit("failure", str(exc))
            finally:
                if session is not None:
                    with trio.CancelScope(shield=True):
                        await session.aclose()

        return EventStream(produce)

    return [console.page("/topics/{topic}/messages", messages),
            console.page("/topics/{topic}/tail", tail, streaming=True)]


def _int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise HttpError(400, f"A whole number, not {text!r}.") from None

