"""The controller (Kafka 3.x's KafkaController in ZooKeeper mode): one broker, elected through the
ephemeral /controller, that watches ZooKeeper and tells the brokers what to do.

Events (ZooKeeper watches, ControlledShutdown and AlterPartition requests, the leader rebalance timer: one
dataclass each, broker.cluster.controller_events) are processed one at a time by one task, as Kafka's
ControllerEventManager does. Each partition's state is in
its znode, written only with a conditional update that also checks /controller_epoch (a controller that
lost its place cannot write); then the brokers are told: LeaderAndIsr to a partition's replicas,
UpdateMetadata to every live broker, StopReplica to replicas that must stop (and delete, for a topic
being deleted or a replica reassigned away). Every request carries the controller epoch; brokers refuse
an older one.

What it does, as Kafka does it: failover (read everything, publish it, elect leaders for partitions that
have none), broker startup and failure (new leaders from the live ISR, the dead broker out of the ISR),
topic creation, partition growth and deletion, controlled shutdown, ISR changes from leaders
(AlterPartition), preferred-leader and unclean elections, partition reassignment (KIP-455: the new
replicas added, caught up, then the old ones removed), and the automatic leader rebalance. Beside it, as in
Kafka: the partition state machine (partition_state_machine.py), topic deletion (topic_deletion.py),
reassignment (reassignment.py) and the requests to the brokers (controller_requests.py, over channel.py).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import trio

from broker.cluster.channel import ControllerChannel
from broker.cluster.controller_events import (
    AlterPartition,
    AlterReassignments,
    AutoRebalance,
    ControlledShutdown,
    ControllerEvent,
    ElectLeaders,
    IsrChange,
    ReplicasDeleted,
)
from broker.cluster.controller_requests import ControllerRequests
from broker.cluster.controller_state import ControllerContext, PartitionStatus, TopicPartition
from broker.cluster.partition_state_machine import Election, PartitionStateMachine
from broker.cluster.reassignment import PartitionReassignments
from broker.cluster.topic_deletion import TopicDeletionManager
from protocol.header import ErrorCode
from zk import znodes as z
from zk.errors import ControllerMovedError, ZooKeeperError
from zk.kafka_zk import KafkaZkClient
from zk.session import NoNodeError, WatchEvent
from zk.znodes import BrokerRegistration, PartitionState, TopicAssignment

log = logging.getLogger(__name__)


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
class _Call:
    """An event whose outcome someone awaits (`Controller.call`)."""

    event: ControllerEvent
    reply: Callable[[Any], None]


class Controller:
    def __init__(self, zk: KafkaZkClient, settings: ControllerSettings, epoch: int, epoch_zk_version: int,
                 security: Any = None) -> None:
        """`security`: TLS and SASL for the connections to the brokers' inter-broker listener."""
        self.zk = zk
        self.settings = settings
        self.ctx = ControllerContext(epoch=epoch, epoch_zk_version=epoch_zk_version)
        self.channel = ControllerChannel(settings.broker_id, timeout=settings.request_timeout_s, security=security)
        # ZooKeeper's watches send their WatchEvent here too.
        self._send, self._receive = trio.open_memory_channel[WatchEvent | ControllerEvent | _Call](math.inf)
        self.requests = ControllerRequests(self.ctx, self.channel, settings.broker_id, settings.inter_broker_listener)
        self.partitions = PartitionStateMachine(zk, self.ctx, self.requests, settings.unclean_leader_election)
        self.deletion = TopicDeletionManager(zk, self.ctx, self.requests, self._send, settings.delete_topic_enable)
        self.reassignments = PartitionReassignments(zk, self.ctx, self.requests, self.partitions, self._send)
        self._active = False

    @property
    def epoch(self) -> int:
        return self.ctx.epoch

    @property
    def active(self) -> bool:
        return self._active

    # -- events from outside (request handlers, on the broker's trio loop) -----------------------------------
    async def call(self, event: ControllerEvent, *, timeout: float = 30.0) -> Any:
        """Queue an event and wait for the controller's outcome (an exception is returned, not raised)."""
        reply = _Reply()
        self._send.send_nowait(_Call(event, reply.set))
        with trio.move_on_after(timeout):
            return await reply.wait()
        return TimeoutError(f"the controller did not process {type(event).__name__} within {timeout:g} s")

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
                if isinstance(event, _Call):
                    event.reply(Resigned("the controller moved"))

    async def _process(self, item: WatchEvent | ControllerEvent | _Call) -> None:
        reply = item.reply if isinstance(item, _Call) else None
        event = item.event if isinstance(item, _Call) else item
        try:
            result = await self._handle(event)
            if reply is not None:
                reply(result)
        except ControllerMovedError as exc:
            raise Resigned(str(exc)) from exc
        except Exception as exc:
            if reply is not None:
                reply(exc)
            if isinstance(exc, ZooKeeperError):
                raise
            log.exception("controller: processing %s failed", event)

    async def _handle(self, event: WatchEvent | ControllerEvent) -> Any:
        match event:
            case WatchEvent():
                await self._on_watch(event)
            case ControlledShutdown(broker_id, broker_epoch):
                return await self._controlled_shutdown(broker_id, broker_epoch)
            case AlterPartition(broker_id, broker_epoch, changes):
                return await self._alter_partition(broker_id, broker_epoch, changes)
            case ElectLeaders(partitions, unclean):
                return await self._elect_leaders(partitions, unclean)
            case AlterReassignments(targets):
                return await self.reassignments.alter(targets)
            case AutoRebalance():
                await self._auto_rebalance()
            case ReplicasDeleted():
                await self.deletion.replicas_deleted(event)
        return None

    async def _on_watch(self, event: WatchEvent) -> None:
        path = event.path
        if path == z.BROKER_IDS:
            await self._brokers_changed()
        elif path == z.TOPICS:
            await self._topics_changed()
        elif path.startswith(z.TOPICS + "/"):
            await self._partitions_modified(path.rsplit("/", 1)[1])
        elif path == z.DELETE_TOPICS:
            await self.deletion.marked()
        elif path == z.REASSIGN_PARTITIONS:
            await self.reassignments.znode_changed()
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
        self.requests.update_metadata(ctx.live_brokers, ctx.assignments)
        self.requests.leader_and_isr([tp for tp in ctx.states if not ctx.is_deleting(tp[0])])
        await self.partitions.trigger_online(ctx.in_status(PartitionStatus.NEW, PartitionStatus.OFFLINE))
        # Brokers that died with no controller to see it (the previous controller among them) leave the ISRs
        # they are still in, as Kafka's replica state machine moves their replicas to OfflineReplica at
        # failover: an ISR naming a dead follower holds every acks=all produce until the leader's
        # replica.lag.time.max.ms.
        followed = sorted(tp for tp, s in ctx.states.items() if s.leader in ctx.live_brokers
                          and any(b not in ctx.live_brokers for b in s.isr) and not ctx.is_deleting(tp[0]))
        dead = {b for tp in followed for b in ctx.states[tp].isr if b not in ctx.live_brokers}
        await self.partitions.remove_from_isr(followed, dead)
        await self.reassignments.znode_changed()
        await self._preferred_election_znode_changed()
        await self._log_dir_events()
        await self.deletion.resume()

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
        for tp in added:
            self.reassignments.targets.pop(tp, None)
        return added

    # -- brokers --------------------------------------------------------------------------------------------
    def _connect(self, broker_id: int, registration: BrokerRegistration) -> None:
        endpoint = self.requests.inter_broker_endpoint(registration)
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
                self.requests.update_metadata(ctx.live_brokers, [])

    async def _on_brokers_started(self, started: Sequence[int]) -> None:
        ctx = self.ctx
        # The new brokers learn everything; the others learn of the new brokers.
        self.requests.update_metadata(started, ctx.assignments)
        others = [b for b in ctx.live_brokers if b not in started]
        self.requests.update_metadata(others, [])
        hosted = sorted({tp for b in started for tp in ctx.partitions_on(b)
                         if tp in ctx.states and not ctx.is_deleting(tp[0])})
        self.requests.leader_and_isr(hosted, only_to=started)
        await self.partitions.trigger_online(ctx.in_status(PartitionStatus.NEW, PartitionStatus.OFFLINE))
        await self.reassignments.resume()
        await self.deletion.resume()

    async def _on_brokers_failed(self, failed: Sequence[int]) -> None:
        ctx = self.ctx
        led = sorted(tp for tp, s in ctx.states.items() if s.leader in failed and not ctx.is_deleting(tp[0]))
        ctx.transition([tp for tp in led if ctx.status.get(tp) != PartitionStatus.NEW], PartitionStatus.OFFLINE)
        await self.partitions.trigger_online(ctx.in_status(PartitionStatus.OFFLINE))
        # The dead brokers leave the ISR of the partitions they followed.
        followed = sorted(tp for tp, s in ctx.states.items()
                          if s.leader not in failed and any(b in s.isr for b in failed)
                          and not ctx.is_deleting(tp[0]))
        await self.partitions.remove_from_isr(followed, set(failed))
        # Partitions that are still offline: every broker must hear of the dead brokers anyway.
        self.requests.update_metadata(ctx.live_brokers, [tp for tp in ctx.states if ctx.leader(tp) in failed])

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
            self.requests.update_metadata(ctx.live_brokers, added)
            await self.partitions.initialize(added)

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
            self.requests.update_metadata(ctx.live_brokers, added)
            await self.partitions.initialize(added)

    # -- requests from brokers ------------------------------------------------------------------------------
    async def _controlled_shutdown(self, broker_id: int, broker_epoch: int) -> Any:
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
            await self.partitions.elect(led, Election.CONTROLLED_SHUTDOWN)
        followed = sorted(tp for tp, s in ctx.states.items()
                          if s.leader != broker_id and broker_id in s.isr and not ctx.is_deleting(tp[0]))
        if followed:
            self.requests.stop_replica(broker_id, followed, delete=False)
            await self.partitions.remove_from_isr(followed, {broker_id})
        remaining = [tp for tp in ctx.partitions_led_by(broker_id) if not ctx.is_deleting(tp[0])]
        log.info("controller: broker %d shutting down; it still leads %d partition(s)", broker_id, len(remaining))
        return ErrorCode.NONE, remaining

    async def _alter_partition(self, broker_id: int, broker_epoch: int, changes: list[IsrChange]) -> Any:
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
        written = await self.partitions.write_states(proposals)
        for tp in proposals:
            out[tp] = written.get(tp, ErrorCode.INVALID_UPDATE_VERSION)
        if written:
            log.info("controller: ISR of %s", ", ".join(f"{t}-{p} now {list(s.isr)}" for (t, p), s in written.items()))
            self.requests.update_metadata(ctx.live_brokers, sorted(written))
            await self.reassignments.maybe_complete(sorted(written))
        return ErrorCode.NONE, out

    async def _elect_leaders(self, partitions: list[TopicPartition] | None, unclean: bool) -> Any:
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
        out.update(await self.partitions.elect(todo, Election.UNCLEAN if unclean else Election.PREFERRED))
        return out

    async def _rebalance_timer(self) -> None:
        while True:
            await trio.sleep(self.settings.rebalance_interval_s)
            self._send.send_nowait(AutoRebalance())

    async def _auto_rebalance(self) -> None:
        for broker_id, partitions in self.ctx.imbalanced(self.settings.imbalance_percentage).items():
            log.info("controller: leaders of %d partition(s) preferring broker %d are elsewhere; moving them back",
                     len(partitions), broker_id)
            await self.partitions.elect(partitions, Election.PREFERRED)

    async def _preferred_election_znode_changed(self) -> None:
        try:
            partitions = await self.zk.get_preferred_replica_election(watch=self._send)
        except (ValueError, NoNodeError):
            return
        if not partitions:
            return
        await self._elect_leaders(sorted(tp for tp in partitions if tp in self.ctx.assignments), False)
        await self.zk.delete_preferred_replica_election(self.ctx.epoch_zk_version)
