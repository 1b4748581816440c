"""Replica fetchers (Kafka's ReplicaFetcherManager and ReplicaFetcherThread): a follower copies its leaders'
logs with the ordinary Fetch API, as any Kafka follower does.

One fetcher task per leader broker serves every partition this broker follows there. A partition first
truncates: OffsetForLeaderEpoch asks the leader where this replica's latest leader epoch ended in the
leader's log, and the log is cut there (KIP-101, KIP-279: never by high watermark alone, except against a
leader that knows no epoch). Then Fetch (replica id = this broker) brings the leader's batches, appended
unchanged (offsets, epochs, producer ids, control batches), with the producer state and the leader epoch
cache following them; the response's high watermark becomes this replica's, and a leader's higher log
start offset moves ours up.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import trio

from broker.cluster.client import BrokerClient, BrokerUnavailable
from broker.log.append import AppendOrigin
from broker.log.producer_snapshot import load_producer_state
from broker.services.topics import Partition
from protocol.header import ApiKey, ErrorCode

log = logging.getLogger(__name__)

FETCH_VERSION = 12  # replica id in the request, topic names, the last version Kafka 3.x followers use by name
OFFSET_FOR_LEADER_EPOCH_VERSION = 4
_UNDEFINED = -1


@dataclass(slots=True, eq=False)
class _Follower:
    partition: Partition
    leader_epoch: int
    truncating: bool = True


class FetcherManager:
    def __init__(self, replicas: Any, nursery: trio.Nursery) -> None:
        self.replicas = replicas
        self.nursery = nursery
        self.fetchers: dict[int, ReplicaFetcher] = {}

    def add(self, partition: Partition) -> None:
        """Follow `partition` from its leader (moving it from the fetcher of a previous leader)."""
        tp = (partition.topic, partition.index)
        self.remove(tp)
        leader = partition.leader
        if leader < 0 or leader == self.replicas.node_id:
            return  # no leader now: the next LeaderAndIsr names one
        fetcher = self.fetchers.get(leader)
        if fetcher is None or fetcher.stopped:
            fetcher = self.fetchers[leader] = ReplicaFetcher(self.replicas, leader)
            self.nursery.start_soon(fetcher.run)
        fetcher.add(_Follower(partition, partition.leader_epoch))

    def remove(self, tp: tuple[str, int]) -> None:
        for fetcher in self.fetchers.values():
            fetcher.remove(tp)

    def refresh_addresses(self) -> None:
        for fetcher in self.fetchers.values():
            fetcher.refresh_address()


class ReplicaFetcher:
    def __init__(self, replicas: Any, leader: int) -> None:
        self.replicas = replicas
        self.leader = leader
        self.partitions: dict[tuple[str, int], _Follower] = {}
        self.stopped = False
        self._wake = trio.Event()
        self._client: BrokerClient | None = None
        self._scope = trio.CancelScope()

    def add(self, follower: _Follower) -> None:
        self.partitions[(follower.partition.topic, follower.partition.index)] = follower
        self._wake.set()

    def remove(self, tp: tuple[str, int]) -> None:
        if self.partitions.pop(tp, None) is not None:
            self._wake.set()

    def refresh_address(self) -> None:
        address = self.replicas.cluster.inter_broker_address(self.leader)
        if address is not None and self._client is not None:
            self._client.retarget(*address)

    async def run(self) -> None:
        config = self.replicas.config
        backoff = config.replica_fetch_backoff_ms / 1000
        try:
            with self._scope:
                while True:
                    if not self.partitions:
                        self._wake = trio.Event()
                        with trio.move_on_after(60):
                            await self._wake.wait()
                        if not self.partitions:
                            return  # idle: the manager starts a new one when needed
                        continue
                    client = self._connected()
                    if client is None:
                        await trio.sleep(backoff)
                        continue
                    # A replica whose log went (its topic deleted, StopReplica) is no longer followed.
                    for tp in [tp for tp, f in self.partitions.items() if f.partition.log is None]:
                        del self.partitions[tp]
                    try:
                        truncating = [f for f in self.partitions.values() if f.truncating]
                        if truncating:
                            await self._truncate(client, truncating)
                        fetching = [f for f in self.partitions.values() if not f.truncating]
                        if fetching:
                            await self._fetch(client, fetching)
                    except BrokerUnavailable as exc:
                        log.info("fetcher from broker %d: %s", self.leader, exc)
                        await trio.sleep(backoff)
                    except Exception:  # a bug must not take the broker down: log, back off, go on
                        log.exception("fetcher from broker %d failed", self.leader)
                        await trio.sleep(backoff)
        finally:
            self.stopped = True
            if self._client is not None:
                await self._client.aclose()

    def _connected(self) -> BrokerClient | None:
        address = self.replicas.cluster.inter_broker_address(self.leader)
        if address is None:
            return None
        if self._client is None:
            config = self.replicas.config
            self._client = BrokerClient(f"leader {self.leader}", *address,
                                        client_id=f"replica-fetcher-{self.replicas.node_id}",
                                        timeout=config.replica_socket_timeout_ms / 1000,
                                        security=self.replicas.cluster.client_security)
        return self._client

    # -- truncation ---------------------------------------------------------------------------------------------
    async def _truncate(self, client: BrokerClient, followers: list[_Follower]) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        for f in followers:
            plog = f.partition.log
            epochs = plog.epochs
            latest = epochs.latest_epoch if epochs is not None else _UNDEFINED
            if latest == _UNDEFINED:  # an empty log has nothing to truncate
                f.truncating = False
                continue
            topics.setdefault(f.partition.topic, []).append({
                "partition": f.partition.index, "current_leader_epoch": f.leader_epoch, "leader_epoch": latest})
        if not topics:
            return
        response = await client.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION, {
            "replica_id": self.replicas.node_id,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]})
        for topic in response.topics:
            for p in topic.partitions:
                follower = self.partitions.get((topic.topic, p.partition))
                if follower is None or not follower.truncating:
                    continue
                if p.error_code:
                    self._partition_error(follower, ErrorCode(p.error_code))
                    continue
                self._truncate_to_epoch_end(follower, p.leader_epoch, p.end_offset)

    def _truncate_to_epoch_end(self, follower: _Follower, leader_epoch: int, end_offset: int) -> None:
        """Kafka's AbstractFetcherThread.getOffsetTruncationState."""
        partition = follower.partition
        plog = partition.log
        if leader_epoch == _UNDEFINED or end_offset == _UNDEFINED:
            target = min(partition.high_watermark, plog.log_end_offset)
        else:
            ours_epoch, ours_end = plog.end_offset_for_epoch(leader_epoch)
            if ours_epoch == leader_epoch:
                target = min(end_offset, plog.log_end_offset)
            else:  # we have a later epoch than the leader knows: cut back to where the leader's epoch ended
                target = min(end_offset, ours_end if ours_end >= 0 else plog.log_end_offset)
        if target < plog.log_end_offset:
            log.info("%s-%d: truncating from %d to %d (leader %d's epoch %d ends at %d)", partition.topic,
                     partition.index, plog.log_end_offset, target, self.leader, leader_epoch, end_offset)
            plog.truncate_to(target)
            partition.producers = load_producer_state(plog, f"{partition.topic}-{partition.index}")
            if partition.replicated_hw is not None and partition.replicated_hw > plog.log_end_offset:
                partition.replicated_hw = plog.log_end_offset
        follower.truncating = False

    # -- fetching ------------------------------------------------------------------------------------------------
    async def _fetch(self, client: BrokerClient, followers: list[_Follower]) -> None:
        config = self.replicas.config
        topics: dict[str, list[dict[str, Any]]] = {}
        for f in followers:
            plog = f.partition.log
            topics.setdefault(f.partition.topic, []).append({
                "partition": f.partition.index, "current_leader_epoch": f.leader_epoch,
                "fetch_offset": plog.log_end_offset, "last_fetched_epoch": -1,
                "log_start_offset": plog.log_start_offset, "partition_max_bytes": config.replica_fetch_max_bytes})
        wait_ms = config.replica_fetch_wait_max_ms
        response = await client.request(ApiKey.FETCH, FETCH_VERSION, {
            "replica_id": self.replicas.node_id, "max_wait_ms": wait_ms, "min_bytes": 1,
            "max_bytes": config.replica_fetch_response_max_bytes, "isolation_level": 0, "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [], "rack_id": ""},
            timeout=wait_ms / 1000 + config.replica_socket_timeout_ms / 1000)
        if response.error_code:
            log.info("fetch from broker %d: %s", self.leader, ErrorCode(response.error_code).name)
            await trio.sleep(config.replica_fetch_backoff_ms / 1000)
            return
        for topic in response.responses:
            for p in topic.partitions:
                follower = self.partitions.get((topic.topic, p.partition_index))
                if follower is None or follower.truncating:
                    continue
                if p.error_code:
                    self._partition_error(follower, ErrorCode(p.error_code), p)
                    continue
                self._append(follower, p)

    def _append(self, follower: _Follower, p: Any) -> None:
        partition = follower.partition
        plog = partition.log
        if p.records:
            outcome = self.replicas.appender.append(partition, p.records, AppendOrigin.REPLICATION,
                                                    self.replicas.clock.now_ms())
            if outcome.error == ErrorCode.CORRUPT_MESSAGE:
                # A response cut inside a batch is normal (max bytes): keep the whole batches before it.
                log.warning("%s-%d: follower append failed: %s; truncating again", partition.topic,
                            partition.index, outcome.message)
                follower.truncating = True
                return
            if outcome.error:
                log.error("%s-%d: follower append failed: %s", partition.topic, partition.index, outcome.message)
                return
        if p.log_start_offset > plog.log_start_offset:
            try:
                plog.delete_records(min(p.log_start_offset, plog.log_end_offset))
                partition.producers.remove_before(plog.log_start_offset)
            except (OSError, ValueError) as exc:
                log.warning("%s-%d: moving the log start offset failed: %s", partition.topic, partition.index, exc)
        hw = min(p.high_watermark, plog.log_end_offset)
        if partition.replicated_hw is None or hw > partition.replicated_hw:
            partition.replicated_hw = hw

    def _partition_error(self, follower: _Follower, error: ErrorCode, p: Any = None) -> None:
        partition = follower.partition
        tp = (partition.topic, partition.index)
        if error == ErrorCode.OFFSET_OUT_OF_RANGE and p is not None:
            plog = partition.log
            if plog.log_end_offset < p.log_start_offset:
                # The leader has deleted what we lack (retention): start again at its log start.
                log.info("%s-%d: behind the leader's log start %d; starting there", *tp, p.log_start_offset)
                plog.truncate_to(p.log_start_offset)
                partition.producers = load_producer_state(plog, f"{partition.topic}-{partition.index}")
            else:
                follower.truncating = True
            return
        if error in (ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                     ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH):
            # The leader has not heard (or we missed) the newest LeaderAndIsr: try again shortly; a newer
            # LeaderAndIsr moves the partition to its new leader's fetcher.
            return
        log.warning("%s-%d: fetch from broker %d: %s", *tp, self.leader, error.name)
