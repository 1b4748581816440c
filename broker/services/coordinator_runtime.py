"""The runtime of the coordinators that keep their state in a partitioned internal topic, as Kafka 4's
CoordinatorRuntime: the group coordinator in `__consumer_offsets`, the transaction coordinator in
`__transaction_state` (share groups' state, streams groups and a schema registry leader fit the same).

Per coordinator partition a `CoordinatorContext`: its state (Kafka's CoordinatorState: INITIAL, LOADING,
ACTIVE, FAILED, CLOSED, changed only through `transition_to`) and the leader epoch it is loaded at (the
coordinator epoch the transaction markers carry). A cluster's broker loads a partition when it becomes its
leader (`on_partition`) and forgets its keys when it stops being it; a single broker loads every partition at
start (`start`) and leads the partitions created later, empty, at once. The loader replays the partition's
batches into the coordinator (`CoordinatorShard`), yielding to other tasks between the chunks it reads, and
applies them only if the partition is still being loaded at the end.

Answers for a key (a group id, a transactional id): `error_for` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE, as Kafka's runtime answers them); writes: `append` (AppendOrigin.COORDINATOR) and
`durable` (until a write is durable, with Kafka's coordinator error for a failed wait).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Protocol

import trio

from broker.clock import Clock
from broker.log.append import Appender, AppendOrigin
from broker.services.durability import Durability
from broker.services.internal_topics import partition_for, stored_chunks
from broker.services.topics import Partition, Topic, TopicError, TopicManager
from protocol.header import ErrorCode
from protocol.records import Record, build_batch

if TYPE_CHECKING:
    from protocol.records import BatchHeader

log = logging.getLogger(__name__)


class CoordinatorState(Enum):
    INITIAL = "INITIAL"  # created, not loaded yet
    LOADING = "LOADING"  # its records are being replayed
    ACTIVE = "ACTIVE"  # loaded: its keys are served here
    FAILED = "FAILED"  # loading failed; a newer leader epoch loads it again
    CLOSED = "CLOSED"  # no longer led here: its keys are forgotten


# target -> the states it may be entered from (Kafka's CoordinatorState.canTransitionFrom)
VALID_PREVIOUS: dict[CoordinatorState, frozenset[CoordinatorState]] = {
    CoordinatorState.INITIAL: frozenset(),
    CoordinatorState.LOADING: frozenset({CoordinatorState.INITIAL, CoordinatorState.FAILED}),
    CoordinatorState.ACTIVE: frozenset({CoordinatorState.ACTIVE, CoordinatorState.LOADING}),
    CoordinatorState.FAILED: frozenset({CoordinatorState.LOADING, CoordinatorState.ACTIVE}),
    CoordinatorState.CLOSED: frozenset(CoordinatorState),
}

# What a request for a key of a partition in each state is answered (Kafka's withActiveContextOrThrow).
_ANSWERS: dict[CoordinatorState, ErrorCode | None] = {
    CoordinatorState.INITIAL: ErrorCode.NOT_COORDINATOR,
    CoordinatorState.LOADING: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    CoordinatorState.ACTIVE: None,
    CoordinatorState.FAILED: ErrorCode.NOT_COORDINATOR,
    CoordinatorState.CLOSED: ErrorCode.NOT_COORDINATOR,
}

# A failed wait for a write as a coordinator answers it (Kafka's GroupMetadataManager and
# TransactionStateManager map their appends' errors so).
DURABLE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
}


class CoordinatorStateError(Exception):
    """A transition Kafka's table does not allow (its IllegalStateException)."""


@dataclass(slots=True)
class CoordinatorContext:
    """One coordinator partition here."""

    index: int
    epoch: int = -1  # the leader epoch it is (being) loaded at
    state: CoordinatorState = CoordinatorState.INITIAL

    def transition_to(self, target: CoordinatorState) -> None:
        if self.state not in VALID_PREVIOUS[target]:
            raise CoordinatorStateError(f"partition {self.index}: cannot transition from {self.state.name} to "
                                        f"{target.name}")
        self.state = target


class CoordinatorWriteError(Exception):
    """A coordinator's write that was not appended: the error its request is answered."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class PartitionLoad(Protocol):
    """One coordinator partition being replayed."""

    def replay(self, header: BatchHeader, records: list[Record]) -> None:
        """The next stored batch (control batches too), in log order."""

    def complete(self, now_ms: int) -> None:
        """Everything is replayed: the coordinator takes the partition's state."""


class CoordinatorShard(Protocol):
    """What a coordinator gives the runtime (Kafka's CoordinatorShard and its loader)."""

    def start_load(self, index: int) -> PartitionLoad: ...

    def unload(self, belongs: Callable[[str], bool]) -> int:
        """Forget the keys for which `belongs(key)` (waiting requests answered NOT_COORDINATOR); how many."""

    def on_loaded(self, index: int, epoch: int) -> None:
        """The partition is ACTIVE (work it left pending may resume)."""


class CoordinatorRuntime:
    def __init__(self, topic_name: str, what: str, shard: CoordinatorShard, topics: TopicManager,
                 internal_topic: Callable[[str], Topic | ErrorCode], appender: Appender,
                 durability: Durability, clock: Clock, *, per_partition: bool) -> None:
        """`what`: the keys, for the logs ("group(s)"). `internal_topic(name)`: the topic, created if it is not
        there yet (an ErrorCode while it cannot be had). `per_partition`: a cluster's broker, which coordinates
        the partitions it leads; else a single broker, which coordinates them all."""
        self.topic_name = topic_name
        self.what = what
        self.shard = shard
        self.topics = topics
        self._internal_topic = internal_topic
        self.appender = appender
        self.durability = durability
        self.clock = clock
        self.per_partition = per_partition
        self.contexts: dict[int, CoordinatorContext] = {}
        self.loaded = trio.Event()  # a single broker's start-up replay is done (a cluster's: set at start)
        self._all_active = False  # a single broker whose every partition is ACTIVE: nothing to look up
        self._nursery: trio.Nursery | None = None

    # -- where a key lives ----------------------------------------------------------------------------------
    def topic(self) -> Topic:
        """The coordinator's topic, created on first use; TopicError(COORDINATOR_NOT_AVAILABLE) while a
        cluster creates it."""
        topic = self.topics.get(self.topic_name)
        if topic is not None and topic.partitions:  # there (a cluster's with its partitions): nothing to create
            return topic
        topic = self._internal_topic(self.topic_name)
        if isinstance(topic, ErrorCode):
            raise TopicError("COORDINATOR_NOT_AVAILABLE", "The coordinator is not available.")
        return topic

    def partition_of(self, key: str) -> Partition:
        topic = self.topic()
        return topic.partitions[partition_for(key, len(topic.partitions))]

    def error_for(self, key: str) -> ErrorCode | None:
        """Whether this broker coordinates `key` now: None, or NOT_COORDINATOR (its partition is led elsewhere,
        or failed to load), COORDINATOR_LOAD_IN_PROGRESS (being loaded), COORDINATOR_NOT_AVAILABLE (no topic
        yet, in a cluster)."""
        if self._all_active:
            return None
        if not self.per_partition and not self.loaded.is_set():
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        topic = self.topics.get(self.topic_name)
        if topic is None or not topic.partitions:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE if self.per_partition else None
        context = self.contexts.get(partition_for(key, len(topic.partitions)))
        if context is None:  # a single broker leads a partition created after its start, empty
            return ErrorCode.NOT_COORDINATOR if self.per_partition else None
        return _ANSWERS[context.state]

    def epoch_of(self, key: str) -> int:
        """The leader epoch of the key's partition (the coordinator epoch); 0 on a single broker."""
        if not self.per_partition:
            return 0
        topic = self.topics.get(self.topic_name)
        context = self.contexts.get(partition_for(key, len(topic.partitions))) if topic else None
        return context.epoch if context is not None and context.state is CoordinatorState.ACTIVE else 0

    def belongs(self, index: int) -> Callable[[str], bool]:
        """Whether a key's partition is `index`."""
        topic = self.topics.get(self.topic_name)
        count = len(topic.partitions) if topic is not None else 0
        return lambda key: partition_for(key, count) == index

    # -- loading and unloading --------------------------------------------------------------------------------
    def on_partition(self, index: int, leader_epoch: int | None) -> None:
        """This broker became the leader of the partition at `leader_epoch` (it is loaded, as Kafka's
        scheduleLoadOperation: an epoch seen already changes nothing; a newer one updates an ACTIVE partition's
        epoch), or stopped being it (None: its keys are forgotten here, scheduleUnloadOperation)."""
        if leader_epoch is None:
            context = self.contexts.pop(index, None)
            if context is None:
                return
            self._transition(context, CoordinatorState.CLOSED)
            gone = self.shard.unload(self.belongs(index))
            if gone:
                log.info("%s-%d moved: %d %s unloaded", self.topic_name, index, gone, self.what)
            return
        context = self.contexts.setdefault(index, CoordinatorContext(index))
        if leader_epoch <= context.epoch:
            return
        context.epoch = leader_epoch
        if context.state in (CoordinatorState.INITIAL, CoordinatorState.FAILED):
            self._transition(context, CoordinatorState.LOADING)
            if self._nursery is not None:
                self._nursery.start_soon(self._load, context)

    async def start(self, nursery: trio.Nursery) -> None:
        """A single broker replays every partition now (then `loaded` is set); a cluster's broker loads the
        partitions it became the leader of before the coordinator ran, in `nursery`."""
        self._nursery = nursery
        if not self.per_partition:
            await self.load_all()
            return
        self.loaded.set()
        for context in sorted(self.contexts.values(), key=lambda c: c.index):
            if context.state is CoordinatorState.LOADING:
                nursery.start_soon(self._load, context)

    async def load_all(self) -> None:
        """A single broker's start: every partition of the topic loaded, at leader epoch 0, one after the other."""
        topic = self.topics.get(self.topic_name)
        for partition in topic.partitions if topic is not None else ():
            context = self.contexts.setdefault(partition.index, CoordinatorContext(partition.index, 0))
            self._transition(context, CoordinatorState.LOADING)
            await self._load(context)
        self.loaded.set()
        self._all_active = all(c.state is CoordinatorState.ACTIVE for c in self.contexts.values())

    async def _load(self, context: CoordinatorContext) -> None:
        """Replay the partition into the shard, yielding between chunks; ACTIVE if it is still LOADING at the end
        (unloaded meanwhile: what was replayed is dropped), FAILED if the replay failed."""
        index = context.index
        try:
            partition = self._hosted(index)
            self.shard.unload(self.belongs(index))  # what an earlier leadership left
            load = self.shard.start_load(index)
            for chunk in stored_chunks(partition):
                if not self._loading(context):
                    return
                for header, records in chunk:
                    load.replay(header, records)
                await trio.sleep(0)  # let requests be served between chunks
            if not self._loading(context):
                return
            load.complete(self.clock.now_ms())
        except Exception:  # a broken partition fails, not the broker
            log.exception("loading %s-%d failed", self.topic_name, index)
            if self._loading(context):
                self._transition(context, CoordinatorState.FAILED)
                self.shard.unload(self.belongs(index))
            return
        self._transition(context, CoordinatorState.ACTIVE)
        if self.per_partition:
            log.info("loaded %s-%d (leader epoch %d)", self.topic_name, index, context.epoch)
        self.shard.on_loaded(index, context.epoch)

    def _hosted(self, index: int) -> Partition:
        topic = self.topics.get(self.topic_name)
        partition = topic.partitions[index] if topic is not None and index < len(topic.partitions) else None
        if partition is None or partition.log is None:
            raise CoordinatorStateError(f"{self.topic_name}-{index} is not hosted here")
        return partition

    def _loading(self, context: CoordinatorContext) -> bool:
        return self.contexts.get(context.index) is context and context.state is CoordinatorState.LOADING

    def _transition(self, context: CoordinatorContext, target: CoordinatorState) -> None:
        context.transition_to(target)
        if target is not CoordinatorState.ACTIVE:
            self._all_active = False

    # -- writing ----------------------------------------------------------------------------------------------
    def append(self, key: str, records: Sequence[tuple[bytes, bytes | None]], *, timestamp: int, now_ms: int,
               producer_id: int = -1, producer_epoch: int = -1) -> tuple[Partition, int]:
        """Append the records to the key's partition in one batch (transactional when a producer is given):
        (partition, last offset). CoordinatorWriteError if it is not appended: COORDINATOR_NOT_AVAILABLE (no
        topic yet, or the disk failed), NOT_COORDINATOR (not led here), or the append's refusal."""
        try:
            partition = self.partition_of(key)
        except (TopicError, OSError) as exc:
            raise CoordinatorWriteError(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)) from exc
        if partition.log is None or (self.per_partition and not self._active(partition.index)):
            raise CoordinatorWriteError(ErrorCode.NOT_COORDINATOR, f"{self.topic_name}-{partition.index} is not "
                                                                   "led here")
        batch = build_batch([Record(i, 0, k, v) for i, (k, v) in enumerate(records)], base_timestamp=timestamp,
                            producer_id=producer_id, producer_epoch=producer_epoch, is_transactional=producer_id >= 0)
        appended = self.appender.append(partition, batch, AppendOrigin.COORDINATOR, now_ms)
        if appended.error == ErrorCode.KAFKA_STORAGE_ERROR:
            raise CoordinatorWriteError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                        f"append to {self.topic_name}-{partition.index} failed: {appended.message}")
        if appended.error:
            raise CoordinatorWriteError(appended.error, appended.message or appended.error.name)
        return partition, appended.last_offset

    def _active(self, index: int) -> bool:
        context = self.contexts.get(index)
        return context is not None and context.state is CoordinatorState.ACTIVE

    async def durable(self, partition: Partition, offset: int) -> ErrorCode:
        """Until `offset` of the partition is durable (on disk and, in a cluster, in every in-sync replica); a
        failure as the coordinator answers it."""
        error = await self.durability.wait(partition, offset)
        return DURABLE_ERRORS.get(error, error)

    async def durable_key(self, key: str) -> ErrorCode:
        """Until everything written so far to the key's partition is durable."""
        topic = self.topics.get(self.topic_name)
        if topic is None:
            return ErrorCode.NONE
        partition = topic.partitions[partition_for(key, len(topic.partitions))]
        if partition.log is None:
            return ErrorCode.NOT_COORDINATOR
        return await self.durable(partition, partition.log.log_end_offset - 1)
