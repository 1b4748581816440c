"""Partition reassignment on the controller (KIP-455, Kafka's KafkaController.onPartitionReassignment): the
target replicas are added to the assignment (adding/removing replicas in the topic znode) and start
following; once all of them are in sync, leadership moves to a target replica if needed, the removed
replicas are stopped and deleted, and the assignment becomes the target. /admin/reassign_partitions holds
what is still in progress."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import trio

from broker.cluster.controller_requests import ControllerRequests
from broker.cluster.controller_state import ControllerContext, TopicPartition
from broker.cluster.partition_state_machine import Election, PartitionStateMachine
from protocol.header import ErrorCode
from zk.kafka_zk import KafkaZkClient
from zk.session import NoNodeError
from zk.znodes import ReplicaAssignment, TopicAssignment

log = logging.getLogger(__name__)


class PartitionReassignments:
    def __init__(self, zk: KafkaZkClient, ctx: ControllerContext, requests: ControllerRequests,
                 partitions: PartitionStateMachine, events: trio.MemorySendChannel[Any]) -> None:
        """`events`: the controller's event queue (the watch of /admin/reassign_partitions goes there)."""
        self.zk = zk
        self.ctx = ctx
        self.requests = requests
        self.partitions = partitions
        self.events = events
        self.targets: dict[TopicPartition, tuple[int, ...]] = {}  # target replicas in progress

    def in_progress(self) -> dict[TopicPartition, ReplicaAssignment]:
        return {tp: a for tp, a in self.ctx.assignments.items() if a.is_being_reassigned}

    async def znode_changed(self) -> None:
        requested = await self.zk.get_partition_reassignment(watch=self.events)
        if requested:
            await self.alter({tp: list(r) for tp, r in requested.items()}, from_znode=True)

    async def alter(self, targets: Mapping[TopicPartition, list[int] | None],
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
            self.targets[tp] = tuple(target)
            await self._start(tp, ReplicaAssignment.from_origin_and_target(origin, target))
            out[tp] = (ErrorCode.NONE, None)
        if from_znode or self.targets:
            await self._sync_znode()
        return out

    async def _start(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        ctx = self.ctx
        await self._write_assignment(tp, assignment)
        if await self.maybe_complete([tp]):
            return
        # The new replicas start following: every replica of RS hears the state with a new leader epoch.
        state = ctx.states.get(tp)
        if state is not None:
            written = await self.partitions.write_states({tp: state.new_epoch()})
            self.requests.leader_and_isr(sorted(written))
            self.requests.update_metadata(ctx.live_brokers, sorted(written))

    async def maybe_complete(self, partitions: Iterable[TopicPartition]) -> bool:
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
                await self.partitions.elect([tp], Election.REASSIGN)
                state = ctx.states[tp]
            removed = [b for b in assignment.replicas if b not in target]
            if removed:
                new_isr = [r for r in state.isr if r not in removed]
                await self.partitions.write_states({tp: state.new_leader_and_isr(state.leader, new_isr)})
            await self._write_assignment(tp, ReplicaAssignment(tuple(target)))
            for broker_id in removed:
                self.requests.stop_replica(broker_id, [tp], delete=True)
            self.requests.leader_and_isr([tp])
            self.requests.update_metadata(ctx.live_brokers, [tp])
            self.targets.pop(tp, None)
            log.info("controller: reassignment of %s-%d done: replicas %s", *tp, list(target))
            completed = True
        if completed:
            await self._sync_znode()
        return completed

    async def resume(self) -> None:
        ctx = self.ctx
        for tp, assignment in list(ctx.assignments.items()):
            if assignment.is_being_reassigned:
                self.requests.leader_and_isr([tp])
        await self.maybe_complete([tp for tp, a in ctx.assignments.items() if a.is_being_reassigned])

    async def _write_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        ctx = self.ctx
        topic = tp[0]
        partitions = {p: ctx.assignments[(topic, p)] for _, p in ctx.partitions_of(topic)}
        partitions[tp[1]] = assignment
        await self.zk.set_topic_assignment(topic, TopicAssignment(ctx.topic_ids[topic], partitions),
                                           ctx.epoch_zk_version)
        ctx.assignments[tp] = assignment

    async def _sync_znode(self) -> None:
        """/admin/reassign_partitions holds what is still in progress (deleted when nothing is)."""
        pending = {tp: a.target_replicas for tp, a in self.ctx.assignments.items() if a.is_being_reassigned}
        try:
            if pending:
                await self.zk.set_or_create_partition_reassignment(pending, self.ctx.epoch_zk_version)
            else:
                await self.zk.delete_partition_reassignment(self.ctx.epoch_zk_version)
        except NoNodeError:
            pass
