"""The controller's partition state machine at work (Kafka's PartitionStateMachine and the ISR side of its
ReplicaStateMachine): new partitions get their first leader, offline ones a new one, elections by strategy,
dead or stopping brokers out of the ISRs. Each state is written to its znode with a conditional update that
also checks /controller_epoch, then the brokers are told. The states and their checked transitions are
broker.cluster.controller_state's."""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping, Sequence

from broker.cluster.controller_requests import ControllerRequests
from broker.cluster.controller_state import ControllerContext, PartitionStatus, TopicPartition
from protocol.header import ErrorCode
from zk import leader_election as elections
from zk import znodes as z
from zk.kafka_zk import KafkaZkClient
from zk.session import NodeExistsError
from zk.znodes import PartitionState

log = logging.getLogger(__name__)


class Election(enum.Enum):
    """Kafka's PartitionLeaderElectionStrategy."""

    OFFLINE = "offline"
    PREFERRED = "preferred"
    UNCLEAN = "unclean"
    CONTROLLED_SHUTDOWN = "controlled_shutdown"
    REASSIGN = "reassign"


class PartitionStateMachine:
    def __init__(self, zk: KafkaZkClient, ctx: ControllerContext, requests: ControllerRequests,
                 unclean_leader_election: Callable[[str], bool]) -> None:
        """`unclean_leader_election(topic)`: the topic's unclean.leader.election.enable."""
        self.zk = zk
        self.ctx = ctx
        self.requests = requests
        self.unclean_leader_election = unclean_leader_election

    async def trigger_online(self, partitions: Sequence[TopicPartition]) -> None:
        """Kafka's triggerOnlinePartitionStateChange: new partitions get their first leader, offline ones a
        new one from the live ISR (or any live replica where unclean election is on)."""
        ctx = self.ctx
        new = [tp for tp in partitions if ctx.status.get(tp) == PartitionStatus.NEW and not ctx.is_deleting(tp[0])]
        offline = [tp for tp in partitions if ctx.status.get(tp) == PartitionStatus.OFFLINE
                   and not ctx.is_deleting(tp[0])]
        if new:
            await self.initialize(new)
        if offline:
            await self.elect(offline, Election.OFFLINE)

    async def initialize(self, partitions: Sequence[TopicPartition]) -> None:
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
        self.requests.leader_and_isr(created, is_new=True)
        self.requests.update_metadata(ctx.live_brokers, created)

    async def elect(self, partitions: Sequence[TopicPartition], election: Election) -> dict[TopicPartition, ErrorCode]:
        """Elect leaders, write them, tell the brokers. Returns each partition's outcome."""
        ctx = self.ctx
        outcome: dict[TopicPartition, ErrorCode] = {}
        proposals: dict[TopicPartition, PartitionState] = {}
        for tp in partitions:
            state = ctx.states.get(tp)
            if state is None:
                outcome[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            result = self._leader(tp, state, election)
            if result is None:
                outcome[tp] = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE if election is not Election.PREFERRED else \
                    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
                if election is Election.OFFLINE:
                    log.warning("controller: no leader for %s-%d (ISR %s, live replicas %s); it is offline",
                                *tp, list(state.isr), list(ctx.live_replicas(tp)))
                    self.requests.update_metadata(ctx.live_brokers, [tp])
                continue
            proposals[tp] = result
        written = await self.write_states(proposals)
        for tp in proposals:
            outcome[tp] = ErrorCode.NONE if tp in written else ErrorCode.NOT_CONTROLLER
        ctx.transition([tp for tp in written if ctx.status.get(tp) != PartitionStatus.ONLINE],
                       PartitionStatus.ONLINE)
        self.requests.leader_and_isr(sorted(written))
        self.requests.update_metadata(ctx.live_brokers, sorted(written))
        if written:
            log.info("controller: %s election: %s", election.value,
                     ", ".join(f"{t}-{p} -> {written[(t, p)].leader}" for t, p in sorted(written)))
        return outcome

    def _leader(self, tp: TopicPartition, state: PartitionState, election: Election) -> PartitionState | None:
        ctx = self.ctx
        assignment = ctx.replicas(tp)
        live = ctx.live_broker_ids
        match election:
            case Election.OFFLINE:
                return elections.leader_for_offline(assignment, state, live, self.unclean_leader_election(tp[0])).state
            case Election.UNCLEAN:
                return elections.leader_for_offline(assignment, state, live, True).state
            case Election.PREFERRED:
                return elections.leader_for_preferred_replica(assignment, state, live).state
            case Election.CONTROLLED_SHUTDOWN:
                return elections.leader_for_controlled_shutdown(assignment, state, ctx.live_or_shutting_down,
                                                                ctx.shutting_down).state
            case Election.REASSIGN:
                return elections.leader_for_reassign(ctx.assignments[tp].target_replicas, state, live).state

    async def write_states(self, proposals: Mapping[TopicPartition, PartitionState],
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

    async def remove_from_isr(self, partitions: Sequence[TopicPartition], brokers: set[int]) -> None:
        """The brokers (dead, or shutting down) leave the ISR of the partitions they follow."""
        ctx = self.ctx
        new_states: dict[TopicPartition, PartitionState] = {}
        for tp in partitions:
            state = ctx.states[tp]
            isr = [r for r in state.isr if r not in brokers]
            if not isr:  # Kafka keeps the last member (the partition goes offline with its leader)
                continue
            new_states[tp] = state.new_leader_and_isr(state.leader, isr)
        written = await self.write_states(new_states)
        self.requests.leader_and_isr(sorted(written))
        self.requests.update_metadata(ctx.live_brokers, sorted(written))
