"""Which __consumer_offsets / __transaction_state partition a group or transactional id lives on: Kafka's
Utils.abs(String.hashCode) % partitions, as the reference brokers answered (tests/reference)."""

from __future__ import annotations

from broker.services.internal_topics import java_string_hash, partition_for


def test_negative_hashes_use_math_abs() -> None:
    # Kafka 3.9 placed group "txn-errors-g" (hash -1568661880) on partition 30 of 50, not 18 (n & 0x7fffffff).
    assert java_string_hash("txn-errors-g") == -1568661880
    assert partition_for("txn-errors-g", 50) == 30
    assert partition_for("txn-errors-txn", 50) == 39  # a positive hash: the same either way


def test_integer_min_value_goes_to_partition_0() -> None:
    # "polygenelubricants" is a String whose hashCode is Integer.MIN_VALUE; Utils.abs takes it to 0.
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 50) == 0
