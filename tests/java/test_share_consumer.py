"""KIP-932 share groups with Apache Kafka's Java KafkaShareConsumer (tests/java/src/minibroker/check/
ShareChecks.java), under the 4.4 profile: two consumers of one group with explicit acknowledgement get every
record, released records come back, rejected ones do not (issue 34: records were archived without ever being
delivered when a fetch acquired part of a batch)."""

from __future__ import annotations

import pytest

from tests.java import jvm


@pytest.mark.minibroker(kafka_version="4.4")
def test_java_share_consumers(minibroker: str) -> None:
    results = jvm.require(jvm.run_checks, "4.4", minibroker, ["share."])
    assert results
    assert all(r.ok for r in results), jvm.failures(results)
