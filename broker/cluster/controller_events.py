"""The controller's events (Kafka's ControllerEvent classes), one dataclass each: the controller's event loop
processes them one at a time, with a `match` on their type. ZooKeeper's watches arrive as
zk.session.WatchEvent; requests from this broker's handlers (ControlledShutdown, AlterPartition, ElectLeaders,
AlterPartitionReassignments) wait for their outcome through `Controller.call`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from broker.cluster.controller_state import TopicPartition

# (partition, leader epoch, partition epoch, new ISR as (broker id, broker epoch))
IsrChange = tuple[TopicPartition, int, int, list[tuple[int, int]]]


@dataclass(frozen=True, slots=True)
class ControlledShutdown:
    """A broker about to stop: its leaderships move, it leaves the ISRs."""

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class AlterPartition:
    """ISR changes from a partition's leader (KIP-497)."""

    broker_id: int
    broker_epoch: int
    changes: list[IsrChange]


@dataclass(frozen=True, slots=True)
class ElectLeaders:
    """KIP-460: preferred or unclean elections (partitions None: every partition)."""

    partitions: list[TopicPartition] | None
    unclean: bool


@dataclass(frozen=True, slots=True)
class AlterReassignments:
    """AlterPartitionReassignments: a target replica list per partition (None cancels one in progress)."""

    targets: Mapping[TopicPartition, list[int] | None]


@dataclass(frozen=True, slots=True)
class AutoRebalance:
    """The leader rebalance timer fired (auto.leader.rebalance.enable)."""


@dataclass(frozen=True, slots=True)
class ReplicasDeleted:
    """A broker answered the StopReplica(delete) of a topic being deleted."""

    broker_id: int
    failed: frozenset[TopicPartition]
    response: Any  # the StopReplica response


ControllerEvent = ControlledShutdown | AlterPartition | ElectLeaders | AlterReassignments | AutoRebalance | \
    ReplicasDeleted
