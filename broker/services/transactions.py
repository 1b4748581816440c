"""The transaction coordinator's shell: `__transaction_state` as its log, the two-phase writes, the markers,
timeouts and recovery. The state machine itself is coordinator/txn.py (pure logic).

Every transit is written to the transactional id's partition of `__transaction_state` and completed once
that write is durable. After PrepareCommit/PrepareAbort, EndTxn is answered and the markers go to every
partition of the transaction through WriteTxnMarkers (to this broker: broker.services.marker_writer,
in-process), retried until each partition has its COMMIT/ABORT control batch; then Complete* is written.
"""

from __future__ import annotations

import functools
import logging
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import trio

from broker.clock import Clock
from broker.config.options import BrokerConfig
from broker.services.coordinator_runtime import CoordinatorRuntime, CoordinatorWriteError
from broker.services.durability import Durability
from broker.services.marker_writer import Marker
from broker.services.producer_ids import ProducerIds
from broker.services.topics import TRANSACTION_STATE_TOPIC, Partition, Topic, TopicManager
from coordinator.txn import (
    InitResult,
    TransactionCoordinator,
    TxnConfig,
    TxnState,
    TxnTransit,
)
from protocol.header import ErrorCode
from protocol.txn_records import (
    TxnKey,
    TxnRecordError,
    TxnValue,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
)

if TYPE_CHECKING:
    from broker.log.append import Appender
    from protocol.records import BatchHeader, Record

log = logging.getLogger(__name__)

_MARKER_RETRY_S = (0.05, 0.1, 0.2, 0.5, 1.0)
_END_TXN_WAIT_S = 5.0  # longest EndTxn waits for the markers (then answers; they go on in the background)
# Errors after which a partition's marker is not retried (Kafka's TransactionMarkerRequestCompletionHandler).
_MARKER_GIVE_UP = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_PRODUCER_EPOCH,
                             ErrorCode.TRANSACTION_COORDINATOR_FENCED})


TxnWriteError = CoordinatorWriteError  # a transit not written: the error its request is answered


def transit_value(transit: TxnTransit) -> bytes:
    # Kafka writes an Empty transaction's partitions as a null array.
    if transit.state is TxnState.EMPTY:
        partitions = None
    elif len(transit.partitions) == 1:
        ((topic, index),) = transit.partitions
        partitions = ((topic, (index,)),)
    else:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, index in sorted(transit.partitions):
            by_topic[topic].append(index)
        partitions = tuple((t, tuple(ps)) for t, ps in by_topic.items())
    return encode_txn_value(TxnValue(
        producer_id=transit.producer_id, producer_epoch=transit.producer_epoch, timeout_ms=transit.timeout_ms,
        status=transit.state.code, partitions=partitions, last_update_ms=transit.update_ms,
        start_ms=transit.start_ms,
        # TV2 transactions are written as Kafka 4 does: TransactionLogValue v1 with its tagged fields.
        **({"previous_producer_id": transit.last_producer_id, "next_producer_id": transit.next_producer_id,
            "client_transaction_version": transit.client_transaction_version}
           if transit.client_transaction_version >= 2 else {})))


@functools.lru_cache(maxsize=65536)  # the same few ids write again and again
def transit_key(transactional_id: str) -> bytes:
    return encode_txn_key(TxnKey(transactional_id))


def transit_from_value(transactional_id: str, value: TxnValue) -> TxnTransit:
    state = TxnState.from_code(int(value.status))
    partitions = frozenset() if state is TxnState.EMPTY or value.partitions is None else frozenset(
        (t, p) for t, ps in value.partitions for p in ps)
    return TxnTransit(transactional_id, value.producer_id, value.previous_producer_id, value.producer_epoch,
                      -1, value.timeout_ms, state, partitions, value.start_ms, value.last_update_ms,
                      value.client_transaction_version, value.next_producer_id)


class TxnService:
    def __init__(self, config: BrokerConfig, topics: TopicManager, clock: Clock, durability: Durability,
                 appender: Appender, producer_ids: ProducerIds, markers: Any,
                 internal_topic: Callable[[str], Topic | ErrorCode], *, per_partition: bool = False) -> None:
        """`markers.write(markers)`: WriteTxnMarkers to each partition's leader (services.marker_writer for this
        broker's partitions; in a cluster, broker.cluster.marker_channel sends the others over the network).
        `per_partition`: in a cluster, this broker coordinates the transactional ids of the
        `__transaction_state` partitions it leads (`runtime.on_partition`), the leader epoch being the
        coordinator epoch the markers carry; a single broker coordinates every id, at epoch 0."""
        self.config = config
        self.topics = topics
        self.clock = clock
        self.producer_ids = producer_ids
        self.markers = markers
        c = config
        self.coordinator = TransactionCoordinator(TxnConfig(max_timeout_ms=c.transaction_max_timeout_ms,
                                                            id_expiration_ms=c.transactional_id_expiration_ms))
        self.runtime = CoordinatorRuntime(TRANSACTION_STATE_TOPIC, "transactional id(s)", self, topics,
                                          internal_topic, appender, durability, clock, per_partition=per_partition)
        self.loaded = self.runtime.loaded
        self._wake = trio.Event()
        self._sleeping_until_ms = -math.inf  # when the timeouts task wakes up by itself (-inf: it is awake)
        self._nursery: trio.Nursery | None = None

    # -- the runtime's shard: loading `__transaction_state` --------------------------------------------
    def start_load(self, index: int) -> _TxnsLoad:
        return _TxnsLoad(self.coordinator)

    def unload(self, belongs: Callable[[str], bool]) -> int:
        return self.coordinator.unload(belongs)

    def on_loaded(self, index: int, epoch: int) -> None:
        """The partition's transactions left in PrepareCommit/PrepareAbort get their markers again."""
        belongs = self.runtime.belongs(index)
        for transit in self.coordinator.pending_markers():
            if belongs(transit.transactional_id):
                log.info("transaction %s: completing %s %s", transit.transactional_id, transit.state.value,
                         "(coordinator moved here)" if self.runtime.per_partition else "after restart")
                self._start_markers(transit)
        self._wake.set()

    # -- writing `__transaction_state` -----------------------------------------------------------------
    async def write(self, transit: TxnTransit, *, durable: bool = True) -> None:
        """Append the transit and wait until it is durable; complete it then, or abandon it on failure.
        Complete* need not wait: if it is lost, recovery finds Prepare* and writes the markers again."""
        partition, offset = self._append(transit)
        if durable:
            error = await self.runtime.durable(partition, offset)
            if error:
                self.coordinator.abandon(transit)
                log.error("transaction %s: writing %s failed: %s", transit.transactional_id, transit.state.value,
                          error.name)
                raise TxnWriteError(error, error.name)
        self._completed(transit)

    def write_now(self, transit: TxnTransit) -> None:
        """`write` when the durability is immediate (`Durability.immediate`): nothing to wait for."""
        self._append(transit)
        self._completed(transit)

    def _append(self, transit: TxnTransit) -> tuple[Partition, int]:
        """Append the transit to its partition of the state topic: (partition, last offset); abandoned and
        TxnWriteError if that fails."""
        value = None if transit.state is TxnState.DEAD else transit_value(transit)
        try:
            return self.runtime.append(transit.transactional_id, [(transit_key(transit.transactional_id), value)],
                                       timestamp=transit.update_ms, now_ms=self.clock.now_ms())
        except CoordinatorWriteError as exc:
            self.coordinator.abandon(transit)
            log.error("transaction %s: writing %s failed: %s", transit.transactional_id, transit.state.value,
                      exc.message)
            raise

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
        not_here = self.runtime.error_for(transactional_id)
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

    def apply_now(self, transit: TxnTransit | None, error: ErrorCode) -> tuple[ErrorCode, Callable[[], None] | None]:
        """`apply` without awaiting, when the durability is immediate (`Durability.immediate`, one broker): the
        transit is written now; the answer's error, and after Prepare* what follows the answer (`then`): the
        markers appended at once (those that must be retried go on in the background) and Complete* written.
        The caller runs `then` before any other request is served, as soon as its answer is sent (Kafka, too,
        answers EndTxn once Prepare* is durable): nobody sees the transaction between the two."""
        if transit is None:
            return error, None
        try:
            self.write_now(transit)
        except TxnWriteError as exc:
            return exc.error, None
        if transit.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return error, lambda: self._end_now(transit)
        return error, None

    def _end_now(self, transit: TxnTransit) -> None:
        retry = self._markers_now(transit)
        if retry:
            self._start_markers(transit, retry)
        else:
            self._complete_now(transit.transactional_id)

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
                self.runtime.epoch_of(transit.transactional_id), partitions)

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
        """Load `__transaction_state` (a single broker, all of it now; a cluster's, partition by partition as it
        becomes their leader) and finish its Prepare* transactions, then abort timed-out ones and forget
        expired ids."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await self.runtime.start(nursery)
            if not self.runtime.per_partition:
                log.info("loaded %d transactional id(s) from %s", len(self.coordinator.txns),
                         TRANSACTION_STATE_TOPIC)
            nursery.start_soon(self._run_expiry)
            await self._run_timeouts()

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


class _TxnsLoad:
    """One partition of `__transaction_state` replayed: each transactional id's last transit (a tombstone:
    none), given to the coordinator once the whole partition is read."""

    def __init__(self, coordinator: TransactionCoordinator) -> None:
        self.coordinator = coordinator
        self.transits: list[tuple[str, TxnValue | None]] = []

    def replay(self, header: BatchHeader, records: list[Record]) -> None:
        if header.is_control:
            return
        for record in records:
            if record.key is None:
                continue
            try:
                key = decode_txn_key(record.key)
                self.transits.append(
                    (key.transactional_id, None if record.value is None else decode_txn_value(record.value)))
            except (TxnRecordError, ValueError) as exc:
                log.warning("skipping a %s record: %s", TRANSACTION_STATE_TOPIC, exc)

    def complete(self, now_ms: int) -> None:
        for txn_id, value in self.transits:
            self.coordinator.load(None if value is None else transit_from_value(txn_id, value), txn_id)
