"""Transaction markers across the cluster (Kafka's TransactionMarkerChannelManager): the transaction
coordinator's COMMIT/ABORT markers go to each partition's leader, this broker's own partitions through
services.marker_writer, the others with WriteTxnMarkers over one connection per broker. A partition without a
live leader, or whose leader moved meanwhile (NOT_LEADER_OR_FOLLOWER), is answered with an error the
coordinator retries after the metadata has changed."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence

import trio

from broker.cluster.client import BrokerClient, BrokerUnavailable
from broker.cluster.metadata_cache import MetadataCache
from broker.services.marker_writer import Marker, MarkerWriter
from broker.services.topics import TopicManager
from protocol.header import ApiKey, ErrorCode

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_VERSION = 1


class MarkerChannel:
    def __init__(self, node_id: int, topics: TopicManager, local: MarkerWriter, metadata: MetadataCache,
                 timeout_s: float) -> None:
        self.node_id = node_id
        self.topics = topics
        self.local = local
        self.metadata = metadata
        self.timeout_s = timeout_s
        self._clients: dict[int, BrokerClient] = {}

    async def write(self, markers: Sequence[Marker]) -> dict[tuple[str, int], ErrorCode]:
        results: dict[tuple[str, int], ErrorCode] = {}
        local: list[Marker] = []
        remote: dict[int, list[Marker]] = defaultdict(list)
        for producer_id, epoch, commit, coordinator_epoch, topics in markers:
            here: dict[str, list[int]] = defaultdict(list)
            there: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
            for name, indexes in topics.items():
                for index in indexes:
                    partition = self.topics.partition(name, index)
                    leader = partition.leader if partition is not None else -1
                    if partition is None:
                        results[(name, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    elif leader == self.node_id:
                        here[name].append(index)
                    elif leader < 0 or not self.metadata.is_alive(leader):
                        results[(name, index)] = ErrorCode.NOT_LEADER_OR_FOLLOWER  # retried once it has one
                    else:
                        there[leader][name].append(index)
            if here:
                local.append((producer_id, epoch, commit, coordinator_epoch, dict(here)))
            for leader, by_topic in there.items():
                remote[leader].append((producer_id, epoch, commit, coordinator_epoch, dict(by_topic)))

        async def send(leader: int, batch: list[Marker]) -> None:
            results.update(await self._send(leader, batch))

        async with trio.open_nursery() as nursery:
            for leader, batch in remote.items():
                nursery.start_soon(send, leader, batch)
            if local:
                results.update(await self.local.write(local))
        return results

    async def _send(self, leader: int, markers: list[Marker]) -> dict[tuple[str, int], ErrorCode]:
        unreachable = {(name, i): ErrorCode.NOT_LEADER_OR_FOLLOWER
                       for *_, topics in markers for name, indexes in topics.items() for i in indexes}
        address = self.metadata.inter_broker_address(leader)
        if address is None:
            return unreachable
        client = self._clients.get(leader)
        if client is None:
            client = self._clients[leader] = BrokerClient(f"broker {leader}", *address,
                                                          client_id=f"txn-markers-{self.node_id}",
                                                          timeout=self.timeout_s,
                                                          security=self.metadata.client_security)
        else:
            client.retarget(*address)
        body = {"markers": [
            {"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
             "coordinator_epoch": coordinator_epoch,
             "topics": [{"name": name, "partition_indexes": list(indexes)} for name, indexes in topics.items()]}
            for pid, epoch, commit, coordinator_epoch, topics in markers]}
        try:
            response = await client.request(ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, body)
        except BrokerUnavailable as exc:
            log.info("markers to broker %d: %s", leader, exc)
            return unreachable
        out: dict[tuple[str, int], ErrorCode] = {}
        for marker in response.markers:
            for topic in marker.topics:
                for p in topic.partitions:
                    out[(topic.name, p.partition_index)] = ErrorCode(p.error_code)
        return out

