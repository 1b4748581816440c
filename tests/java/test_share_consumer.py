"""KIP-932 share groups with Apache Kafka's Java KafkaShareConsumer and Admin client 4.4 (tests/java/src/
minibroker/check/ShareChecks.java). Under the 4.4 profile: two consumers with explicit acknowledgement in the
batch-optimized mode (ShareFetch v1 or v2) and the record-limit mode (v2 only) get every record, released
records come back and rejected ones do not (issue 34: records were archived without ever being delivered when
a fetch acquired part of a batch); implicit acknowledgement; records of a consumer gone silent go to the other
once their acquisition lock times out; RENEW keeps them from it; share.delivery.count.limit archives records
released at every delivery; the Admin client lists, describes and deletes the group and lists its offsets
and lags. Under the 4.1 profile (ShareFetch v1 only) the checks its client can run there. The broker's lock
is 5 s, so that the lock checks take seconds (each check reads it from the consumer)."""

from __future__ import annotations

import pytest

from tests.java import jvm

LOCK_MS = 5_000  # RENEW must come round within it on a loaded machine


@pytest.mark.minibroker(kafka_version="4.4", group_share_record_lock_duration_ms=LOCK_MS)
def test_java_share_consumers(minibroker: str) -> None:
    results = jvm.require(jvm.run_checks, "4.4", minibroker, ["share."])
    assert len(results) == 7
    assert all(r.ok for r in results), jvm.failures(results)


@pytest.mark.minibroker(kafka_version="4.1", group_share_record_lock_duration_ms=LOCK_MS)
def test_java_share_consumers_share_fetch_v1(minibroker: str) -> None:
    results = jvm.require(jvm.run_checks, "4.4", minibroker,
                          ["share.explicit_batch_optimized", "share.implicit", "share.lock_timeout"])
    assert len(results) == 3
    assert all(r.ok for r in results), jvm.failures(results)
