"""The append entry point (broker/log/append.py): what each origin checks, what every append does after (producer
state, the leader's hook, the fetchers' wake-up), and the errors as Kafka's codes. A real log in a temporary
directory and a real producer state."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from broker.log.append import Appended, Appender, AppendOrigin, client_batch_error
from broker.log.config import LogConfig
from broker.log.partition_log import PartitionLog
from broker.log.producer_state import ProducerStateManager
from broker.services.topics import Partition
from protocol.header import ErrorCode
from protocol.records import Record, build_batch, control_batch, iter_batches, parse_batch_header

T0 = 1_700_000_000_000
PID = 4000


def data(count: int = 2, *, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False) -> bytes:
    records = [Record(i, 0, b"k%d" % i, b"v") for i in range(count)]
    return build_batch(records, base_timestamp=T0, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       is_transactional=txn)


class Wakes:
    """Counts the appender's calls: fetches woken, leader appends."""

    def __init__(self) -> None:
        self.fetches = 0
        self.leader: list[Partition] = []

    def wake(self) -> None:
        self.fetches += 1


@pytest.fixture
def wakes() -> Wakes:
    return Wakes()


@pytest.fixture
def appender(wakes: Wakes) -> Appender:
    appender = Appender(wakes.wake)
    appender.on_leader_append = wakes.leader.append
    return appender


@pytest.fixture
def partition(tmp_path: Path) -> Partition:
    plog = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=4096), now_ms=T0)
    yield Partition("t", 0, plog, ProducerStateManager("t-0"))
    if not plog.closed:
        plog.close()


def test_a_client_batch_is_appended_and_committed_to_the_producer_state(appender, partition, wakes):
    first = appender.append(partition, data(3, pid=PID, epoch=0, seq=0), AppendOrigin.CLIENT, T0)
    assert (first.error, first.base_offset, first.last_offset, first.duplicate) == (ErrorCode.NONE, 0, 2, False)
    second = appender.append(partition, data(2, pid=PID, epoch=0, seq=3), AppendOrigin.CLIENT, T0)
    assert (second.base_offset, second.last_offset) == (3, 4)
    assert partition.producers.producers[PID].last_seq == 4
    assert (wakes.fetches, wakes.leader) == (2, [partition, partition])


def test_a_client_retry_is_acknowledged_with_its_first_offsets_and_not_appended(appender, partition, wakes):
    appender.append(partition, data(3, pid=PID, epoch=0, seq=0), AppendOrigin.CLIENT, T0)
    retry = appender.append(partition, data(3, pid=PID, epoch=0, seq=0), AppendOrigin.CLIENT, T0 + 5)
    assert (retry.error, retry.base_offset, retry.last_offset, retry.duplicate) == (ErrorCode.NONE, 0, 2, True)
    assert retry.log_append_time == T0 and retry.log_start_offset == 0  # the first append's timestamp
    assert partition.log.log_end_offset == 3
    assert wakes.fetches == 1 and len(wakes.leader) == 1  # nothing new: nobody to wake


@pytest.mark.parametrize(("origin", "expected"), [
    (AppendOrigin.CLIENT, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    (AppendOrigin.COORDINATOR, ErrorCode.NONE),  # no sequence to check for a coordinator's batch
])
def test_sequences_are_checked_for_clients_only(appender, partition, origin, expected):
    appender.append(partition, data(1, pid=PID, epoch=0, seq=0, txn=True), AppendOrigin.CLIENT, T0)
    gap = appender.append(partition, data(1, pid=PID, epoch=0, seq=7, txn=True), origin, T0)
    assert gap.error == expected
    assert partition.log.log_end_offset == (1 if expected else 2)


@pytest.mark.parametrize("origin", [AppendOrigin.CLIENT, AppendOrigin.COORDINATOR])
def test_an_older_producer_epoch_is_refused_by_client_and_coordinator_origins(appender, partition, origin):
    appender.append(partition, data(1, pid=PID, epoch=3, seq=0, txn=True), AppendOrigin.CLIENT, T0)
    stale = appender.append(partition, data(1, pid=PID, epoch=2, seq=0, txn=True), origin, T0)
    assert stale.error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert stale.message and "epoch" in stale.message and stale.base_offset == -1
    # A client's refusal is reported with the log start offset, as Kafka's errors raised at the log.
    assert stale.log_start_offset == (0 if origin is AppendOrigin.CLIENT else -1)
    assert partition.log.log_end_offset == 1


def test_a_plain_client_batch_inside_an_open_transaction_is_refused(appender, partition):
    appender.append(partition, data(1, pid=PID, epoch=0, seq=0, txn=True), AppendOrigin.CLIENT, T0)
    plain = appender.append(partition, data(1, pid=PID, epoch=0, seq=1), AppendOrigin.CLIENT, T0)
    assert plain.error == ErrorCode.INVALID_TXN_STATE


def test_a_marker_completes_the_transaction_and_a_fenced_coordinator_is_refused(appender, partition):
    appender.append(partition, data(2, pid=PID, epoch=0, seq=0, txn=True), AppendOrigin.CLIENT, T0)
    assert partition.producers.first_unstable_offset() == 0
    abort = appender.append(partition, control_batch(False, PID, 0, 5, T0), AppendOrigin.COORDINATOR, T0)
    assert (abort.error, abort.base_offset) == (ErrorCode.NONE, 2)
    assert partition.producers.first_unstable_offset() is None
    assert partition.producers.aborted_transactions(0, 3) == [(PID, 0)]
    fenced = appender.append(partition, control_batch(True, PID, 0, 4, T0), AppendOrigin.COORDINATOR, T0)
    assert (fenced.error, fenced.base_offset) == (ErrorCode.TRANSACTION_COORDINATOR_FENCED, -1)
    assert partition.log.log_end_offset == 3


def test_a_marker_of_an_older_producer_epoch_is_refused(appender, partition):
    appender.append(partition, data(1, pid=PID, epoch=2, seq=0, txn=True), AppendOrigin.CLIENT, T0)
    stale = appender.append(partition, control_batch(True, PID, 1, 0, T0), AppendOrigin.COORDINATOR, T0)
    assert stale.error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert partition.log.log_end_offset == 1


def test_replicated_batches_are_stored_as_they_are_and_replayed_unchecked(appender, partition, wakes, tmp_path):
    leader = Partition("t", 0, PartitionLog.open(tmp_path / "leader-0", LogConfig(), now_ms=T0),
                       ProducerStateManager("t-0"))
    leader_appender = Appender(lambda: None)
    leader_appender.append(leader, data(2, pid=PID, epoch=5, seq=0, txn=True), AppendOrigin.CLIENT, T0)
    leader_appender.append(leader, control_batch(True, PID, 5, 1, T0), AppendOrigin.COORDINATOR, T0)
    stored = leader.log.read(0, 1 << 20)
    leader.log.close()
    # The follower's producer state knows a newer epoch, which the other origins would refuse: the leader's
    # batches are stored nevertheless.
    partition.producers.commit(PID, 9, 0, 0, 0, T0)
    assert appender.append(partition, stored, AppendOrigin.COORDINATOR, T0).error == ErrorCode.INVALID_PRODUCER_EPOCH
    copied = appender.append(partition, stored, AppendOrigin.REPLICATION, T0)
    assert (copied.error, copied.base_offset, copied.last_offset) == (ErrorCode.NONE, 0, 2)
    assert partition.log.read(0, 1 << 20) == stored
    assert partition.producers.producers[PID].coordinator_epoch == 1  # the marker was read and replayed
    assert wakes.fetches == 1 and wakes.leader == []  # a follower's append moves no high watermark


def test_a_replicated_response_cut_inside_a_batch_is_corrupt(appender, partition):
    whole = data(2) + data(3)
    assert appender.append(partition, whole[:-5], AppendOrigin.REPLICATION, T0).error == ErrorCode.CORRUPT_MESSAGE


def test_append_errors_are_kafka_error_codes(appender, partition, wakes):
    too_large = appender.append(partition, data(1) * 80, AppendOrigin.COORDINATOR, T0)
    assert too_large.error == ErrorCode.RECORD_LIST_TOO_LARGE and "segment.bytes" in too_large.message
    assert appender.append(partition, b"\x00" * 70, AppendOrigin.CLIENT, T0).error == ErrorCode.CORRUPT_MESSAGE
    partition.log.close()  # its files are gone from under it
    failed = appender.append(partition, data(1), AppendOrigin.CLIENT, T0)
    assert failed.error == ErrorCode.KAFKA_STORAGE_ERROR and failed.message
    assert wakes.fetches == 0 and wakes.leader == []


def test_nothing_appended_is_an_empty_answer():
    assert Appended() == Appended(ErrorCode.NONE, None, -1, -1, -1, -1, False)


@pytest.mark.parametrize(("batch", "message"), [
    (control_batch(True, PID, 0, 0, T0), "Clients are not allowed to write control records"),
    (build_batch([Record(0, 0, None, b"a"), Record(1, 0, None, b"b")], last_offset_delta=5),
     "Inconsistent batch offset range [0, 5] and record count 2"),
    (data(1, pid=PID, epoch=0, seq=-1), f"Invalid sequence number -1 in record batch with producerId {PID}"),
])
def test_what_clients_may_not_write(batch, message):
    assert client_batch_error(parse_batch_header(batch)) == (ErrorCode.INVALID_RECORD, message)


def test_a_clients_ordinary_batch_passes():
    header, _start, _end = next(iter_batches(data(3, pid=PID, epoch=0, seq=0)))
    assert client_batch_error(header) is None


# -- one entry point ------------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
LOG_WRITES = {"append_as_leader", "append_as_follower"}  # PartitionLog's appends


def _log_writes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    return [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in LOG_WRITES]


def test_nothing_but_the_entry_point_appends_to_a_log():
    """Every append goes through broker/log/append.py, so the producer state, the high watermark and the waiting
    fetches follow every one of them (the log's own module defines the two methods)."""
    allowed = {ROOT / "broker" / "log" / "append.py", ROOT / "broker" / "log" / "partition_log.py"}
    found = [hit for package in ("protocol", "coordinator", "zk", "broker")
             for path in sorted((ROOT / package).rglob("*.py")) if path not in allowed
             for hit in _log_writes(path)]
    assert found == []
    assert _log_writes(ROOT / "broker" / "log" / "append.py")  # the check sees the calls it looks for
