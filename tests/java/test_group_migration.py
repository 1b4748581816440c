"""KIP-848's online migration with Apache Kafka's Java client (tests/java/src/minibroker/check/MigrationChecks.java):
a classic-protocol KafkaConsumer alone in a classic group, a consumer-protocol KafkaConsumer joining it (the
upgrade), both consuming, then the consumer-protocol one leaving (the downgrade); every record read once, with
eager and cooperative classic members. Against minibroker under the 4.2 and 4.4 profiles, and against a live
Kafka 4.4, where the same checks must hold."""

from __future__ import annotations

import pytest

from tests.java import jvm


@pytest.mark.parametrize("profile", [
    pytest.param("4.2", marks=pytest.mark.minibroker(kafka_version="4.2")),
    pytest.param("4.4", marks=pytest.mark.minibroker(kafka_version="4.4"))])
def test_java_consumers_of_both_protocols_share_a_group(profile: str, minibroker: str) -> None:
    results = jvm.require(jvm.run_checks, "4.4", minibroker, ["migration."])
    assert [r.check for r in results] == ["migration.eager", "migration.cooperative"]
    assert all(r.ok for r in results), jvm.failures(results)


def test_the_same_checks_hold_against_kafka(kafka_reference) -> None:
    kafka = kafka_reference(release="4.4")
    results = jvm.require(jvm.run_checks, "4.4", kafka.bootstrap, ["migration."])
    assert [r.check for r in results] == ["migration.eager", "migration.cooperative"]
    assert all(r.ok for r in results), jvm.failures(results)
