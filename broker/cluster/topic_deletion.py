"""Topic deletion on the controller (Kafka's TopicDeletionManager): topics marked under /admin/delete_topics
go offline (leader -2 in UpdateMetadata, so brokers forget them), each live replica is told to stop and
delete its log; once every live replica has done so, the topic's znodes go. Replicas on dead brokers are not
waited for: a broker that comes back removes the logs of topics it no longer hears of."""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

import trio

from broker.cluster.controller_events import ReplicasDeleted
from broker.cluster.controller_requests import ControllerRequests
from broker.cluster.controller_state import ControllerContext, PartitionStatus, TopicPartition
from protocol.header import ErrorCode
from zk.kafka_zk import KafkaZkClient

log = logging.getLogger(__name__)


class TopicDeletionManager:
    def __init__(self, zk: KafkaZkClient, ctx: ControllerContext, requests: ControllerRequests,
                 events: trio.MemorySendChannel[Any], delete_topic_enable: bool) -> None:
        """`events`: the controller's event queue (ZooKeeper watches and StopReplica answers go there)."""
        self.zk = zk
        self.ctx = ctx
        self.requests = requests
        self.events = events
        self.delete_topic_enable = delete_topic_enable

    async def marked(self) -> None:
        """/admin/delete_topics changed (or the controller starts): delete the topics newly marked."""
        ctx = self.ctx
        marked = set(await self.zk.get_topic_deletions(watch=self.events))
        unknown = marked - ctx.topics()
        if not self.delete_topic_enable:
            if marked:
                log.info("controller: delete.topic.enable is false, ignoring deletion of %s", sorted(marked))
                await self.zk.delete_topic_deletions(marked, ctx.epoch_zk_version)
            return
        if unknown:
            await self.zk.delete_topic_deletions(unknown, ctx.epoch_zk_version)
        new = (marked & ctx.topics()) - ctx.topics_to_delete
        if new:
            ctx.topics_to_delete |= new
            log.info("controller: deleting topic(s) %s", sorted(new))
            await self.resume()

    async def resume(self) -> None:
        """Start the deletions not started yet (a topic being reassigned waits, as in Kafka)."""
        ctx = self.ctx
        for topic in sorted(ctx.topics_to_delete):
            if topic in ctx.deletions_pending:
                continue
            partitions = ctx.partitions_of(topic)
            if any(ctx.assignments[tp].is_being_reassigned for tp in partitions):
                continue  # Kafka waits for the reassignment to finish
            pending = {(b, tp) for tp in partitions for b in ctx.live_replicas(tp)}
            ctx.deletions_pending[topic] = pending
            self.requests.update_metadata(ctx.live_brokers, partitions, deleting=True)
            for tp in partitions:
                if ctx.status.get(tp) in (PartitionStatus.ONLINE, PartitionStatus.NEW):
                    ctx.transition([tp], PartitionStatus.OFFLINE)
            by_broker: dict[int, list[TopicPartition]] = defaultdict(list)
            for broker_id, tp in pending:
                by_broker[broker_id].append(tp)
            for broker_id, tps in by_broker.items():
                self.requests.stop_replica(broker_id, tps, delete=True, on_deleted=self._replica_deleted)
            if not pending:
                await self._complete(topic)

    def _replica_deleted(self, broker_id: int, response: Any) -> None:
        failed = frozenset((e.topic_name, e.partition_index) for e in response.partition_errors if e.error_code)
        self.events.send_nowait(ReplicasDeleted(broker_id, failed, response))

    async def replicas_deleted(self, event: ReplicasDeleted) -> None:
        ctx = self.ctx
        for e in event.response.partition_errors:
            tp = (e.topic_name, e.partition_index)
            if tp in event.failed:
                log.warning("controller: broker %d could not delete %s-%d: %s", event.broker_id, *tp,
                            ErrorCode(e.error_code).name)
                continue
            pending = ctx.deletions_pending.get(tp[0])
            if pending is not None:
                pending.discard((event.broker_id, tp))
        for topic, pending in list(ctx.deletions_pending.items()):
            if not {p for p in pending if p[0] in ctx.live_brokers}:
                await self._complete(topic)

    async def _complete(self, topic: str) -> None:
        ctx = self.ctx
        partitions = ctx.partitions_of(topic)
        ctx.transition([tp for tp in partitions if ctx.status.get(tp) == PartitionStatus.OFFLINE],
                       PartitionStatus.NON_EXISTENT)
        await self.zk.delete_topic_znode(topic, ctx.epoch_zk_version)
        await self.zk.delete_topic_configs([topic], ctx.epoch_zk_version)
        await self.zk.delete_topic_deletions([topic], ctx.epoch_zk_version)
        ctx.remove_topic(topic)
        log.info("controller: deleted topic %s", topic)
