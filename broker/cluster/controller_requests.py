"""What the controller tells the brokers (Kafka's ControllerBrokerRequestBatch): LeaderAndIsr to a partition's
live replicas, UpdateMetadata to every live broker, StopReplica to replicas that must stop (and delete, for a
topic being deleted or a replica reassigned away), each built from the controller's context and carrying its
epoch. They go through the controller's channel (broker.cluster.channel), in order per broker."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from broker.cluster.channel import ControllerChannel
from broker.cluster.controller_state import ControllerContext, TopicPartition
from protocol.header import ApiKey
from zk import znodes as z
from zk.znodes import BrokerRegistration, Endpoint, ReplicaAssignment

LEADER_AND_ISR_VERSION = 6
UPDATE_METADATA_VERSION = 7
STOP_REPLICA_VERSION = 4
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class ControllerRequests:
    def __init__(self, ctx: ControllerContext, channel: ControllerChannel, controller_id: int,
                 inter_broker_listener: str) -> None:
        self.ctx = ctx
        self.channel = channel
        self.controller_id = controller_id
        self.inter_broker_listener = inter_broker_listener

    def inter_broker_endpoint(self, registration: BrokerRegistration) -> Endpoint | None:
        """Where the controller and the leaders reach a broker: its inter-broker listener (else its first)."""
        return registration.endpoint(self.inter_broker_listener) or (
            registration.endpoints[0] if registration.endpoints else None)

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

    def leader_and_isr(self, partitions: Sequence[TopicPartition], *, is_new: bool = False,
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
            endpoint = self.inter_broker_endpoint(ctx.live_brokers[leader])
            if endpoint is not None:
                live_leaders.append({"broker_id": leader, "host_name": endpoint.host or "localhost",
                                     "port": endpoint.port})
        for broker_id, topics in by_broker.items():
            body = {"controller_id": self.controller_id, "is_k_raft_controller": False,
                    "controller_epoch": ctx.epoch, "broker_epoch": ctx.broker_epochs.get(broker_id, -1),
                    "type": 0,
                    "topic_states": [{"topic_name": t, "topic_id": ctx.topic_ids.get(t), "partition_states": ps}
                                     for t, ps in topics.items()],
                    "live_leaders": live_leaders}
            self.channel.send(broker_id, ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, body)

    def update_metadata(self, brokers: Iterable[int], partitions: Iterable[TopicPartition], *,
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
            body = {"controller_id": self.controller_id, "is_k_raft_controller": False,
                    "controller_epoch": ctx.epoch, "broker_epoch": ctx.broker_epochs.get(broker_id, -1),
                    "topic_states": [{"topic_name": t, "topic_id": ctx.topic_ids.get(t), "partition_states": ps}
                                     for t, ps in by_topic.items()],
                    "live_brokers": live}
            self.channel.send(broker_id, ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, body)

    def stop_replica(self, broker_id: int, partitions: Sequence[TopicPartition], *, delete: bool,
                     on_deleted: Callable[[int, Any], None] | None = None) -> None:
        ctx = self.ctx
        by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for tp in partitions:
            state = ctx.states.get(tp)
            by_topic[tp[0]].append({"partition_index": tp[1], "delete_partition": delete,
                                    "leader_epoch": -2 if delete else (state.leader_epoch if state else -1)})
        body = {"controller_id": self.controller_id, "is_k_raft_controller": False,
                "controller_epoch": ctx.epoch, "broker_epoch": ctx.broker_epochs.get(broker_id, -1),
                "topic_states": [{"topic_name": t, "partition_states": ps} for t, ps in by_topic.items()]}
        self.channel.send(broker_id, ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, body, on_deleted)
