"""A cluster broker's replicas (Kafka's ReplicaManager and Partition): what LeaderAndIsr and StopReplica
make of them, and, for the partitions it leads, the followers' progress, the high watermark and the ISR.

- become leader: the log (opened or created) is stamped with the new leader epoch, which starts at its log
  end; the high watermark starts where this broker last knew it; the followers are tracked from their
  fetches. A coordinator partition (`__consumer_offsets`, `__transaction_state`) is loaded.
- become follower: the replica fetcher of the leader's broker takes the partition (fetcher.py: truncation
  by leader epoch, then fetching); a coordinator partition is unloaded.
- a follower's Fetch (replica id >= 0) tells the leader its log end offset: the high watermark is the
  smallest log end offset of the ISR; a follower that has caught up joins the ISR and one that has not
  for replica.lag.time.max.ms leaves it, through AlterPartition to the controller (Kafka 2.7+, KIP-497).
- acks=all waits until the high watermark passes the batch, or answers NOT_ENOUGH_REPLICAS when the ISR is
  smaller than min.insync.replicas.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from broker.clock import Clock
from broker.cluster.client import BrokerClient, BrokerUnavailable
from broker.config.options import BrokerConfig
from broker.services.appends import AppendSignal
from broker.services.durability import min_insync_replicas
from broker.services.topics import Partition, PartitionMetadata, TopicManager
from protocol.header import ApiKey, ErrorCode

if TYPE_CHECKING:
    from broker.cluster.zk_cluster import ZkCluster
    from broker.log.append import Appender

log = logging.getLogger(__name__)

ALTER_PARTITION_VERSION = 3
ISR_CHECK_INTERVAL_S = 0.5


@dataclass(slots=True, eq=False)
class FollowerProgress:
    """What the leader knows of one follower of a partition (Kafka's Replica)."""

    log_end_offset: int = -1
    last_caught_up_ms: int = 0  # when it last fetched up to the leader's log end offset
    broker_epoch: int = -1


@dataclass(slots=True, eq=False)
class LeaderState:
    """A partition this broker leads: its followers and the ISR change in flight."""

    partition: Partition
    followers: dict[int, FollowerProgress] = field(default_factory=dict)
    pending_isr: tuple[int, ...] | None = None  # an AlterPartition sent, not yet answered
    hw_changed: trio.Event = field(default_factory=trio.Event)


class ReplicaManager:
    def __init__(self, node_id: int, topics: TopicManager, appends: AppendSignal, appender: Appender, clock: Clock,
                 config: BrokerConfig, cluster: ZkCluster) -> None:
        self.node_id = node_id
        self.topics = topics
        self.appends = appends
        self.appender = appender  # the replica fetchers append through it (AppendOrigin.REPLICATION)
        self.clock = clock
        self.config = config
        self.cluster = cluster
        self.leading: dict[tuple[str, int], LeaderState] = {}
        self.fetchers: Any = None  # broker.cluster.fetcher.FetcherManager, set at start
        # Who is told when this broker becomes a partition's leader or stops being it: (topic, index, leader
        # epoch, or None when it no longer leads it). The coordinators load and unload their partitions, the
        # share partitions of a partition led elsewhere now go.
        self.on_leadership: list[Callable[[str, int, int | None], None]] = []
        self._isr_wake = trio.Event()
        self._nursery: trio.Nursery | None = None
        self.log_dir_offline: str | None = None  # why this broker's log directory failed (None: it is online)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        from broker.cluster.fetcher import FetcherManager

        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self.fetchers = FetcherManager(self, nursery)
            nursery.start_soon(self._isr_loop)
            task_status.started()
            await trio.sleep_forever()

    # -- a failed log directory --------------------------------------------------------------------------------
    def log_dir_failed(self, reason: str) -> None:
        """An I/O error on the log directory (Kafka's LogDirFailureChannel): every partition on it stops being
        led or followed here (waiting produces answered, coordinators unloaded, clients answered
        KAFKA_STORAGE_ERROR), and the controller is told, which elects leaders elsewhere. Until a restart."""
        if self.log_dir_offline is not None:
            return
        self.log_dir_offline = reason
        log.error("log directory %s is offline (%s): its partitions are no longer served here",
                  self.topics.data_dir, reason)
        self.topics.log_dir_offline = True
        for tp in list(self.leading):
            state = self._stop_leading(tp)
            if state is not None:
                self._leadership(state.partition, None)
        if self.fetchers is not None:
            for partition in list(self.topics.hosted()):
                self.fetchers.remove((partition.topic, partition.index))
        self.cluster.log_dir_failed()
        self.appends.notify()

    # -- LeaderAndIsr ---------------------------------------------------------------------------------------------
    def apply_leader_and_isr(self, req: Any) -> dict[tuple[str, int], ErrorCode]:
        """Become leader or follower of each partition, as Kafka's ReplicaManager.becomeLeaderOrFollower."""
        results: dict[tuple[str, int], ErrorCode] = {}
        if self.log_dir_offline is not None:  # Kafka: its partitions are offline, KAFKA_STORAGE_ERROR each
            return {(t.topic_name, p.partition_index): ErrorCode.KAFKA_STORAGE_ERROR
                    for t in req.topic_states for p in t.partition_states}
        now = self.clock.now_ms()
        for topic_state in req.topic_states:
            name, topic_id = topic_state.topic_name, topic_state.topic_id
            known = self.topics.get(name)
            if known is not None and topic_id not in (None, uuid.UUID(int=0)) and known.topic_id != topic_id \
                    and any(p.log is not None for p in known.partitions):
                # Our logs are of an older topic of this name: they go, the new topic's are created.
                self.topics.remove_topic(name)
            for p in topic_state.partition_states:
                tp = (name, p.partition_index)
                current = self.topics.partition(*tp)
                if current is not None and current.log is not None and p.leader_epoch < current.leader_epoch:
                    results[tp] = ErrorCode.STALE_CONTROLLER_EPOCH  # Kafka's answer to an older leader epoch
                    continue
                if self.node_id not in p.replicas:
                    results[tp] = ErrorCode.NONE
                    continue
                try:
                    configs = self._topic_configs(name)
                    partition = self.topics.become_replica(name, topic_id, p.partition_index, configs, now_ms=now)
                except OSError as exc:
                    log.error("cannot host %s-%d: %s", *tp, exc)
                    results[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
                PartitionMetadata(p.leader, p.leader_epoch, tuple(p.replicas), tuple(p.isr), (),
                                  p.partition_epoch).apply_to(partition)
                if p.leader == self.node_id:
                    self._become_leader(partition)
                else:
                    self._become_follower(partition)
                results[tp] = ErrorCode.NONE
        return results

    def _topic_configs(self, name: str) -> dict[str, str]:
        configs = self.cluster.topic_configs.get(name)
        if configs is not None:
            return dict(configs)
        topic = self.topics.get(name)
        return dict(topic.configs) if topic is not None else {}

    def _become_leader(self, partition: Partition) -> None:
        tp = (partition.topic, partition.index)
        was_leading = tp in self.leading
        if self.fetchers is not None:
            self.fetchers.remove(tp)
        plog = partition.log
        plog.become_leader(partition.leader_epoch)
        state = self.leading.get(tp)
        if state is None or state.partition is not partition:
            self._stop_leading(tp)  # the leadership of an older partition of this name, if any
            state = self.leading[tp] = LeaderState(partition)
        now = self.clock.now_ms()
        for replica in partition.replicas:
            if replica != self.node_id and replica not in state.followers:
                state.followers[replica] = FollowerProgress(last_caught_up_ms=now)
        for gone in [r for r in state.followers if r not in partition.replicas]:
            del state.followers[gone]
        state.pending_isr = None
        if len(partition.replicas) > 1:
            if partition.replicated_hw is None:
                partition.replicated_hw = self._initial_high_watermark(partition)
            self._maybe_advance_hw(state)
        else:
            partition.replicated_hw = None  # the only replica: everything appended is committed
        if not was_leading:
            log.info("leading %s-%d at epoch %d (replicas %s, ISR %s)", *tp, partition.leader_epoch,
                     partition.replicas, partition.isr)
            self._leadership(partition, partition.leader_epoch)
        self.appends.notify()

    def _stop_leading(self, tp: tuple[str, int]) -> LeaderState | None:
        """Forget the leadership of `tp`; produces waiting for its followers (acks=all) answer
        NOT_LEADER_OR_FOLLOWER now, as Kafka completes its delayed produces, not at their timeout."""
        state = self.leading.pop(tp, None)
        if state is not None:
            state.hw_changed.set()
            state.hw_changed = trio.Event()
        return state

    def _become_follower(self, partition: Partition) -> None:
        tp = (partition.topic, partition.index)
        if self._stop_leading(tp) is not None:
            self._leadership(partition, None)
            log.info("%s-%d: leadership moved to broker %d (epoch %d)", *tp, partition.leader,
                     partition.leader_epoch)
        if partition.replicated_hw is None:
            partition.replicated_hw = self._initial_high_watermark(partition)
        if self.fetchers is not None:
            self.fetchers.add(partition)
        self.appends.notify()  # long polls on it answer NOT_LEADER_OR_FOLLOWER now

    @staticmethod
    def _initial_high_watermark(partition: Partition) -> int:
        # Kafka restores it from replication-offset-checkpoint; here, the log's recovery point is the last
        # flushed offset, at or below what was committed before a clean stop (the followers' fetches bring it
        # up at once).
        plog = partition.log
        return max(plog.log_start_offset, min(plog.flushed_offset, plog.log_end_offset))

    def _leadership(self, partition: Partition, epoch: int | None) -> None:
        for callback in self.on_leadership:
            callback(partition.topic, partition.index, epoch)

    # -- StopReplica ------------------------------------------------------------------------------------------------
    def apply_stop_replica(self, req: Any) -> dict[tuple[str, int], ErrorCode]:
        results = {}
        for topic_state in req.topic_states:
            for p in topic_state.partition_states:
                tp = (topic_state.topic_name, p.partition_index)
                partition = self.topics.partition(*tp)
                if partition is not None and partition.log is not None and 0 <= p.leader_epoch \
                        < partition.leader_epoch:
                    results[tp] = ErrorCode.FENCED_LEADER_EPOCH
                    continue
                if self.fetchers is not None:
                    self.fetchers.remove(tp)
                state = self._stop_leading(tp)
                if state is not None and partition is not None:
                    self._leadership(partition, None)
                try:
                    if p.delete_partition:
                        self.topics.stop_replica(*tp, delete=True)
                    elif partition is not None:
                        partition.leader = -1 if partition.leader == self.node_id else partition.leader
                except OSError as exc:
                    log.error("stopping replica %s-%d failed: %s", *tp, exc)
                    results[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
                results[tp] = ErrorCode.NONE
        self.appends.notify()
        return results

    def topic_removed(self, name: str) -> None:
        """The topic is gone (deleted): stop leading and following its partitions here."""
        for tp in [tp for tp in self.leading if tp[0] == name]:
            state = self._stop_leading(tp)
            assert state is not None
            self._leadership(state.partition, None)
        topic = self.topics.get(name)
        if topic is not None and self.fetchers is not None:
            for partition in topic.partitions:
                self.fetchers.remove((name, partition.index))

    def metadata_updated(self) -> None:
        """UpdateMetadata came: a follower whose leader moved addresses finds it there."""
        if self.fetchers is not None:
            self.fetchers.refresh_addresses()

    # -- the leader's side of replication ------------------------------------------------------------------------------
    def follower_fetched(self, partition: Partition, replica_id: int, fetch_offset: int, broker_epoch: int) -> None:
        """A follower's Fetch at `fetch_offset`: everything below is in its log."""
        state = self.leading.get((partition.topic, partition.index))
        if state is None:
            return
        progress = state.followers.get(replica_id)
        if progress is None:
            return
        now = self.clock.now_ms()
        progress.log_end_offset = fetch_offset
        progress.broker_epoch = broker_epoch
        if fetch_offset >= partition.log.log_end_offset:
            progress.last_caught_up_ms = now
        if replica_id not in partition.isr and self._caught_up(state, progress):
            self._isr_wake.set()  # it may join the ISR
        self._maybe_advance_hw(state)

    @staticmethod
    def _caught_up(state: LeaderState, progress: FollowerProgress) -> bool:
        # Kafka's isFollowerInSync: at or past the high watermark, and at or past the leader epoch's start.
        partition = state.partition
        epoch_start = partition.log.epochs.latest_epoch_start if partition.log.epochs is not None else 0
        return progress.log_end_offset >= partition.high_watermark and progress.log_end_offset >= epoch_start

    def _maybe_advance_hw(self, state: LeaderState) -> None:
        partition = state.partition
        if partition.replicated_hw is None:
            return
        leo = partition.log.log_end_offset
        ends = [leo]
        # The maximal ISR (KIP-497): a follower being added counts before the controller has agreed, so that
        # nothing is committed that the ISR the controller may commit lacks.
        for replica in {*partition.isr, *(state.pending_isr or ())}:
            if replica == self.node_id:
                continue
            progress = state.followers.get(replica)
            ends.append(progress.log_end_offset if progress is not None else -1)
        new_hw = min(ends)
        if new_hw > partition.replicated_hw:
            partition.replicated_hw = new_hw
            state.hw_changed.set()
            state.hw_changed = trio.Event()
            self.appends.notify()  # consumers' long polls: more is readable

    def leader_appended(self, partition: Partition) -> None:
        """After a leader's append: with an ISR of one, the high watermark moves at once."""
        state = self.leading.get((partition.topic, partition.index))
        if state is not None:
            self._maybe_advance_hw(state)

    def check_min_isr(self, partition: Partition) -> ErrorCode:
        """acks=all before the append: NOT_ENOUGH_REPLICAS when the ISR is smaller than min.insync.replicas."""
        minimum = min_insync_replicas(self.topics, self.config, partition)
        return ErrorCode.NOT_ENOUGH_REPLICAS if len(partition.isr) < minimum else ErrorCode.NONE

    async def wait_replicated(self, partition: Partition, offset: int, timeout_s: float) -> ErrorCode:
        """acks=all: until the high watermark passes `offset` (every ISR member has it). The ISR shrinking
        below min.insync.replicas meanwhile: NOT_ENOUGH_REPLICAS_AFTER_APPEND; leadership lost:
        NOT_LEADER_OR_FOLLOWER; the client's timeout: REQUEST_TIMED_OUT."""
        deadline = trio.current_time() + timeout_s
        while True:
            state = self.leading.get((partition.topic, partition.index))
            if state is None or state.partition is not partition or partition.leader != self.node_id:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            if partition.high_watermark > offset:
                if self.check_min_isr(partition):
                    return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
                return ErrorCode.NONE
            with trio.move_on_at(deadline) as waited:
                await state.hw_changed.wait()
            if waited.cancelled_caught:
                return ErrorCode.REQUEST_TIMED_OUT

    # -- ISR changes (AlterPartition) ----------------------------------------------------------------------------------
    async def _isr_loop(self) -> None:
        while True:
            with trio.move_on_after(ISR_CHECK_INTERVAL_S):
                await self._isr_wake.wait()
            self._isr_wake = trio.Event()
            try:
                changes = self._isr_changes()
                if changes:
                    await self._alter_partition(changes)
            except Exception:  # a bug must not take the broker down: log, go on
                log.exception("ISR maintenance failed")

    def _isr_changes(self) -> list[tuple[LeaderState, tuple[int, ...]]]:
        now = self.clock.now_ms()
        lag_ms = self.config.replica_lag_time_max_ms
        changes = []
        for state in self.leading.values():
            partition = state.partition
            if state.pending_isr is not None or len(partition.replicas) <= 1:
                continue
            isr = list(partition.isr)
            for replica, progress in state.followers.items():
                if replica in isr and now - progress.last_caught_up_ms > lag_ms:
                    log.info("%s-%d: follower %d has not caught up for %d ms; shrinking the ISR", partition.topic,
                             partition.index, replica, now - progress.last_caught_up_ms)
                    isr.remove(replica)
                elif replica not in isr and self._caught_up(state, progress) and \
                        self.cluster.inter_broker_address(replica) is not None:
                    log.info("%s-%d: follower %d caught up; expanding the ISR", partition.topic, partition.index,
                             replica)
                    isr.append(replica)
            if set(isr) != set(partition.isr):
                changes.append((state, tuple(isr)))
        return changes

    async def _alter_partition(self, changes: list[tuple[LeaderState, tuple[int, ...]]]) -> None:
        controller = self.cluster.controller_id
        address = self.cluster.inter_broker_address(controller) if controller >= 0 else None
        if address is None:
            return
        topics: dict[str, list[dict[str, Any]]] = {}
        for state, isr in changes:
            state.pending_isr = isr
            partition = state.partition
            topics.setdefault(partition.topic, []).append({
                "partition_index": partition.index, "leader_epoch": partition.leader_epoch,
                "new_isr_with_epochs": [{"broker_id": b, "broker_epoch": self._broker_epoch(state, b)} for b in isr],
                "leader_recovery_state": 0, "partition_epoch": partition.partition_epoch})
        body = {"broker_id": self.node_id, "broker_epoch": self.cluster.broker_epoch,
                "topics": [{"topic_id": self.topics.get(t).topic_id, "partitions": ps} for t, ps in topics.items()]}
        client = BrokerClient(f"controller {controller}", *address, client_id=f"broker-{self.node_id}",
                              timeout=self.config.controller_socket_timeout_ms / 1000,
                              security=self.cluster.client_security)
        response = None
        try:
            # Given up as soon as another controller is known (a controller that stalls does not answer).
            async with trio.open_nursery() as nursery:
                async def moved() -> None:
                    while self.cluster.controller_id == controller:
                        await self.cluster.metadata.metadata_changed.wait()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(moved)
                try:  # caught here: out of the nursery it would come wrapped in an exception group
                    response = await client.request(ApiKey.ALTER_PARTITION, ALTER_PARTITION_VERSION, body)
                except BrokerUnavailable as exc:  # gone, or stopping: the next round asks whoever is controller
                    log.warning("AlterPartition to the controller failed: %s", exc)
                nursery.cancel_scope.cancel()
        finally:
            await client.aclose()
        for state, _ in changes:
            state.pending_isr = None
        if response is None:
            return
        if response.error_code:
            log.warning("AlterPartition: %s", ErrorCode(response.error_code).name)
            return
        by_id = {t.topic_id: t for t in response.topics}
        for state, _ in changes:
            partition = state.partition
            topic = self.topics.get(partition.topic)
            answered = by_id.get(topic.topic_id) if topic is not None else None
            found = next((p for p in answered.partitions if p.partition_index == partition.index), None) \
                if answered is not None else None
            if found is None:
                continue
            if found.error_code:
                log.info("%s-%d: ISR change refused: %s", partition.topic, partition.index,
                         ErrorCode(found.error_code).name)
                continue
            if found.leader_epoch == partition.leader_epoch:
                partition.isr = list(found.isr)
                partition.partition_epoch = found.partition_epoch
                self._maybe_advance_hw(state)
                state.hw_changed.set()  # acks=all waiters re-check min.insync.replicas
                state.hw_changed = trio.Event()

    def _broker_epoch(self, state: LeaderState, broker_id: int) -> int:
        if broker_id == self.node_id:
            return self.cluster.broker_epoch
        progress = state.followers.get(broker_id)
        return progress.broker_epoch if progress is not None else -1

