"""WriteTxnMarkers: the transaction coordinator's COMMIT/ABORT control batches for each partition of a
transaction. `write_markers` is the handler's core; the coordinator of this broker calls it in-process."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import trio

from broker.dispatch import RequestContext
from broker.internal_topics import partition_for
from broker.markers import append_marker
from broker.topics import OFFSETS_TOPIC
from protocol.header import ErrorCode

# (producer id, producer epoch, commit, coordinator epoch, {topic: [partition indexes]})
Marker = tuple[int, int, bool, int, Mapping[str, Sequence[int]]]


async def write_markers(state: Any, markers: Sequence[Marker]) -> dict[tuple[str, int], ErrorCode]:
    """Append each marker and wait until they are durable; the errors by partition (for one producer)."""
    results: dict[tuple[str, int], ErrorCode] = {}
    durable: list[tuple[Any, int, tuple[str, int]]] = []
    now = state.now_ms()
    for producer_id, epoch, commit, coordinator_epoch, topics in markers:
        for name, indexes in topics.items():
            topic = state.topics.get(name)
            for index in indexes:
                if topic is None or not 0 <= index < len(topic.partitions):
                    results[(name, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                partition = topic.partitions[index]
                error, offset = append_marker(state, partition, producer_id, epoch, coordinator_epoch, commit, now)
                results[(name, index)] = error
                if error == ErrorCode.NONE:
                    durable.append((partition.log, offset, (name, index)))
                    if name == OFFSETS_TOPIC:
                        # Transactional offset commits become visible (or vanish) with the marker.
                        count = len(topic.partitions)
                        state.groups.coordinator.complete_txn(
                            producer_id, commit, lambda g, i=index, n=count: partition_for(g, n) == i)

    async def wait(plog: Any, offset: int, key: tuple[str, int]) -> None:
        try:
            await state.flusher.wait_durable(plog, offset)
        except OSError:
            results[key] = ErrorCode.KAFKA_STORAGE_ERROR

    if len(durable) == 1:
        await wait(*durable[0])
    elif durable:
        async with trio.open_nursery() as nursery:
            for item in durable:
                nursery.start_soon(wait, *item)
    return results


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    out = []
    for m in req.markers:
        topics = {t.name: list(t.partition_indexes) for t in m.topics}
        results = await write_markers(ctx.state, [(m.producer_id, m.producer_epoch, bool(m.transaction_result),
                                                   m.coordinator_epoch, topics)])
        out.append({"producer_id": m.producer_id, "topics": [
            {"name": name, "partitions": [{"partition_index": i, "error_code": results[(name, i)]}
                                          for i in indexes]}
            for name, indexes in topics.items()]})
    return {"markers": out}
