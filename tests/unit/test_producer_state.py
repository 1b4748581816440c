"""Producer state per partition: Kafka's epoch and sequence rules, the last-5 dedup window, snapshots,
open transactions, markers, the LSO and the aborted-transaction index."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from broker.log.producer_state import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    INT32_MAX,
    AbortedTxn,
    Check,
    ProducerStateManager,
    Verdict,
    in_sequence,
    increment_sequence,
)

PID = 4000


def _append(state: ProducerStateManager, seq: int, count: int, offset: int, epoch: int = 0, pid: int = PID,
            ts: int = 1000) -> Verdict:
    check = state.check(pid, epoch, seq, count - 1)
    if check.verdict is Verdict.APPEND:
        state.commit(pid, epoch, seq, count - 1, offset, ts)
    return check.verdict


def test_sequence_arithmetic_wraps_at_int32_max() -> None:
    assert increment_sequence(5, 3) == 8
    assert increment_sequence(INT32_MAX, 1) == 0
    assert increment_sequence(INT32_MAX - 1, 3) == 1
    assert in_sequence(INT32_MAX, 0)
    assert in_sequence(7, 8)
    assert not in_sequence(7, 9)
    assert not in_sequence(INT32_MAX, 1)


def test_in_order_batches_append() -> None:
    state = ProducerStateManager("t-0")
    assert _append(state, 0, 3, 0) is Verdict.APPEND
    assert _append(state, 3, 2, 3) is Verdict.APPEND
    assert state.producers[PID].last_seq == 4


def test_duplicate_of_any_of_last_five_returns_original_offsets() -> None:
    state = ProducerStateManager("t-0")
    for i in range(7):
        assert _append(state, i * 2, 2, 100 + i * 2) is Verdict.APPEND
    # Batches 2..6 (sequences 4-13) are remembered; 0 and 1 fell out of the window.
    for i in range(2, 7):
        check = state.check(PID, 0, i * 2, 1)
        assert check.verdict is Verdict.DUPLICATE
        assert (check.duplicate.first_offset, check.duplicate.last_offset) == (100 + i * 2, 101 + i * 2)
    old = state.check(PID, 0, 0, 1)
    assert (old.verdict, old.error) == (Verdict.REJECT, "OUT_OF_ORDER_SEQUENCE_NUMBER")


def test_gap_is_out_of_order() -> None:
    state = ProducerStateManager("t-0")
    _append(state, 0, 5, 0)
    check = state.check(PID, 0, 6, 0)
    assert (check.verdict, check.error) == (Verdict.REJECT, "OUT_OF_ORDER_SEQUENCE_NUMBER")
    # Same first sequence but a different range is not a duplicate either.
    check = state.check(PID, 0, 0, 1)
    assert check.error == "OUT_OF_ORDER_SEQUENCE_NUMBER"


def test_unknown_producer_may_start_anywhere() -> None:
    # Kafka accepts any first sequence from a producer the partition has no state for (its state may have
    # expired): ProducerAppendInfo.checkSequence with no current epoch.
    state = ProducerStateManager("t-0")
    assert state.check(PID, 0, 5, 0).verdict is Verdict.APPEND
    assert state.check(PID, 0, 0, 0).verdict is Verdict.APPEND


def test_epoch_rules() -> None:
    state = ProducerStateManager("t-0")
    _append(state, 0, 1, 0, epoch=3)
    stale = state.check(PID, 2, 1, 0)
    assert (stale.verdict, stale.error) == (Verdict.REJECT, "INVALID_PRODUCER_EPOCH")
    bumped_not_zero = state.check(PID, 4, 1, 0)
    assert bumped_not_zero.error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert _append(state, 0, 1, 1, epoch=4) is Verdict.APPEND
    # The new epoch starts a new window: the old epoch's batch is no duplicate any more.
    assert state.check(PID, 3, 0, 0).error == "INVALID_PRODUCER_EPOCH"
    assert state.check(PID, 4, 0, 0).verdict is Verdict.DUPLICATE


def test_wrap_around_continues() -> None:
    state = ProducerStateManager("t-0")
    state.commit(PID, 0, INT32_MAX - 1, 1, 0, 1)  # sequences MAX-1, MAX
    assert state.check(PID, 0, 0, 0).verdict is Verdict.APPEND
    assert state.check(PID, 0, 1, 0).error == "OUT_OF_ORDER_SEQUENCE_NUMBER"


def test_non_idempotent_batches_are_not_tracked() -> None:
    state = ProducerStateManager("t-0")
    assert state.check(-1, -1, -1, 9).verdict is Verdict.APPEND
    state.commit(-1, -1, -1, 9, 0, 1)
    assert state.producers == {}


def test_expiration_and_removal_before_log_start() -> None:
    state = ProducerStateManager("t-0")
    _append(state, 0, 1, 0, pid=1, ts=1_000)
    _append(state, 0, 1, 10, pid=2, ts=50_000)
    assert state.expire(60_000, 30_000) == [1]
    assert set(state.producers) == {2}
    state.remove_before(11)  # Kafka 2.5+ (KIP-360): the log start offset does not remove producers
    assert set(state.producers) == {2}


def test_snapshot_round_trip_and_replay() -> None:
    state = ProducerStateManager("t-0")
    for i in range(6):
        _append(state, i, 1, i, pid=7)
    _append(state, 0, 2, 6, pid=8, epoch=2)
    restored, offset = ProducerStateManager.from_snapshot(state.snapshot(8), "t-0")
    assert offset == 8
    assert restored.check(7, 0, 5, 0).duplicate.first_offset == 5
    assert restored.check(7, 0, 6, 0).verdict is Verdict.APPEND
    assert restored.check(8, 2, 0, 1).verdict is Verdict.DUPLICATE

    headers = [SimpleNamespace(producer_id=9, producer_epoch=0, base_sequence=i * 3, last_offset_delta=2,
                               base_offset=20 + i * 3, max_timestamp=5, is_control=False) for i in range(3)]
    assert restored.replay(headers) == 3
    assert restored.check(9, 0, 6, 2).duplicate.first_offset == 26


@pytest.mark.parametrize("data", [b"", b"{", b'{"version":2}', b'{"version":1,"producers":[{}]}'])
def test_bad_snapshot_is_a_value_error(data: bytes) -> None:
    with pytest.raises(ValueError):
        ProducerStateManager.from_snapshot(data)


# --- transactions (Kafka's ProducerAppendInfo / ProducerStateManager / TransactionIndex) ---------------

def _txn(state: ProducerStateManager, pid: int, seq: int, count: int, offset: int, epoch: int = 0,
         ts: int = 1000) -> Check:
    check = state.check(pid, epoch, seq, count - 1, True)
    if check.verdict is Verdict.APPEND:
        state.commit(pid, epoch, seq, count - 1, offset, ts, is_transactional=True)
    return check


def test_transactional_batch_opens_a_transaction_and_holds_back_the_lso() -> None:
    state = ProducerStateManager("t-0")
    _append(state, 0, 2, 0, pid=1)  # idempotent, not transactional
    assert state.first_unstable_offset() is None and state.last_stable_offset(2) == 2
    assert _txn(state, 2, 0, 3, 2).verdict is Verdict.APPEND
    assert _txn(state, 2, 3, 1, 5).verdict is Verdict.APPEND  # same transaction: first offset stays
    assert state.producers[2].current_txn_first_offset == 2
    assert state.has_ongoing_transaction(2, 0) and not state.has_ongoing_transaction(2, 1)
    assert not state.has_ongoing_transaction(1, 0)
    _txn(state, 3, 0, 1, 6)
    assert state.first_unstable_offset() == 2
    assert state.last_stable_offset(7) == 2
    assert state.last_stable_offset(1) == 1  # never above the high watermark
    assert state.last_stable_offset(7, log_start_offset=4) == 4  # nor below the log start offset

    assert state.complete_txn(2, 0, True, 5, 7, 2000) is None  # commit: nothing in the aborted index
    entry = state.producers[2]
    assert (entry.current_txn_first_offset, entry.coordinator_epoch, entry.last_timestamp) == (None, 5, 2000)
    assert entry.last_seq == 3  # same epoch: the sequence window stays
    assert state.first_unstable_offset() == 6 and state.last_stable_offset(8) == 6
    state.complete_txn(3, 0, True, 5, 8, 2000)
    assert state.first_unstable_offset() is None and state.last_stable_offset(9) == 9
    assert state.aborted == []


def test_non_transactional_batch_during_a_transaction_is_invalid_txn_state() -> None:
    state = ProducerStateManager("t-0")
    _txn(state, PID, 0, 1, 0)
    check = state.check(PID, 0, 1, 0)
    assert (check.verdict, check.error) == (Verdict.REJECT, "INVALID_TXN_STATE")
    assert "Expected transactional write" in check.message
    # Duplicate, epoch and sequence errors come first, as in Kafka.
    assert state.check(PID, 0, 0, 0).verdict is Verdict.DUPLICATE
    assert state.check(PID, 0, 5, 0).error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert state.check(PID, 0, 1, 0, True).verdict is Verdict.APPEND
    # After the marker a plain idempotent batch is fine again, and a transactional one after it too.
    state.complete_txn(PID, 0, True, 0, 1, 1000)
    assert _append(state, 1, 1, 2) is Verdict.APPEND
    assert _txn(state, PID, 2, 1, 3).verdict is Verdict.APPEND
    assert state.producers[PID].current_txn_first_offset == 3


def test_abort_records_the_transaction_with_the_lso_at_completion() -> None:
    state = ProducerStateManager("t-0")
    _txn(state, 1, 0, 2, 10)  # 10-11
    _txn(state, 2, 0, 2, 12)  # 12-13
    aborted = state.complete_txn(1, 0, False, 3, 14, 1000)
    # Another transaction is still open from 12: the LSO after this marker is 12 (Kafka's
    # lastStableOffset(completedTxn) = the next incomplete transaction of another producer).
    assert aborted == AbortedTxn(1, 10, 14, 12)
    aborted = state.complete_txn(2, 0, False, 3, 15, 1000)
    assert aborted == AbortedTxn(2, 12, 15, 16)
    assert state.aborted == [AbortedTxn(1, 10, 14, 12), AbortedTxn(2, 12, 15, 16)]
    assert state.last_stable_offset(16) == 16


def test_markers_epochs_and_fencing() -> None:
    state = ProducerStateManager("t-0")
    assert state.check_marker(PID, 0, 0) is None  # no state: accepted
    _txn(state, PID, 0, 1, 0, epoch=2)
    assert state.check_marker(PID, 1, 0) == "INVALID_PRODUCER_EPOCH"
    assert state.check_marker(PID, 2, 0) is None
    assert state.check_marker(PID, 3, 0) is None  # a bumped epoch (abort on timeout / fencing)
    state.complete_txn(PID, 3, False, 4, 1, 1000)
    entry = state.producers[PID]
    assert (entry.epoch, entry.coordinator_epoch, entry.last_seq) == (3, 4, -1)  # new epoch: window cleared
    assert state.check_marker(PID, 3, 3) == "TRANSACTION_COORDINATOR_FENCED"
    assert state.check_marker(PID, 3, 4) is None and state.check_marker(PID, 3, None) is None
    # A marker for a producer without an open transaction only updates its epochs.
    assert state.complete_txn(PID, 4, False, 5, 2, 1500) is None
    assert (entry.epoch, entry.coordinator_epoch, state.aborted[-1].last_offset) == (4, 5, 1)
    # A marker for a producer never seen creates its entry (Kafka's empty ProducerStateEntry + update).
    assert state.complete_txn(77, 0, True, 1, 3, 1600) is None
    assert (state.producers[77].epoch, state.producers[77].coordinator_epoch) == (0, 1)
    assert state.check(77, 0, 0, 0).verdict is Verdict.APPEND


def test_a_batch_may_not_overtake_an_earlier_one_still_being_verified() -> None:
    # KIP-890 (Kafka's VerificationStateEntry.lowestSequence): sequence 0's verification failed (retriable), so
    # sequence 1, verified since, must not become the producer's first batch here: OUT_OF_ORDER_SEQUENCE_NUMBER
    # until sequence 0 is appended. Without this a producer that saw sequence 1 acknowledged takes 0 as written.
    state = ProducerStateManager("t-0")
    state.start_verification(PID, 0, 0, now_ms=1000)  # sequence 0 goes to be verified, and fails
    state.start_verification(PID, 0, 1, now_ms=1001)  # sequence 1 goes, and is verified
    check = state.check(PID, 0, 1, 0, True)
    assert (check.verdict, check.error) == (Verdict.REJECT, "OUT_OF_ORDER_SEQUENCE_NUMBER")
    assert "0 (earliest seen sequence)" in check.message
    assert _txn(state, PID, 0, 1, 0).verdict is Verdict.APPEND  # sequence 0 retried
    assert state.verifying == {}  # the transaction has its first offset: no verification any more
    assert _txn(state, PID, 1, 1, 1).verdict is Verdict.APPEND


def test_verification_state_follows_the_lowest_sequence_and_the_newest_epoch() -> None:
    state = ProducerStateManager("t-0")
    state.start_verification(PID, 0, 3, now_ms=1000)
    state.start_verification(PID, 0, 1, now_ms=1000)  # a lower sequence of the same epoch
    assert state.verifying[PID].lowest_seq == 1
    state.start_verification(PID, 0, 2, now_ms=1000)
    assert state.verifying[PID].lowest_seq == 1
    assert state.check(PID, 0, 1, 0, True).verdict is Verdict.APPEND
    state.start_verification(PID, 1, 0, now_ms=1000)  # a bumped epoch starts its sequences again
    assert (state.verifying[PID].epoch, state.verifying[PID].lowest_seq) == (1, 0)
    state.start_verification(PID, 0, 0, now_ms=1000)  # an older epoch changes nothing
    assert state.verifying[PID].epoch == 1
    # A producer with an open transaction at the epoch needs no verification.
    _txn(state, 5, 0, 1, 0)
    state.start_verification(5, 0, 1, now_ms=1000)
    assert 5 not in state.verifying


def test_verification_state_ends_with_a_marker_or_expires() -> None:
    state = ProducerStateManager("t-0")
    state.start_verification(PID, 0, 0, now_ms=1000)
    state.complete_txn(PID, 0, False, 0, 0, 1000)  # transaction version 1: the marker ends it
    assert PID not in state.verifying
    # Transaction version 2: a marker at the epoch being verified belongs to the previous transaction (its
    # marker carries the next epoch), so the verification goes on (Kafka's isV2NextTransactionStarted).
    state.start_verification(PID, 2, 0, now_ms=1000, supports_epoch_bump=True)
    state.complete_txn(PID, 2, True, 0, 1, 1000)
    assert state.verifying[PID].epoch == 2
    state.complete_txn(PID, 3, True, 0, 2, 1000)
    assert PID not in state.verifying
    # A verification never followed by an append is forgotten after producer.id.expiration.ms.
    state.start_verification(9, 0, 0, now_ms=1000)
    state.expire(30_000, 30_000)
    assert 9 in state.verifying
    state.expire(31_000, 30_000)
    assert state.verifying == {}


def test_aborted_transactions_overlapping_a_fetch_range() -> None:
    state = ProducerStateManager("t-0")
    _txn(state, 1, 0, 5, 0)  # 0-4, abort marker at 5
    state.complete_txn(1, 0, False, 0, 5, 1000)
    _txn(state, 2, 0, 2, 6)  # 6-7, commit at 8
    state.complete_txn(2, 0, True, 0, 8, 1000)
    _txn(state, 3, 0, 2, 9)  # 9-10, abort at 13; meanwhile 4 opens at 11
    _txn(state, 4, 0, 1, 11)
    state.complete_txn(3, 0, False, 0, 12, 1000)
    state.complete_txn(4, 0, False, 0, 13, 1000)  # 11, abort at 13
    assert [(a.first_offset, a.last_offset, a.last_stable_offset) for a in state.aborted] == [
        (0, 5, 6), (9, 12, 11), (11, 13, 14)]
    assert state.aborted_transactions(0, 14) == [(1, 0), (3, 9), (4, 11)]
    assert state.aborted_transactions(0, 6) == [(1, 0)]  # stops at the first LSO >= the upper bound
    assert state.aborted_transactions(3, 4) == [(1, 0)]
    assert state.aborted_transactions(5, 9) == [(1, 0)]  # its marker is in range
    assert state.aborted_transactions(6, 9) == []
    assert state.aborted_transactions(6, 10) == [(3, 9)]
    assert state.aborted_transactions(10, 12) == [(3, 9), (4, 11)]
    assert state.aborted_transactions(14, 20) == []
    state.remove_before(6)  # aborted transactions wholly below the log start offset go
    assert [a.producer_id for a in state.aborted] == [3, 4]
    state.remove_before(13)
    assert [a.producer_id for a in state.aborted] == [4]


def test_open_transactions_survive_expiration_and_log_start_moves() -> None:
    state = ProducerStateManager("t-0")
    _txn(state, 1, 0, 1, 0, ts=1_000)
    _append(state, 0, 1, 1, pid=2, ts=1_000)
    assert state.expire(60_000, 30_000) == [2]  # Kafka's isProducerExpired: not with an open transaction
    state.remove_before(5)
    assert set(state.producers) == {1} and state.first_unstable_offset() == 0
    assert state.last_stable_offset(10, 5) == 5
    state.complete_txn(1, 0, True, 0, 6, 2_000)
    assert state.expire(60_000, 30_000) == [1]
    assert state.ongoing_txns == {}


def test_snapshot_v2_round_trip_keeps_transactions() -> None:
    state = ProducerStateManager("t-0")
    _txn(state, 1, 0, 2, 0)
    state.complete_txn(1, 0, False, 7, 2, 1500)
    _txn(state, 2, 0, 1, 3, epoch=4)
    _txn(state, 1, 2, 1, 4)
    data = state.snapshot(5)
    assert json.loads(data)["version"] == 2
    restored, offset = ProducerStateManager.from_snapshot(data, "t-0")
    assert offset == 5
    assert restored.ongoing_txns == {3: 2, 4: 1}
    assert list(restored.ongoing_txns) == [3, 4]
    assert restored.first_unstable_offset() == 3
    assert restored.aborted == [AbortedTxn(1, 0, 2, 3)]
    assert restored.aborted_transactions(0, 5) == [(1, 0)]
    assert restored.producers[1].coordinator_epoch == 7
    assert restored.producers[2].current_txn_first_offset == 3
    assert restored.check(1, 0, 3, 0).error == "INVALID_TXN_STATE"
    assert restored.check_marker(1, 0, 6) == "TRANSACTION_COORDINATOR_FENCED"
    assert restored.snapshot(5) == data


def test_snapshot_v1_is_still_read() -> None:
    v1 = json.dumps({"version": 1, "offset": 9, "producers": [
        {"producer_id": 5, "epoch": 1, "last_timestamp": 100, "batches": [[0, 2, 6, 8, 100]]}]}).encode()
    state, offset = ProducerStateManager.from_snapshot(v1, "t-0")
    assert offset == 9
    entry = state.producers[5]
    assert (entry.coordinator_epoch, entry.current_txn_first_offset) == (-1, None)
    assert state.check(5, 1, 0, 2).duplicate.first_offset == 6
    assert state.ongoing_txns == {} and state.aborted == []


def _header(offset: int, pid: int, seq: int, count: int = 1, *, transactional: bool = False,
            control: bool = False, ts: int = 5, epoch: int = 0) -> SimpleNamespace:
    return SimpleNamespace(producer_id=pid, producer_epoch=epoch, base_sequence=seq, last_offset_delta=count - 1,
                           base_offset=offset, max_timestamp=ts, is_control=control,
                           is_transactional=transactional or control)


def test_replay_with_markers_rebuilds_open_and_aborted_transactions() -> None:
    headers = [
        _header(0, 1, 0, 2, transactional=True),
        _header(2, 2, 0, 1, transactional=True),
        _header(3, -1, -1),
        _header(4, 1, -1, control=True, ts=50),  # abort of 1's transaction (0-1)
        _header(5, 2, 1, 1, transactional=True),
        _header(6, 3, 0, 1, transactional=True),
        _header(7, 3, -1, control=True),  # commit of 3's transaction
    ]
    kinds = {4: (CONTROL_ABORT, 2), 7: (CONTROL_COMMIT, 2)}
    read = []

    def read_marker(h: SimpleNamespace) -> tuple[int, int]:
        read.append(h.base_offset)
        return kinds[h.base_offset]

    state = ProducerStateManager("t-0")
    assert state.replay(headers, read_marker) == 7
    assert read == [4, 7]  # only control batches are decoded
    assert state.aborted == [AbortedTxn(1, 0, 4, 2)]
    assert state.ongoing_txns == {2: 2}
    assert state.producers[1].last_timestamp == 50 and state.producers[1].coordinator_epoch == 2
    assert state.producers[3].current_txn_first_offset is None
    assert state.last_stable_offset(8) == 2


def test_snapshot_plus_replay_equals_full_replay() -> None:
    headers = [
        _header(0, 1, 0, 2, transactional=True),
        _header(2, 2, 0, 1, transactional=True),
        _header(3, 1, -1, control=True),
        _header(4, 2, 1, 1, transactional=True),
        _header(5, 2, -1, control=True),
        _header(6, 1, 2, 1, transactional=True),
    ]
    kinds = {3: (CONTROL_ABORT, 0), 5: (CONTROL_ABORT, 0)}

    def read_marker(h: SimpleNamespace) -> tuple[int, int]:
        return kinds[h.base_offset]

    full = ProducerStateManager("t-0")
    full.replay(headers, read_marker)
    for cut in range(len(headers) + 1):
        first = ProducerStateManager("t-0")
        first.replay(headers[:cut], read_marker)
        restored, _ = ProducerStateManager.from_snapshot(first.snapshot(cut), "t-0")
        restored.replay(headers[cut:], read_marker)
        assert restored.snapshot(7) == full.snapshot(7), cut


def test_load_from_a_real_log_decodes_only_markers(tmp_path) -> None:
    """load_producer_state over several segments: markers are read from their batches (the control type is
    in the record key), with and without a snapshot, the same state as the live one."""
    from broker.log.config import LogConfig
    from broker.log.partition_log import PartitionLog
    from broker.log.producer_snapshot import load_producer_state, save_producer_state
    from protocol.records import Record, build_batch, control_batch

    plog = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=400, index_interval_bytes=100), now_ms=0)
    live = ProducerStateManager("t-0")
    seqs: dict[int, int] = {}
    for i in range(30):
        pid = 10 + i % 3
        if i % 5 == 4:  # a marker: pids 10, 11, 12 in turn, commits and aborts alternating
            commit = bool(i % 2)
            offset = plog.append_as_leader(control_batch(commit, pid, 0, 1, 50 + i), now_ms=0).base_offset
            live.complete_txn(pid, 0, commit, 1, offset, 50 + i)
        else:
            seq = seqs.get(pid, 0)
            seqs[pid] = seq + 2
            data = build_batch([Record(0, 0, None, b"x"), Record(1, 0, None, b"y")], base_timestamp=i,
                               producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=True)
            offset = plog.append_as_leader(data, now_ms=0).base_offset
            live.commit(pid, 0, seq, 1, offset, i, is_transactional=True)
        if i == 17:
            save_producer_state(plog, live)  # a snapshot in the middle
    assert plog.segment_count > 3 and live.aborted and live.ongoing_txns
    end = plog.log_end_offset
    assert load_producer_state(plog, "t-0").snapshot(end) == live.snapshot(end)
    (tmp_path / "t-0" / "producer_state.snapshot").unlink()
    assert load_producer_state(plog, "t-0").snapshot(end) == live.snapshot(end)
    plog.close()
