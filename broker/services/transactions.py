"""The transaction coordinator's shell: `__transaction_state` as its log, the two-phase writes, the markers,
timeouts and recovery. The state machine itself is coordinator/txn.py (pure logic).

Every transit is written to the transactional id's partition of `__transaction_state` and completed once
that write is durable. After PrepareCommit/PrepareAbort, EndTxn is answered and the markers go to every
partition of the transaction through WriteTxnMarkers (to this broker: broker.services.marker_writer,
in-process), retried until each partition has its COMMIT/ABORT control batch; then Complete* is written.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import trio

from broker.clock import Clock
from broker.config.options import BrokerConfig
from broker.services.appends import AppendSignal
from broker.services.durability import Durability
from broker.services.internal_topics import partition_for, stored_batches
from broker.services.marker_writer import Marker
from broker.services.producer_ids import ProducerIds
from broker.services.topics import TRANSACTION_STATE_TOPIC, Partition, Topic, TopicError, TopicManager
from coordinator.txn import (
    InitResult,
    TransactionCoordinator,
    TxnConfig,
    TxnState,
    TxnTransit,
)
from protocol.header import ErrorCode
from protocol.records import Record as LogRecord
from protocol.records import build_batch
from protocol.txn_records import (
    TxnKey,
    TxnRecordError,
    TxnValue,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
)

log = logging.getLogger(__name__)

_MARKER_RETRY_S = (0.05, 0.1, 0.2, 0.5, 1.0)
_END_TXN_WAIT_S = 5.0  # longest EndTxn waits for the markers (then answers; they go on in the background)
# Errors after which a partition's marker is not retried (Kafka's TransactionMarkerRequestCompletionHandler).
_MARKER_GIVE_UP = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_PRODUCER_EPOCH,
                             ErrorCode.TRANSACTION_COORDINATOR_FENCED})


class TxnWriteError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


def transit_value(transit: TxnTransit) -> bytes:
    # Kafka writes an Empty transaction's partitions as a null array.
    partitions: dict[str, list[int]] = defaultdict(list)
    for topic, index in sorted(transit.partitions):
        partitions[topic].append(index)
    return encode_txn_value(TxnValue(
        producer_id=transit.producer_id, producer_epoch=transit.producer_epoch, timeout_ms=transit.timeout_ms,
        status=transit.state.code,
        partitions=None if transit.state is TxnState.EMPTY else tuple(
            (t, tuple(ps)) for t, ps in partitions.items()),
        last_update_ms=transit.update_ms, start_ms=transit.start_ms,
        # TV2 transactions are written as Kafka 4 does: TransactionLogValue v1 with its tagged fields.
        **({"previous_producer_id": transit.last_producer_id, "next_producer_id": transit.next_producer_id,
            "client_transaction_version": transit.client_transaction_version}
           if transit.client_transaction_version >= 2 else {})))


def transit_from_value(transactional_id: str, value: TxnValue) -> TxnTransit:
    state = TxnState.from_code(int(value.status))
    partitions = frozenset() if state is TxnState.EMPTY or value.partitions is None else frozenset(
        (t, p) for t, ps in value.partitions for p in ps)
    return TxnTransit(transactional_id, value.producer_id, value.previous_producer_id, value.producer_epoch,
                      -1, value.timeout_ms, state, partitions, value.start_ms, value.last_update_ms,
                      value.client_transaction_version, value.next_producer_id)


class TxnService:
    def __init__(self, config: BrokerConfig, topics: TopicManager, clock: Clock, durability: Durability,
                 appends: AppendSignal, producer_ids: ProducerIds, markers: Any,
                 internal_topic: Callable[[str], Topic | ErrorCode], *, per_partition: bool = False) -> None:
        """`markers.write(markers)`: WriteTxnMarkers to each partition's leader (services.marker_writer for this
        broker's partitions; in a cluster, broker.cluster.marker_channel sends the others over the network).
        `per_partition`: in a cluster, this broker coordinates the transactional ids of the
        `__transaction_state` partitions it leads (`on_partition`), the leader epoch being the coordinator
        epoch the markers carry; a single broker coordinates every id, at epoch 0."""
        self.config = config
        self.topics = topics
        self.clock = clock
        self.durability = durability
        self.appends = appends
        self.producer_ids = producer_ids
        self.markers = markers
        self._internal_topic = internal_topic
        self.per_partition = per_partition
        self.owned: dict[int, int] = {}  # partitions of __transaction_state loaded here -> leader epoch
        self.loading: dict[int, int] = {}
        c = config
        self.coordinator = TransactionCoordinator(TxnConfig(max_timeout_ms=c.transaction_max_timeout_ms,
                                                            id_expiration_ms=c.transactional_id_expiration_ms))
        self.loaded = trio.Event()
        self._wake = trio.Event()
        self._sleeping_until_ms = -math.inf  # when the timeouts task wakes up by itself (-inf: it is awake)
        self._nursery: trio.Nursery | None = None

    # -- the state topic -----------------------------------------------------------------------------
    def state_topic(self) -> Topic:
        """`__transaction_state`, created on first use; TopicError(COORDINATOR_NOT_AVAILABLE) while a cluster
        creates it."""
        topic = self._internal_topic(TRANSACTION_STATE_TOPIC)
        if isinstance(topic, ErrorCode):
            raise TopicError("COORDINATOR_NOT_AVAILABLE", "The coordinator is not available.")
        return topic

    def partition_of(self, transactional_id: str) -> Partition:
        topic = self.state_topic()
        return topic.partitions[partition_for(transactional_id, len(topic.partitions))]

    def error_for(self, transactional_id: str) -> ErrorCode | None:
        """Whether this broker coordinates the transactional id now (NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE otherwise)."""
        if not self.per_partition:
            return None if self.loaded.is_set() else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        topic = self.topics.get(TRANSACTION_STATE_TOPIC)
        if topic is None or not topic.partitions:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        index = partition_for(transactional_id, len(topic.partitions))
        if index in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if index not in self.owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    def coordinator_epoch(self, transactional_id: str) -> int:
        """The coordinator epoch markers carry: the leader epoch of the id's partition (0 on one broker)."""
        if not self.per_partition:
            return 0
        topic = self.topics.get(TRANSACTION_STATE_TOPIC)
        return self.owned.get(partition_for(transactional_id, len(topic.partitions)), 0) if topic else 0

    def on_partition(self, index: int, leader_epoch: int | None) -> None:
        """This broker became the leader of a partition of `__transaction_state` (its ids are loaded, and the
        transactions it finds in Prepare* get their markers), or stopped being it (they are forgotten here)."""
        topic = self.topics.get(TRANSACTION_STATE_TOPIC)
        count = len(topic.partitions) if topic is not None else 0
        if leader_epoch is None:
            self.owned.pop(index, None)
            self.loading.pop(index, None)
            gone = self.coordinator.unload(lambda txn_id: partition_for(txn_id, count) == index)
            if gone:
                log.info("%s-%d moved: %d transactional id(s) unloaded", TRANSACTION_STATE_TOPIC, index, gone)
            return
        if self.owned.get(index) == leader_epoch or self.loading.get(index) == leader_epoch:
            return
        self.owned.pop(index, None)
        self.loading[index] = leader_epoch
        if self._nursery is not None:
            self._nursery.start_soon(self._load_partition, index, leader_epoch)

    async def _load_partition(self, index: int, leader_epoch: int) -> None:
        topic = self.topics.get(TRANSACTION_STATE_TOPIC)
        partition = topic.partitions[index] if topic is not None and index < len(topic.partitions) else None
        if partition is None or partition.log is None or self.loading.get(index) != leader_epoch:
            return
        count = len(topic.partitions)
        self.coordinator.unload(lambda txn_id: partition_for(txn_id, count) == index)
        for txn_id, value in _replay(partition):
            self.coordinator.load(None if value is None else transit_from_value(txn_id, value), txn_id)
        if self.loading.get(index) != leader_epoch:
            return
        del self.loading[index]
        self.owned[index] = leader_epoch
        log.info("loaded the transactional ids of %s-%d (leader epoch %d)", TRANSACTION_STATE_TOPIC, index,
                 leader_epoch)
        for transit in self.coordinator.pending_markers():
            if partition_for(transit.transactional_id, count) == index:
                log.info("transaction %s: completing %s (coordinator moved here)", transit.transactional_id,
                         transit.state.value)
                self._start_markers(transit)
        self._wake.set()

    async def write(self, transit: TxnTransit, *, durable: bool = True) -> None:
        """Append the transit and wait until it is durable; complete it then, or abandon it on failure.
        Complete* need not wait: if it is lost, recovery finds Prepare* and writes the markers again."""
        partition, offset = self._append(transit)
        if durable:
            error = await self.durability.wait(partition, offset)
            if error:
                self.coordinator.abandon(transit)
                log.error("transaction %s: writing %s failed: %s", transit.transactional_id, transit.state.value,
                          error.name)
                raise TxnWriteError(_STATE_ERRORS.get(error, ErrorCode.COORDINATOR_NOT_AVAILABLE), error.name)
        self._completed(transit)

    def write_now(self, transit: TxnTransit) -> None:
        """`write` when the durability is immediate (`Durability.immediate`): nothing to wait for."""
        self._append(transit)
        self._completed(transit)

    def _append(self, transit: TxnTransit) -> tuple[Partition, int]:
        """Append the transit to its partition of the state topic: (partition, last offset); abandoned and
        TxnWriteError if that fails."""
        try:
            partition = self.partition_of(transit.transactional_id)
        except (TopicError, OSError) as exc:
            self.coordinator.abandon(transit)
            raise TxnWriteError(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)) from exc
        if partition.log is None:
            self.coordinator.abandon(transit)
            raise TxnWriteError(ErrorCode.NOT_COORDINATOR, f"{TRANSACTION_STATE_TOPIC}-{partition.index} moved")
        value = None if transit.state is TxnState.DEAD else transit_value(transit)
        batch = build_batch([LogRecord(0, 0, encode_txn_key(TxnKey(transit.transactional_id)), value)],
                            base_timestamp=transit.update_ms)
        try:
            result = partition.log.append(batch, now_ms=self.clock.now_ms())
        except OSError as exc:
            self.coordinator.abandon(transit)
            log.error("transaction %s: writing %s failed: %s", transit.transactional_id, transit.state.value, exc)
            raise TxnWriteError(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)) from exc
        self.durability.appended(partition)
        self.appends.notify()
        return partition, result.last_offset

    def _completed(self, transit: TxnTransit) -> None:
        self.coordinator.complete(transit)
        # The timeouts task sleeps until the earliest deadline: only a transaction opened now with an earlier
        # one wakes it (waking it at every write cost a scheduling round per request).
        if transit.state is TxnState.ONGOING and transit.start_ms + transit.timeout_ms < self._sleeping_until_ms:
            self._wake.set()

    # -- requests -------------------------------------------------------------------------------------
    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> InitResult:
        await self.loaded.wait()
        not_here = self.error_for(transactional_id)
        if not_here:
            return InitResult(not_here)
        new_pid = None
        if self.coordinator.needs_new_producer_id(transactional_id, expected[1] if expected else None):
            error, new_pid = await self.producer_ids.new_id()
            if error != ErrorCode.NONE:
                return InitResult(error)
        result = self.coordinator.init_producer_id(transactional_id, timeout_ms, expected, new_pid,
                                                   self.clock.now_ms())
        if result.transit is None:
            return result
        try:
            await self.write(result.transit)
        except TxnWriteError as exc:
            return InitResult(exc.error)
        if result.abort:
            self._start_markers(result.transit)
        return result

    async def apply(self, transit: TxnTransit | None, error: ErrorCode) -> ErrorCode:
        """Write a transit a request produced (if any) and answer with its error or the write's."""
        if transit is None:
            return error
        try:
            await self.write(transit)
        except TxnWriteError as exc:
            return exc.error
        if transit.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            # Kafka answers EndTxn once Prepare* is written; we also wait (boundedly) for the markers, so that
            # a read_committed consumer sees the outcome as soon as the producer does, and the producer's
            # next transaction does not meet CONCURRENT_TRANSACTIONS. The outcome is decided either way.
            done = self._start_markers(transit)
            with trio.move_on_after(_END_TXN_WAIT_S):
                await done.wait()
        return error

    def apply_now(self, transit: TxnTransit | None, error: ErrorCode) -> ErrorCode:
        """`apply` without awaiting, when the durability is immediate (`Durability.immediate`, one broker):
        after Prepare* the markers are appended at once, and Complete* written, before the answer; markers that
        must be retried go on in the background."""
        if transit is None:
            return error
        try:
            self.write_now(transit)
        except TxnWriteError as exc:
            return exc.error
        if transit.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            retry = self._markers_now(transit)
            if retry:
                self._start_markers(transit, retry)
            else:
                self._complete_now(transit.transactional_id)
        return error

    def _markers_now(self, transit: TxnTransit) -> dict[str, list[int]]:
        """Append the transaction's markers (durable at once); the partitions whose marker must be retried."""
        results = self.markers.write_now([self._marker(transit, self._by_topic(transit.partitions))])
        return self._to_retry(transit, results)

    def _complete_now(self, transactional_id: str) -> None:
        complete = self.coordinator.prepare_complete(transactional_id, self.clock.now_ms())
        if complete is not None:
            try:
                self.write_now(complete)
            except TxnWriteError:  # recovery finds Prepare* and writes the markers again
                pass

    # -- markers --------------------------------------------------------------------------------------
    def _start_markers(self, transit: TxnTransit, partitions: dict[str, list[int]] | None = None) -> trio.Event:
        """Markers and Complete* in the service's nursery (they outlive the request); the event is set when
        the transaction is complete."""
        if self._nursery is None:
            raise RuntimeError("the transaction service is not running")
        done = trio.Event()
        self._nursery.start_soon(self._complete_with_markers, transit, done, partitions)
        return done

    async def _complete_with_markers(self, transit: TxnTransit, done: trio.Event | None = None,
                                     partitions: dict[str, list[int]] | None = None) -> None:
        try:
            await self._markers_then_complete(transit, partitions)
        finally:
            if done is not None:
                done.set()

    @staticmethod
    def _by_topic(partitions: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, index in partitions:
            by_topic[topic].append(index)
        return dict(by_topic)

    def _marker(self, transit: TxnTransit, partitions: dict[str, list[int]]) -> Marker:
        return (transit.producer_id, transit.producer_epoch, transit.state is TxnState.PREPARE_COMMIT,
                self.coordinator_epoch(transit.transactional_id), partitions)

    def _to_retry(self, transit: TxnTransit, results: dict[tuple[str, int], ErrorCode]) -> dict[str, list[int]]:
        """The partitions whose marker failed with an error worth retrying (the others are logged)."""
        retry: list[tuple[str, int]] = []
        for (topic, index), error in results.items():
            if error == ErrorCode.NONE:
                continue
            if error in _MARKER_GIVE_UP:
                log.warning("transaction %s: marker for %s-%d not written: %s", transit.transactional_id,
                            topic, index, error.name)
                continue
            retry.append((topic, index))
        if retry:
            log.warning("transaction %s: retrying markers for %s", transit.transactional_id, retry)
        return self._by_topic(retry)

    async def _markers_then_complete(self, transit: TxnTransit,
                                     partitions: dict[str, list[int]] | None = None) -> None:
        """The markers of `partitions` (default: all of the transaction's), retried until written, then
        Complete*. Given partitions are retries: they wait a first delay."""
        remaining = partitions if partitions is not None else self._by_topic(transit.partitions)
        delays = iter(_MARKER_RETRY_S)
        if partitions is not None:
            await trio.sleep(next(delays))
        while remaining:
            results = await self.markers.write([self._marker(transit, remaining)])
            remaining = self._to_retry(transit, results)
            if remaining:
                await trio.sleep(next(delays, _MARKER_RETRY_S[-1]))
        while True:
            complete = self.coordinator.prepare_complete(transit.transactional_id, self.clock.now_ms())
            if complete is None:
                return
            try:
                await self.write(complete, durable=False)
                return
            except TxnWriteError:
                await trio.sleep(_MARKER_RETRY_S[-1])

    # -- background -----------------------------------------------------------------------------------
    async def run(self) -> None:
        """Replay `__transaction_state`, finish Prepare* transactions, then abort timed-out ones and forget
        expired ids."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if self.per_partition:
                self.loaded.set()
                for index, epoch in sorted(self.loading.items()):  # leaderships taken before the service ran
                    nursery.start_soon(self._load_partition, index, epoch)
            else:
                self.load()
            for transit in self.coordinator.pending_markers():
                log.info("transaction %s: completing %s after restart", transit.transactional_id,
                         transit.state.value)
                nursery.start_soon(self._complete_with_markers, transit)
            nursery.start_soon(self._run_expiry)
            await self._run_timeouts()

    def load(self) -> None:
        topic = self.topics.get(TRANSACTION_STATE_TOPIC)
        if topic is not None:
            for partition in topic.partitions:
                for txn_id, value in _replay(partition):
                    self.coordinator.load(None if value is None else transit_from_value(txn_id, value), txn_id)
            log.info("loaded %d transactional id(s) from %s", len(self.coordinator.txns), TRANSACTION_STATE_TOPIC)
        self.loaded.set()

    async def _run_timeouts(self) -> None:
        assert self._nursery is not None
        while True:
            now = self.clock.now_ms()
            deadline = self.coordinator.next_timeout()
            if deadline is not None and deadline <= now:
                for transit in self.coordinator.abort_timed_out(now):
                    self._nursery.start_soon(self.apply, transit, ErrorCode.NONE)
                continue
            self._wake = trio.Event()
            wait = min(math.inf if deadline is None else (deadline - now) / 1000,
                       self.config.transaction_abort_timed_out_interval_ms / 1000)
            self._sleeping_until_ms = now + wait * 1000
            await self.clock.wait(self._wake, wait)
            self._sleeping_until_ms = -math.inf  # awake: every change is seen at the next pass

    async def _run_expiry(self) -> None:
        interval = min(3_600_000, self.config.transactional_id_expiration_ms) / 1000
        while True:
            await self.clock.sleep(interval)
            for transit in self.coordinator.expire_ids(self.clock.now_ms()):
                try:
                    await self.write(transit)
                except TxnWriteError:
                    pass

    def changed(self) -> None:
        self._wake.set()


# Kafka's TransactionStateManager: an append's error as the coordinator answers it.
_STATE_ERRORS = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
}


def _replay(partition: Partition) -> Iterator[tuple[str, TxnValue | None]]:
    """(transactional id, value or None for a tombstone) of each record, in log order."""
    for header, records in stored_batches(partition):
        if header.is_control:
            continue
        for record in records:
            if record.key is None:
                continue
            try:
                key = decode_txn_key(record.key)
                yield key.transactional_id, None if record.value is None else decode_txn_value(record.value)
            except (TxnRecordError, ValueError) as exc:
                log.warning("skipping a %s record: %s", TRANSACTION_STATE_TOPIC, exc)
