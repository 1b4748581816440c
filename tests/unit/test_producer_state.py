"""Producer state per partition: Kafka's epoch and sequence rules, the last-5 dedup window, snapshots."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from coordinator.producer_state import (
    INT32_MAX,
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


def test_unknown_producer_must_start_at_zero() -> None:
    state = ProducerStateManager("t-0")
    check = state.check(PID, 0, 5, 0)
    assert (check.verdict, check.error) == (Verdict.REJECT, "UNKNOWN_PRODUCER_ID")
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
    state.remove_before(11)
    assert state.producers == {}


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
