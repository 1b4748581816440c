"""How the share partitions (on their partition leaders) and the group coordinator reach the share coordinator
(Kafka's Persister: DefaultStatePersister and its PersisterStateManager): Initialize, Read, Write, Delete and
ReadSummary of one share partition's state, sent to the coordinator of its key, the leader of the key's
`__share_group_state` partition. That is this broker on a single broker (a call into
broker.services.share_coordinator), and in a cluster this broker or another one (the same requests over the
network, broker.cluster.share_state_channel). A coordinator that is moving, loading or not there yet is asked
again, with a back-off, until the request's deadline, as Kafka's persister retries.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import trio

from broker.services.internal_topics import partition_for
from broker.services.topics import SHARE_STATE_TOPIC, Topic, TopicManager
from coordinator.share_coordinator import (
    UNINITIALIZED_START_OFFSET,
    UNKNOWN,
    Key,
    Outcome,
    PersisterBatch,
    batches_in,
    coordinator_key,
)
from protocol.header import ApiKey, ErrorCode

if TYPE_CHECKING:
    from broker.services.share_coordinator import ShareCoordinatorService

log = logging.getLogger(__name__)

# Kafka's persister asks again on these (the coordinator moved, is loading, or its topic is being created).
RETRIABLE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                       ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.REQUEST_TIMED_OUT,
                       ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND})
DEADLINE_S = 30.0
BACKOFF_S = (0.05, 1.0)  # first and longest wait between tries


@dataclass(frozen=True, slots=True)
class StateResult:
    """A share partition's answer from its coordinator: the error, and what a read or summary returned."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    state_epoch: int = 0
    leader_epoch: int = 0
    start_offset: int = UNINITIALIZED_START_OFFSET
    delivery_complete_count: int = UNKNOWN
    batches: tuple[PersisterBatch, ...] = field(default_factory=tuple)


class RemoteCoordinators(Protocol):
    """The share coordinators of other brokers (broker.cluster.share_state_channel.ShareStateChannel)."""

    async def request(self, broker_id: int, api_key: ApiKey, body: dict[str, Any]) -> StateResult: ...


def _result(outcome: Outcome) -> StateResult:
    state = outcome.state
    if state is None:
        return StateResult(outcome.error, outcome.message,
                           start_offset=UNINITIALIZED_START_OFFSET if not outcome.error else 0)
    return StateResult(outcome.error, outcome.message, state.state_epoch, state.leader_epoch, state.start_offset,
                       state.delivery_complete_count, state.batches)


class SharePersister:
    def __init__(self, node_id: int, topics: TopicManager, local: Callable[[], ShareCoordinatorService],
                 remote: RemoteCoordinators | None, internal_topic: Callable[[str], Topic | ErrorCode]) -> None:
        """`local()`: this broker's share coordinator (built on first use). `remote`: the others' (None: a single
        broker coordinates every key). `internal_topic(name)`: `__share_group_state`, created on first use."""
        self.node_id = node_id
        self.topics = topics
        self._local = local
        self._remote = remote
        self._internal_topic = internal_topic

    async def initialize(self, key: Key, state_epoch: int, start_offset: int) -> StateResult:
        return await self._send(key, ApiKey.INITIALIZE_SHARE_GROUP_STATE,
                                {"state_epoch": state_epoch, "start_offset": start_offset},
                                lambda c: c.initialize(key, state_epoch, start_offset))

    async def read(self, key: Key, leader_epoch: int) -> StateResult:
        return await self._send(key, ApiKey.READ_SHARE_GROUP_STATE, {"leader_epoch": leader_epoch},
                                lambda c: c.read(key, leader_epoch))

    async def write(self, key: Key, state_epoch: int, leader_epoch: int, start_offset: int,
                    delivery_complete_count: int, batches: Sequence[PersisterBatch]) -> StateResult:
        body = {"state_epoch": state_epoch, "leader_epoch": leader_epoch, "start_offset": start_offset,
                "delivery_complete_count": delivery_complete_count, "state_batches": [
                    {"first_offset": b.first_offset, "last_offset": b.last_offset,
                     "delivery_state": b.delivery_state, "delivery_count": b.delivery_count} for b in batches]}
        return await self._send(key, ApiKey.WRITE_SHARE_GROUP_STATE, body, lambda c: c.write(
            key, state_epoch, leader_epoch, start_offset, delivery_complete_count, batches))

    async def delete(self, key: Key) -> StateResult:
        return await self._send(key, ApiKey.DELETE_SHARE_GROUP_STATE, {}, lambda c: c.delete(key))

    async def summary(self, key: Key) -> StateResult:
        return await self._send(key, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, {"leader_epoch": 0},
                                lambda c: c.summary(key))

    async def _send(self, key: Key, api_key: ApiKey, partition_body: dict[str, Any],
                    local: Callable[[ShareCoordinatorService], Any]) -> StateResult:
        """The request to the key's coordinator, asked again while the answer is retriable (until DEADLINE_S)."""
        deadline = trio.current_time() + DEADLINE_S
        backoff = BACKOFF_S[0]
        while True:
            leader = self._coordinator_of(key)
            if isinstance(leader, ErrorCode):
                result = StateResult(leader, "The coordinator is not available.")
            elif leader == self.node_id or self._remote is None:
                result = _result(await local(self._local()))
            else:
                result = await self._remote.request(leader, api_key, {"group_id": key[0], "topics": [
                    {"topic_id": key[1], "partitions": [{"partition": key[2], **partition_body}]}]})
            if result.error in RETRIABLE:
                log.info("share state %s of %s: %s %s", api_key.name, coordinator_key(*key), result.error.name,
                         result.message or "")
            if result.error not in RETRIABLE or trio.current_time() + backoff > deadline:
                if result.error in RETRIABLE:
                    log.warning("share state %s of %s: %s after %.0f s", api_key.name, coordinator_key(*key),
                                result.error.name, DEADLINE_S)
                return result
            await trio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_S[1])

    def _coordinator_of(self, key: Key) -> int | ErrorCode:
        """The broker that leads the key's `__share_group_state` partition (the topic created on first use)."""
        topic = self._internal_topic(SHARE_STATE_TOPIC)
        if isinstance(topic, ErrorCode):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        partition = topic.partitions[partition_for(coordinator_key(*key), len(topic.partitions))]
        if self._remote is None:
            return self.node_id
        return partition.leader if partition.leader >= 0 else ErrorCode.COORDINATOR_NOT_AVAILABLE


def remote_result(api_key: ApiKey, response: Any) -> StateResult:
    """The one share partition's answer of a state API response (a decoded response of the network)."""
    results = list(response.results)
    if not results or not results[0].partitions:
        return StateResult(ErrorCode.UNKNOWN_SERVER_ERROR, f"an empty {api_key.name} answer")
    p = results[0].partitions[0]
    error = ErrorCode(p.error_code)
    if api_key is ApiKey.READ_SHARE_GROUP_STATE:
        return StateResult(error, p.error_message, p.state_epoch, 0, p.start_offset, UNKNOWN,
                           batches_in(p.state_batches))
    if api_key is ApiKey.READ_SHARE_GROUP_STATE_SUMMARY:
        return StateResult(error, p.error_message, p.state_epoch, p.leader_epoch, p.start_offset,
                           getattr(p, "delivery_complete_count", UNKNOWN))
    return StateResult(error, p.error_message)
