"""The controller (Kafka 3.x's KafkaController in ZooKeeper mode): one broker, elected through the
ephemeral /controller, that watches ZooKeeper and tells the brokers what to do.

Events (ZooKeeper watches, ControlledShutdown and AlterPartition requests, the leader rebalance timer) are
processed one at a time by one task, as Kafka's ControllerEventManager does. Each partition's state is in
its znode, written only with a conditional update that also checks /controller_epoch (a controller that
lost its place cannot write); then the brokers are told: LeaderAndIsr to a partition's replicas,
UpdateMetadata to every live broker, StopReplica to replicas that must stop (and delete, for a topic
being deleted or a replica reassigned away). Every request carries the controller epoch; brokers refuse
an older one.

What it does, as Kafka does it: failover (read everything, publish it, elect leaders for partitions that
have none), broker startup and failure (new leaders from the live ISR, the dead broker out of the ISR),
topic creation, partition growth and deletion, controlled shutdown, ISR changes from leaders
(AlterPartition), preferred-leader and unclean elections, partition reassignment (KIP-455: the new
replicas added, caught up, then the old ones removed), and the automatic leader rebalance.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import trio

from broker.cluster.channel import ControllerChannel
from broker.cluster.controller_state import ControllerContext, PartitionStatus, TopicPartition
from protocol.header import ApiKey, ErrorCode
from zk import leader_election as elections
from zk import znodes as z
from zk.errors import ControllerMovedError, ZooKeeperError
from zk.kafka_zk import KafkaZkClient
from zk.session import NodeExistsError, NoNodeError, WatchEvent
from zk.znodes import BrokerRegistration, PartitionState, ReplicaAssignment, TopicAssignment

log = logging.getLogger(__name__)

LEADER_AND_ISR_VERSION = 6
UPDATE_METADATA_VERSION = 7
STOP_REPLICA_VERSION = 4
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class Resigned(Exception):
    """This broker is no longer the controller (another one was elected, or ZooKeeper fenced our write)."""


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    broker_id: int
    inter_broker_listener: str
    unclean_leader_election: Callable[[str], bool]  # per topic (unclean.leader.election.enable)
    delete_topic_enable: bool
    auto_leader_rebalance: bool
    rebalance_interval_s: float
    imbalance_percentage: int
    request_timeout_s: float


class _Reply:
    __slots__ = ("_event", "value")

    def __init__(self) -> None:
        self._event = trio.Event()
        self.value: Any = None

    def set(self, value: Any) -> None:
        self.value = value
        self._event.set()

    async def wait(self) -> Any:
        await self._event.wait()
        return self.value


@dataclass(slots=True)
class _Event:
    kind: str
    args: tuple[Any, ...] = ()
    reply: Callable[[Any], None] | None = None


class Controller:
    def __init__(self, zk: KafkaZkClient, settings: ControllerSettings, epoch: int, epoch_zk_version: int,
                 security: Any = None) -> None:
        """`security`: TLS and SASL for the connections to the brokers' inter-broker listener."""
        self.zk = zk
        self.settings = settings
        self.ctx = ControllerContext(epoch=epoch, epoch_zk_version=epoch_zk_version)
        self.channel = ControllerChannel(settings.broker_id, timeout=settings.request_timeout_s, security=security)
        self._send, self._receive = trio.open_memory_channel[Any](math.inf)
        self._reassignments: dict[TopicPartition, tuple[int, ...]] = {}  # target replicas in progress
        self._active = False

    @property
    def epoch(self) -> int:
        return self.ctx.epoch

    @property
    def active(self) -> bool:
        return self._active

    # -- events from outside (request handlers, on the broker's trio loop) -----------------------------------
    async def call(self, kind: str, *args: Any, timeout: float = 30.0) -> Any:
        """Queue an event and wait for the controller's outcome (an exception is returned, not raised)."""
        reply = _Reply()
        self._send.send_nowait(_Event(kind, args, reply.set))
        with trio.move_on_after(timeout):
            return await reply.wait()
        return TimeoutError(f"the controller did not process {kind} within {timeout:g} s")

    # -- the event loop -------------------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Be the controller until resigning (Resigned, or ZooKeeper trouble, ends it)."""
        log.info("broker %d is the controller, epoch %d", self.settings.broker_id, self.epoch)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.channel.run)
                self._active = True  # as Kafka's: active once elected; requests queue behind the failover
                await self._failover()
                task_status.started()
                if self.settings.auto_leader_rebalance:
                    nursery.start_soon(self._rebalance_timer)
                async for event in self._receive:
                    await self._process(event)
        finally:
            self._active = False
            self.channel.close()
            # Whoever waits for an answer learns that this controller is gone.
            while True:
                try:
                    event = self._receive.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
                if isinstance(event, _Event) and event.reply is not None:
                    event.reply(Resigned("the controller moved"))

    async def _process(self, event: Any) -> None:
        try:
            if isinstance(event, WatchEvent):
                await self._on_watch(event)
                return
            handler = getattr(self, f"_on_{event.kind}")
            result = await handler(*event.args)
            if event.reply is not None:
                event.reply(result)
        except ControllerMovedError as exc:
            raise Resigned(str(exc)) from exc
        except Exception as exc:
            if isinstance(event, _Event) and event.reply is not None:
                event.reply(exc)
            if isinstance(exc, ZooKeeperError):
                raise
            log.exception("controller: processing %s failed", event)

    async def _on_watch(self, event: WatchEvent) -> None:
        path = event.path
        if path == z.BROKER_IDS:
            await self._brokers_changed()
        elif path == z.TOPICS:
            await self._topics_changed()
        elif path.startswith(z.TOPICS + "/"):
            await self._partitions_modified(path.rsplit("/", 1)[1])
        elif path == z.DELETE_TOPICS:
            await self._deletions_changed()
        elif path == z.REASSIGN_PARTITIONS:
            await self._reassignment_znode_changed()
        elif path == z.PREFERRED_REPLICA_ELECTION:
            await self._preferred_election_znode_changed()
        elif path == z.LOG_DIR_EVENT_NOTIFICATION:
            await self._log_dir_events()

    # -- failover -------------------------------------------------------------------------------------------
    async def _failover(self) -> None:
        ctx = self.ctx
        watch = self._send
        brokers = await self.zk.get_all_brokers_and_epochs(watch=watch)
        ctx.live_brokers = {i: reg for i, (reg, _) in brokers.items()}
        ctx.broker_epochs = {i: epoch for i, (_, epoch) in brokers.items()}
        for broker_id, registration in ctx.live_brokers.items():
            self._connect(broker_id, registration)
        topics = await self.zk.get_all_topics(watch=watch)
        await self._read_topics(topics)
        states = await self.zk.get_partition_states(list(ctx.assignments))
        for tp in ctx.assignments:
            state = states.get(tp)
            if state is None:
                ctx.status[tp] = PartitionStatus.NEW
            else:
                ctx.states[tp] = state
                ctx.status[tp] = PartitionStatus.ONLINE if state.leader in ctx.live_brokers else \
                    PartitionStatus.OFFLINE
        ctx.topics_to_delete = set(await self.zk.get_topic_deletions(watch=watch)) & ctx.topics()
        log.info("controller %d: %d live broker(s) %s, %d topic(s), %d partition(s)", self.settings.broker_id,
                 len(ctx.live_brokers), sorted(ctx.live_brokers), len(ctx.topic_ids), len(ctx.assignments))
        # Tell every broker what there is, then who leads what.
        self._send_update_metadata(ctx.live_brokers, ctx.assignments)
        self._send_leader_and_isr([tp for tp in ctx.states if not ctx.is_deleting(tp[0])])
        await self._trigger_online(ctx.in_status(PartitionStatus.NEW, PartitionStatus.OFFLINE))
        # Brokers that died with no controller to see it (the previous controller among them) leave the ISRs
        # they are still in, as Kafka's replica state machine moves their replicas to OfflineReplica at
        # failover: an ISR naming a dead follower holds every acks=all produce until the leader's
        # replica.lag.time.max.ms.
        followed = sorted(tp for tp, s in ctx.states.items() if s.leader in ctx.live_brokers
                          and any(b not in ctx.live_brokers for b in s.isr) and not ctx.is_deleting(tp[0]))
        dead = {b for tp in followed for b in ctx.states[tp].isr if b not in ctx.live_brokers}
        await self._remove_from_isr(followed, dead)
        await self._reassignment_znode_changed()
        await self._preferred_election_znode_changed()
        await self._log_dir_events()
        await self._resume_deletions()

    async def _read_topics(self, topics: Iterable[str]) -> list[TopicPartition]:
        """Read (and watch) the topics' znodes into the context; returns the partitions added."""
        added: list[TopicPartition] = []
        without_id: dict[str, TopicAssignment] = {}
        for topic in sorted(topics):
            assignment = await self.zk.get_topic_assignment(topic, watch=self._send)
            if assignment is None:
                continue
            if assignment.topic_id is None:
                without_id[topic] = assignment
                continue
            added += self.ctx.add_topic(topic, assignment.topic_id, dict(assignment.partitions))
        if without_id:  # created by an old tool: give them ids, as Kafka's controller does
            for topic, assignment in (await self.zk.set_topic_ids(without_id, self.ctx.epoch_zk_version)).items():
                added += self.ctx.add_topic(topic, assignment.topic_id, dict(assignment.partitions))
        for topic, index in added:
            for target in [tp for tp in self._reassignments if tp == (topic, index)]:
                self._reassignments.pop(target, None)
        return added

    # -- brokers --------------------------------------------------------------------------------------------
    def _connect(self, broker_id: int, registration: BrokerRegistration) -> None:
        endpoint = registration.endpoint(self.settings.inter_broker_listener) or (
            registration.endpoints[0] if registration.endpoints else None)
        if endpoint is None:
            log.error("broker %d registered no endpoint", broker_id)
            return
        self.channel.add_broker(broker_id, endpoint.host or "localhost", endpoint.port)

    async def _brokers_changed(self) -> None:
        ctx = self.ctx
        brokers = await self.zk.get_all_brokers_and_epochs(watch=self._send)
        current = {i: epoch for i, (_, epoch) in brokers.items()}
        new = sorted(i for i in current if i not in ctx.broker_epochs)
        dead = sorted(i for i in ctx.broker_epochs if i not in current)
        bounced = sorted(i for i in current if i in ctx.broker_epochs and current[i] != ctx.broker_epochs[i])
        if dead or bounced:
            log.info("controller: broker(s) %s failed", dead + bounced)
            for broker_id in dead + bounced:
                ctx.live_brokers.pop(broker_id, None)
                ctx.broker_epochs.pop(broker_id, None)
                ctx.shutting_down.discard(broker_id)
                ctx.offline_dirs.discard(broker_id)  # a restarted broker opens its log directory anew
                self.channel.remove_broker(broker_id)
            await self._on_brokers_failed(dead + bounced)
        if new or bounced:
            log.info("controller: broker(s) %s started", new + bounced)
            for broker_id in new + bounced:
                registration, epoch = brokers[broker_id]
                ctx.live_brokers[broker_id] = registration
                ctx.broker_epochs[broker_id] = epoch
                self._connect(broker_id, registration)
            await self._on_brokers_started(new + bounced)
        for broker_id, (registration, _) in brokers.items():  # an address change (dynamic listeners)
            if broker_id in ctx.live_brokers and ctx.live_brokers[broker_id] != registration:
                ctx.live_brokers[broker_id] = registration
                self._connect(broker_id, registration)
                self._send_update_metadata(ctx.live_brokers, [])

    async def _on_brokers_started(self, started: Sequence[int]) -> None:
        ctx = self.ctx
        # The new brokers learn everything; the others learn of the new brokers.
        self._send_update_metadata(started, ctx.assignments)
        others = [b for b in ctx.live_brokers if b not in started]
        self._send_update_metadata(others, [])
        hosted = sorted({tp for b in started for tp in ctx.partitions_on(b)
                         if tp in ctx.states and not ctx.is_deleting(tp[0])})
        self._send_leader_and_isr(hosted, only_to=started)
        await self._trigger_online(ctx.in_status(PartitionStatus.NEW, PartitionStatus.OFFLINE))
        await self._resume_reassignments()
        await self._resume_deletions()

    async def _on_brokers_failed(self, failed: Sequence[int]) -> None:
        ctx = self.ctx
        led = sorted(tp for tp, s in ctx.states.items() if s.leader in failed and not ctx.is_deleting(tp[0]))
        ctx.transition([tp for tp in led if ctx.status.get(tp) != PartitionStatus.NEW], PartitionStatus.OFFLINE)
        await self._trigger_online(ctx.in_status(PartitionStatus.OFFLINE))
        # The dead brokers leave the ISR of the partitions they followed.
        followed = sorted(tp for tp, s in ctx.states.items()
                          if s.leader not in failed and any(b in s.isr for b in failed)
                          and not ctx.is_deleting(tp[0]))
        await self._remove_from_isr(followed, set(failed))
        # Partitions that are still offline: every broker must hear of the dead brokers anyway.
        self._send_update_metadata(ctx.live_brokers, [tp for tp in ctx.states if ctx.leader(tp) in failed])

    async def _log_dir_events(self) -> None:
        """Kafka's LogDirEventNotification: a live broker's log directory failed, so its replicas are offline
        (leaders elected elsewhere from the ISR, it leaves the ISRs it was in) until it restarts."""
        ctx = self.ctx
        events = await self.zk.get_log_dir_events(watch=self._send)
        if not events:
            return
        await self.zk.delete_log_dir_events(events, ctx.epoch_zk_version)
        failed = sorted({b for b in events.values() if b in ctx.live_brokers and b not in ctx.offline_dirs})
        if not failed:
            return
        log.warning("controller: the log directory of broker(s) %s failed: their replicas are offline", failed)
        ctx.offline_dirs.update(failed)
        await self._on_brokers_failed(failed)  # as for dead brokers, though they stay registered

    async def _remove_from_isr(self, partitions: Sequence[TopicPartition], brokers: set[int]) -> None:
        ctx = self.ctx
        new_states: dict[TopicPartition, PartitionState] = {}
        for tp in partitions:
            state = ctx.states[tp]
            isr = [r for r in state.isr if r not in brokers]
            if not isr:  # Kafka keeps the last member (the partition goes offline with its leader)
                continue
            new_states[tp] = state.new_leader_and_isr(state.leader, isr)
        written = await self._write_states(new_states)
        self._send_leader_and_isr(sorted(written))
        self._send_update_metadata(ctx.live_brokers, sorted(written))

    # -- elections ------------------------------------------------------------------------------------------
    async def _trigger_online(self, partitions: Sequence[TopicPartition]) -> None:
        """Kafka's triggerOnlinePartitionStateChange: new partitions get their first leader, offline ones a
        new one from the live ISR (or any live replica where unclean election is on)."""
        ctx = self.ctx
        new = [tp for tp in partitions if ctx.status.get(tp) == PartitionStatus.NEW and not ctx.is_deleting(tp[0])]
        offline = [tp for tp in partitions if ctx.status.get(tp) == PartitionStatus.OFFLINE
                   and not ctx.is_deleting(tp[0])]
        if new:
            await self._initialize(new)
        if offline:
            await self._elect(offline, "offline")

    async def _initialize(self, partitions: Sequence[TopicPartition]) -> None:
        """NewPartition -> OnlinePartition: the first live replica leads, every live replica is in sync."""
        ctx = self.ctx
        states = {}
        for tp in partitions:
            live = ctx.live_replicas(tp)
            live = tuple(r for r in live if r not in ctx.shutting_down) or live
            if not live:
                log.warning("controller: no live replica of %s-%d to lead it; it stays new", *tp)
                continue
            states[tp] = PartitionState(live[0], z.INITIAL_LEADER_EPOCH, live, ctx.epoch)
        if not states:
            return
        results = await self.zk.create_partition_states(states, ctx.epoch_zk_version)
        created = []
        for tp, result in results.items():
            if isinstance(result, NodeExistsError):  # written by an earlier controller: read what it says
                found = (await self.zk.get_partition_states([tp])).get(tp)
                if found is not None:
                    ctx.states[tp] = found
                    ctx.transition([tp], PartitionStatus.ONLINE if found.leader in ctx.live_brokers
                                   else PartitionStatus.OFFLINE)
                continue
            if isinstance(result, Exception):
                log.error("controller: creating the state of %s-%d failed: %s", *tp, result)
                continue
            ctx.states[tp] = result
            ctx.transition([tp], PartitionStatus.ONLINE)
            created.append(tp)
        self._send_leader_and_isr(created, is_new=True)
        self._send_update_metadata(ctx.live_brokers, created)

    async def _elect(self, partitions: Sequence[TopicPartition], strategy: str,
                     ) -> dict[TopicPartition, ErrorCode]:
        """Elect leaders (strategy: offline, preferred, unclean, controlled_shutdown, reassign), write them,
        tell the brokers. Returns each partition's outcome."""
        ctx = self.ctx
        outcome: dict[TopicPartition, ErrorCode] = {}
        proposals: dict[TopicPartition, PartitionState] = {}
        for tp in partitions:
            state = ctx.states.get(tp)
            if state is None:
                outcome[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            result = self._election(tp, state, strategy)
            if result is None:
                outcome[tp] = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE if strategy != "preferred" else \
                    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
                if strategy == "offline":
                    log.warning("controller: no leader for %s-%d (ISR %s, live replicas %s); it is offline",
                                *tp, list(state.isr), list(ctx.live_replicas(tp)))
                    self._send_update_metadata(ctx.live_brokers, [tp])
                continue
            proposals[tp] = result
        written = await self._write_states(proposals)
        for tp in proposals:
            outcome[tp] = ErrorCode.NONE if tp in written else ErrorCode.NOT_CONTROLLER
        ctx.transition([tp for tp in written if ctx.status.get(tp) != PartitionStatus.ONLINE],
                       PartitionStatus.ONLINE)
        self._send_leader_and_isr(sorted(written))
        self._send_update_metadata(ctx.live_brokers, sorted(written))
        if written:
            log.info("controller: %s election: %s", strategy,
                     ", ".join(f"{t}-{p} -> {written[(t, p)].leader}" for t, p in sorted(written)))
        return outcome

    def _election(self, tp: TopicPartition, state: PartitionState, strategy: str) -> PartitionState | None:
        ctx = self.ctx
        assignment = ctx.replicas(tp)
        live = ctx.live_broker_ids
        if strategy == "offline":
            return elections.leader_for_offline(assignment, state, live,
                                                self.settings.unclean_leader_election(tp[0])).state
        if strategy == "unclean":
            return elections.leader_for_offline(assignment, state, live, True).state
        if strategy == "preferred":
            return elections.leader_for_preferred_replica(assignment, state, live).state
        if strategy == "controlled_shutdown":
            return elections.leader_for_controlled_shutdown(assignment, state, ctx.live_or_shutting_down,
                                                            ctx.shutting_down).state
        if strategy == "reassign":
            target = ctx.assignments[tp].target_replicas
            return elections.leader_for_reassign(target, state, live).state
        raise ValueError(strategy)

    async def _write_states(self, proposals: Mapping[TopicPartition, PartitionState],
                            ) -> dict[TopicPartition, PartitionState]:
        """Conditional updates of partition states; a lost race (someone wrote first: a leader's ISR change
        would go through this controller, so rarely) re-reads and leaves the partition as found."""
        if not proposals:
            return {}
        result = await self.zk.update_leader_and_isr(proposals, self.ctx.epoch, self.ctx.epoch_zk_version)
        written = {}
        for tp, state in result.finished.items():
            if isinstance(state, Exception):
                log.error("controller: writing the state of %s-%d failed: %s", *tp, state)
                continue
            self.ctx.states[tp] = state
            written[tp] = state
        for tp, found in result.conflicts.items():
            if found is not None:
                self.ctx.states[tp] = found
        return written

    # -- topics ---------------------------------------------------------------------------------------------
    async def _topics_changed(self) -> None:
        ctx = self.ctx
        topics = await self.zk.get_all_topics(watch=self._send)
        for gone in ctx.topics() - topics:
            ctx.remove_topic(gone)
        added = await self._read_topics(topics - ctx.topics())
        if added:
            log.info("controller: new partitions %s", ", ".join(f"{t}-{p}" for t, p in added))
            ctx.transition(added, PartitionStatus.NEW)
            self._send_update_metadata(ctx.live_brokers, added)
            await self._initialize(added)

    async def _partitions_modified(self, topic: str) -> None:
        """The topic znode changed: partitions added (CreatePartitions), or a reassignment written."""
        ctx = self.ctx
        if topic not in ctx.topic_ids:
            return
        assignment = await self.zk.get_topic_assignment(topic, watch=self._send)
        if assignment is None:
            return
        added = [tp for tp in ((topic, p) for p in assignment.partitions) if tp not in ctx.assignments]
        if ctx.is_deleting(topic):
            return
        for index, replicas in assignment.partitions.items():
            if (topic, index) in ctx.assignments:
                ctx.assignments[(topic, index)] = replicas
        if added:
            ctx.add_topic(topic, ctx.topic_ids[topic], {p: assignment.partitions[p] for _, p in added})
            ctx.transition(added, PartitionStatus.NEW)
            self._send_update_metadata(ctx.live_brokers, added)
            await self._initialize(added)

    # -- topic deletion ---------------------------------------------------------------------------------------
    async def _deletions_changed(self) -> None:
        ctx = self.ctx
        marked = set(await self.zk.get_topic_deletions(watch=self._send))
        unknown = marked - ctx.topics()
        if not self.settings.delete_topic_enable:
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
            await self._resume_deletions()

    async def _resume_deletions(self) -> None:
        """Kafka's TopicDeletionManager: the partitions go offline (leader -2 in UpdateMetadata, so brokers
        forget them), each live replica is told to stop and delete its log; once every live replica has
        done so, the topic's znodes go. Replicas on dead brokers are not waited for: a broker that comes
        back removes the logs of topics it no longer hears of."""
        ctx = self.ctx
        for topic in sorted(ctx.topics_to_delete):
            if topic in ctx.deletions_pending:
                continue
            partitions = ctx.partitions_of(topic)
            if any(ctx.assignments[tp].is_being_reassigned for tp in partitions):
                continue  # Kafka waits for the reassignment to finish
            pending = {(b, tp) for tp in partitions for b in ctx.live_replicas(tp)}
            ctx.deletions_pending[topic] = pending
            self._send_update_metadata(ctx.live_brokers, partitions, deleting=True)
            for tp in partitions:
                if ctx.status.get(tp) in (PartitionStatus.ONLINE, PartitionStatus.NEW):
                    ctx.transition([tp], PartitionStatus.OFFLINE)
            by_broker: dict[int, list[TopicPartition]] = defaultdict(list)
            for broker_id, tp in pending:
                by_broker[broker_id].append(tp)
            for broker_id, tps in by_broker.items():
                self._send_stop_replica(broker_id, tps, delete=True, on_deleted=self._replica_deleted)
            if not pending:
                await self._complete_deletion(topic)

    def _replica_deleted(self, broker_id: int, response: Any) -> None:
        failed = {(e.topic_name, e.partition_index) for e in response.partition_errors if e.error_code}
        self._send.send_nowait(_Event("replicas_deleted", (broker_id, failed, response)))

    async def _on_replicas_deleted(self, broker_id: int, failed: set[TopicPartition], response: Any) -> None:
        ctx = self.ctx
        for e in response.partition_errors:
            tp = (e.topic_name, e.partition_index)
            if tp in failed:
                log.warning("controller: broker %d could not delete %s-%d: %s", broker_id, *tp,
                            ErrorCode(e.error_code).name)
                continue
            pending = ctx.deletions_pending.get(tp[0])
            if pending is not None:
                pending.discard((broker_id, tp))
        for topic, pending in list(ctx.deletions_pending.items()):
            if not {p for p in pending if p[0] in ctx.live_brokers}:
                await self._complete_deletion(topic)

    async def _complete_deletion(self, topic: str) -> None:
        ctx = self.ctx
        partitions = ctx.partitions_of(topic)
        ctx.transition([tp for tp in partitions if ctx.status.get(tp) == PartitionStatus.OFFLINE],
                       PartitionStatus.NON_EXISTENT)
        await self.zk.delete_topic_znode(topic, ctx.epoch_zk_version)
        await self.zk.delete_topic_configs([topic], ctx.epoch_zk_version)
        await self.zk.delete_topic_deletions([topic], ctx.epoch_zk_version)
        ctx.remove_topic(topic)
        log.info("controller: deleted topic %s", topic)

    # -- requests from brokers ------------------------------------------------------------------------------
    async def _on_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> Any:
        """Move the broker's leaderships to other in-sync replicas and take it out of the ISRs; returns the
        partitions it still leads (those with no other replica: it may go anyway, they go offline)."""
        ctx = self.ctx
        if broker_id not in ctx.live_brokers:
            return ErrorCode.BROKER_NOT_AVAILABLE, []
        if broker_epoch >= 0 and ctx.broker_epochs.get(broker_id) != broker_epoch:
            return ErrorCode.STALE_BROKER_EPOCH, []
        ctx.shutting_down.add(broker_id)
        led = [tp for tp in ctx.partitions_led_by(broker_id)
               if len(ctx.replicas(tp)) > 1 and not ctx.is_deleting(tp[0])]
        if led:
            await self._elect(led, "controlled_shutdown")
        followed = sorted(tp for tp, s in ctx.states.items()
                          if s.leader != broker_id and broker_id in s.isr and not ctx.is_deleting(tp[0]))
        if followed:
            self._send_stop_replica(broker_id, followed, delete=False)
            await self._remove_from_isr(followed, {broker_id})
        remaining = [tp for tp in ctx.partitions_led_by(broker_id) if not ctx.is_deleting(tp[0])]
        log.info("controller: broker %d shutting down; it still leads %d partition(s)", broker_id, len(remaining))
        return ErrorCode.NONE, remaining

    async def _on_alter_partition(self, broker_id: int, broker_epoch: int,
                                  changes: list[tuple[TopicPartition, int, int, list[tuple[int, int]]]]) -> Any:
        """ISR changes from a partition's leader (KIP-497): (partition, leader epoch, partition epoch, new ISR
        with broker epochs). Returns, per partition, the error or the state now in force."""
        ctx = self.ctx
        if ctx.broker_epochs.get(broker_id) != broker_epoch:
            return ErrorCode.STALE_BROKER_EPOCH, {}
        out: dict[TopicPartition, Any] = {}
        proposals: dict[TopicPartition, PartitionState] = {}
        for tp, leader_epoch, partition_epoch, new_isr in changes:
            state = ctx.states.get(tp)
            if state is None or ctx.is_deleting(tp[0]):
                out[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif state.leader != broker_id:
                out[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif leader_epoch < state.leader_epoch:
                out[tp] = ErrorCode.FENCED_LEADER_EPOCH
            elif leader_epoch > state.leader_epoch:
                out[tp] = ErrorCode.NOT_CONTROLLER  # we are behind: the leader knows a newer state
            elif partition_epoch < state.zk_version:
                out[tp] = ErrorCode.INVALID_UPDATE_VERSION
            elif [b for b, _ in new_isr] == list(state.isr):
                out[tp] = state  # nothing to do: answer the current state
            else:
                ineligible = [b for b, e in new_isr if b not in ctx.live_brokers or b in ctx.shutting_down
                              or (e >= 0 and ctx.broker_epochs.get(b) != e) or b not in ctx.replicas(tp)]
                if ineligible:
                    out[tp] = ErrorCode.INELIGIBLE_REPLICA
                else:
                    proposals[tp] = replace(state, isr=tuple(b for b, _ in new_isr))
        written = await self._write_states(proposals)
        for tp in proposals:
            out[tp] = written.get(tp, ErrorCode.INVALID_UPDATE_VERSION)
        if written:
            log.info("controller: ISR of %s", ", ".join(f"{t}-{p} now {list(s.isr)}" for (t, p), s in written.items()))
            self._send_update_metadata(ctx.live_brokers, sorted(written))
            await self._maybe_complete_reassignments(sorted(written))
        return ErrorCode.NONE, out

    async def _on_elect_leaders(self, partitions: list[TopicPartition] | None, unclean: bool) -> Any:
        """ElectLeaders (KIP-460): PREFERRED moves leadership to the first replica when it is live and in
        sync; UNCLEAN elects any live replica where no in-sync one is. None: every partition."""
        ctx = self.ctx
        wanted = sorted(ctx.assignments) if partitions is None else partitions
        out: dict[TopicPartition, ErrorCode] = {}
        todo = []
        for tp in wanted:
            state = ctx.states.get(tp)
            if tp not in ctx.assignments or ctx.is_deleting(tp[0]):
                out[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif state is None:
                out[tp] = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
            elif not unclean and state.leader == ctx.replicas(tp)[0]:
                out[tp] = ErrorCode.ELECTION_NOT_NEEDED
            elif unclean and state.leader in ctx.live_broker_ids:
                out[tp] = ErrorCode.ELECTION_NOT_NEEDED
            else:
                todo.append(tp)
        out.update(await self._elect(todo, "unclean" if unclean else "preferred"))
        return out

    async def _rebalance_timer(self) -> None:
        while True:
            await trio.sleep(self.settings.rebalance_interval_s)
            self._send.send_nowait(_Event("auto_rebalance"))

    async def _on_auto_rebalance(self) -> None:
        for broker_id, partitions in self.ctx.imbalanced(self.settings.imbalance_percentage).items():
            log.info("controller: leaders of %d partition(s) preferring broker %d are elsewhere; moving them back",
                     len(partitions), broker_id)
            await self._elect(partitions, "preferred")

    async def _preferred_election_znode_changed(self) -> None:
        try:
            partitions = await self.zk.get_preferred_replica_election(watch=self._send)
        except (ValueError, NoNodeError):
            return
        if not partitions:
            return
        await self._on_elect_leaders(sorted(tp for tp in partitions if tp in self.ctx.assignments), False)
        await self.zk.delete_preferred_replica_election(self.ctx.epoch_zk_version)

    # -- reassignment (KIP-455) -------------------------------------------------------------------------------
    async def _reassignment_znode_changed(self) -> None:
        requested = await self.zk.get_partition_reassignment(watch=self._send)
        if requested:
            await self._on_alter_reassignments({tp: list(r) for tp, r in requested.items()}, from_znode=True)

    async def _on_alter_reassignments(self, targets: Mapping[TopicPartition, list[int] | None],
                                      from_znode: bool = False) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """AlterPartitionReassignments: a target replica list per partition (None cancels one in progress)."""
        ctx = self.ctx
        out: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}
        for tp, target in targets.items():
            if tp not in ctx.assignments or ctx.is_deleting(tp[0]):
                out[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
                continue
            current = ctx.assignments[tp]
            if target is None:
                if not current.is_being_reassigned:
                    out[tp] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
                    continue
                target = list(current.origin_replicas)  # Kafka's cancel: back to the original replicas
            if not target or len(set(target)) != len(target):
                out[tp] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The replica list is empty or has duplicates.")
                continue
            origin = current.origin_replicas if current.is_being_reassigned else current.replicas
            # As Kafka's controller (validateReassignment): only the replicas being added must be alive; a
            # reordering that keeps a dead replica is valid and completes once that replica is back in the ISR.
            adding = [b for b in target if b not in origin]
            if not set(adding) <= set(ctx.live_brokers):
                out[tp] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Replica assignment has brokers that are not "
                           f"alive. Replica list: {adding}, live broker list: {sorted(ctx.live_brokers)}")
                continue
            self._reassignments[tp] = tuple(target)
            await self._start_reassignment(tp, ReplicaAssignment.from_origin_and_target(origin, target))
            out[tp] = (ErrorCode.NONE, None)
        if from_znode or self._reassignments:
            await self._sync_reassignment_znode()
        return out

    async def _start_reassignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        ctx = self.ctx
        await self._write_assignment(tp, assignment)
        if await self._maybe_complete_reassignments([tp]):
            return
        # The new replicas start following: every replica of RS hears the state with a new leader epoch.
        state = ctx.states.get(tp)
        if state is not None:
            written = await self._write_states({tp: state.new_epoch()})
            self._send_leader_and_isr(sorted(written))
            self._send_update_metadata(ctx.live_brokers, sorted(written))

    async def _maybe_complete_reassignments(self, partitions: Iterable[TopicPartition]) -> bool:
        """Finish the reassignments whose target replicas are all in sync: leadership to a target replica
        if needed, the removed replicas stopped and deleted, the assignment written as the target."""
        ctx = self.ctx
        completed = False
        for tp in partitions:
            assignment = ctx.assignments.get(tp)
            state = ctx.states.get(tp)
            if assignment is None or state is None or not assignment.is_being_reassigned:
                continue
            target = assignment.target_replicas
            if not set(target) <= set(state.isr):
                continue
            if state.leader not in target or state.leader not in ctx.live_broker_ids:
                await self._elect([tp], "reassign")
                state = ctx.states[tp]
            removed = [b for b in assignment.replicas if b not in target]
            if removed:
                new_isr = [r for r in state.isr if r not in removed]
                await self._write_states({tp: state.new_leader_and_isr(state.leader, new_isr)})
            await self._write_assignment(tp, ReplicaAssignment(tuple(target)))
            for broker_id in removed:
                self._send_stop_replica(broker_id, [tp], delete=True)
            self._send_leader_and_isr([tp])
            self._send_update_metadata(ctx.live_brokers, [tp])
            self._reassignments.pop(tp, None)
            log.info("controller: reassignment of %s-%d done: replicas %s", *tp, list(target))
            completed = True
        if completed:
            await self._sync_reassignment_znode()
        return completed

    async def _resume_reassignments(self) -> None:
        ctx = self.ctx
        for tp, assignment in list(ctx.assignments.items()):
            if assignment.is_being_reassigned:
                self._send_leader_and_isr([tp])
        await self._maybe_complete_reassignments([tp for tp, a in ctx.assignments.items() if a.is_being_reassigned])

    def reassignments(self) -> dict[TopicPartition, ReplicaAssignment]:
        return {tp: a for tp, a in self.ctx.assignments.items() if a.is_being_reassigned}

    async def _write_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        ctx = self.ctx
        topic = tp[0]
        partitions = {p: ctx.assignments[(topic, p)] for _, p in ctx.partitions_of(topic)}
        partitions[tp[1]] = assignment
        await self.zk.set_topic_assignment(topic, TopicAssignment(ctx.topic_ids[topic], partitions),
                                           ctx.epoch_zk_version)
        ctx.assignments[tp] = assignment

    async def _sync_reassignment_znode(self) -> None:
        """/admin/reassign_partitions holds what is still in progress (deleted when nothing is)."""
        pending = {tp: a.target_replicas for tp, a in self.ctx.assignments.items() if a.is_being_reassigned}
        try:
            if pending:
                await self.zk.set_or_create_partition_reassignment(pending, self.ctx.epoch_zk_version)
            else:
                await self.zk.delete_partition_reassignment(self.ctx.epoch_zk_version)
        except NoNodeError:
            pass

    # -- requests to brokers -----------------------------------------------------------------------------------
    def _partition_state(self, tp: TopicPartition, *, deleting: bool = False) -> dict[str, Any]:
        ctx = self.ctx
        state = ctx.states.get(tp)
        assignment = ctx.assignments.get(tp, ReplicaAssignment(()))
        leader = z.LEADER_DURING_DELETE if deleting else (state.leader if state else z.NO_LEADER)
        return {"topic_name": tp[0], "partition_index": tp[1], "controller_epoch": ctx.epoch,
                "leader": leader, "leader_epoch": state.leader_epoch if state else -1,
                "isr": list(state.isr) if state else [], "zk_version": state.zk_version if state else -1,
                "partition_epoch": state.zk_version if state else -1, "replicas": list(assignment.replicas),
                "adding_replicas": list(assignment.adding), "removing_replicas": list(assignment.removing),
                "offline_replicas": list(ctx.offline_replicas(tp)),
                "leader_recovery_state": int(state.leader_recovery_state) if state else 0, "is_new": False}

    def _send_leader_and_isr(self, partitions: Sequence[TopicPartition], *, is_new: bool = False,
                             only_to: Iterable[int] | None = None) -> None:
        ctx = self.ctx
        targets = None if only_to is None else set(only_to)
        by_broker: dict[int, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
        for tp in partitions:
            if tp not in ctx.states:
                continue
            entry = self._partition_state(tp)
            entry["is_new"] = is_new
            for broker_id in ctx.live_replicas(tp):
                if targets is None or broker_id in targets:
                    by_broker[broker_id][tp[0]].append(entry)
        leaders = {ctx.leader(tp) for tp in partitions if ctx.leader(tp) in ctx.live_brokers}
        live_leaders = []
        for leader in sorted(leaders):
            endpoint = self._inter_broker_endpoint(leader)
            if endpoint is not None:
                live_leaders.append({"broker_id": leader, "host_name": endpoint[0], "port": endpoint[1]})
        for broker_id, topics in by_broker.items():
            body = {"controller_id": self.settings.broker_id, "is_k_raft_controller": False,
                    "controller_epoch": ctx.epoch, "broker_epoch": ctx.broker_epochs.get(broker_id, -1),
                    "type": 0,
                    "topic_states": [{"topic_name": t, "topic_id": ctx.topic_ids.get(t), "partition_states": ps}
                                     for t, ps in topics.items()],
                    "live_leaders": live_leaders}
            self.channel.send(broker_id, ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, body)

    def _inter_broker_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        registration = self.ctx.live_brokers.get(broker_id)
        if registration is None:
            return None
        endpoint = registration.endpoint(self.settings.inter_broker_listener) or (
            registration.endpoints[0] if registration.endpoints else None)
        return (endpoint.host or "localhost", endpoint.port) if endpoint is not None else None

    def _send_update_metadata(self, brokers: Iterable[int], partitions: Iterable[TopicPartition], *,
                              deleting: bool = False) -> None:
        ctx = self.ctx
        by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for tp in partitions:
            if tp in ctx.assignments:
                by_topic[tp[0]].append(self._partition_state(tp, deleting=deleting or ctx.is_deleting(tp[0])))
        live = [{"id": broker_id, "endpoints": [
                    {"port": e.port, "host": e.host or "", "listener": e.listener,
                     "security_protocol": SECURITY_PROTOCOL_IDS.get(e.security_protocol, 0)}
                    for e in registration.endpoints], "rack": registration.rack}
                for broker_id, registration in sorted(ctx.live_brokers.items())]
        for broker_id in list(brokers):
            body = {"controller_id": self.settings.broker_id, "is_k_raft_controller": False,
                    "controller_epoch": ctx.epoch, "broker_epoch": ctx.broker_epochs.get(broker_id, -1),
                    "topic_states": [{"topic_name": t, "topic_id": ctx.topic_ids.get(t), "partition_states": ps}
                                     for t, ps in by_topic.items()],
                    "live_brokers": live}
            self.channel.send(broker_id, ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, body)

    def _send_stop_replica(self, broker_id: int, partitions: Sequence[TopicPartition], *, delete: bool,
                           on_deleted: Callable[[int, Any], None] | None = None) -> None:
        ctx = self.ctx
        by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for tp in partitions:
            state = ctx.states.get(tp)
            by_topic[tp[0]].append({"partition_index": tp[1], "delete_partition": delete,
                                    "leader_epoch": -2 if delete else (state.leader_epoch if state else -1)})
        body = {"controller_id": self.settings.broker_id, "is_k_raft_controller": False,
                "controller_epoch": ctx.epoch, "broker_epoch": ctx.broker_epochs.get(broker_id, -1),
                "topic_states": [{"topic_name": t, "partition_states": ps} for t, ps in by_topic.items()]}
        self.channel.send(broker_id, ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, body, on_deleted)
