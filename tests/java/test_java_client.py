"""Apache Kafka's Java client against the fixture broker: the checks of tests/java/src/minibroker/check (plain
and idempotent producers with each codec, transactions, classic consumer groups, the AdminClient), one JVM per
area, for the newest client under the default, the 4.1 and the 4.4 profiles, and for the 3.9 client under the 3.9
profile.
Each check asserts its results in Java; a failing one is reported with its message and stack trace."""

from __future__ import annotations

import pytest

from tests.java import jvm
from tests.kafka_wire import WireClient

CONSUMER_GROUP_HEARTBEAT = 68

# (client release, whether the profile is a ZooKeeper-mode one: the default is 3.9)
MATRIX = [
    pytest.param("4.4", True, id="client-4.4-profile-default"),
    pytest.param("4.4", False, id="client-4.4-profile-4.1", marks=pytest.mark.minibroker(kafka_version="4.1")),
    # The newest versions (ApiVersions v5 naming the cluster and node, OffsetCommit/OffsetFetch v10 and
    # TxnOffsetCommit v6 by topic id, ListOffsets v11, DeleteGroups v3) as the 4.4 client speaks them.
    pytest.param("4.4", False, id="client-4.4-profile-4.4", marks=pytest.mark.minibroker(kafka_version="4.4")),
    pytest.param("3.9", True, id="client-3.9-profile-3.9", marks=pytest.mark.minibroker(kafka_version="3.9")),
]
AREAS = ["producer.", "transactions.", "consumer.", "admin."]


@pytest.mark.parametrize("area", AREAS)
@pytest.mark.parametrize(("release", "zookeeper_mode"), MATRIX)
def test_java_client(release: str, zookeeper_mode: bool, area: str, minibroker: str) -> None:
    results = jvm.require(jvm.run_checks, release, minibroker, [area], zookeeper_mode=zookeeper_mode)
    assert len(results) > 1
    assert all(r.ok for r in results), jvm.failures(results)


def test_java_client_through_faults(minibroker_server) -> None:
    """Responses lost after the append, NOT_LEADER_OR_FOLLOWER, fetch connections dropped: the idempotent
    producer's retries are deduplicated (its checks hold: every record once, at its offset), transactions and a
    cooperative group carry on."""
    broker = minibroker_server
    broker.drop_produce_response(count=3)
    broker.inject_error("PRODUCE", "NOT_LEADER_OR_FOLLOWER", count=3)
    broker.drop_connection("FETCH", when="after_response", count=2)
    results = jvm.require(jvm.run_checks, "4.4", broker.bootstrap,
                          ["producer.idempotent", "transactions.commit_abort", "consumer.group_cooperative"])
    assert all(r.ok for r in results), jvm.failures(results)
    assert broker.faults() == []  # every rule was used up


def test_java_client_on_a_cluster(minibroker_cluster) -> None:
    """The producer, transaction and group checks on three brokers: partitions, coordinators and transaction
    markers spread over them."""
    results = jvm.require(jvm.run_checks, "4.4", minibroker_cluster.bootstrap,
                          ["producer.", "transactions.", "consumer."])
    assert len(results) > 10
    assert all(r.ok for r in results), jvm.failures(results)


def serves(bootstrap: str, api_key: int) -> bool:
    with WireClient(bootstrap) as client:
        answer = client.request(18, 3, {"client_software_name": "minibroker-tests", "client_software_version": "1"})
    return any(api.api_key == api_key for api in answer.api_keys)


@pytest.mark.parametrize("release", [
    pytest.param("4.1", marks=pytest.mark.minibroker(kafka_version="4.1")),
    # 4.4: the consumer commits and fetches its offsets by topic id (OffsetCommit/OffsetFetch v10).
    pytest.param("4.4", marks=pytest.mark.minibroker(kafka_version="4.4"))])
def test_java_consumer_group_protocol(release: str, minibroker: str) -> None:
    """group.protocol=consumer (KIP-848): two members share a topic's partitions, every record read once."""
    assert serves(minibroker, CONSUMER_GROUP_HEARTBEAT)
    results = jvm.require(jvm.run_checks, "4.4", minibroker, ["consumer_protocol."])
    assert all(r.ok for r in results), jvm.failures(results)


@pytest.mark.minibroker(kafka_version="4.4")
def test_java_admin_updates_features(minibroker: str) -> None:
    """describeFeatures/updateFeatures (KIP-584): validate-only, a downgrade typed as an upgrade refused,
    group.version 0 turning the consumer group protocol off for a consumer-protocol consumer, and back."""
    results = jvm.require(jvm.run_checks, "4.4", minibroker, ["features."])
    assert all(r.ok for r in results), jvm.failures(results)


@pytest.mark.parametrize("release", [
    pytest.param("3.9", marks=pytest.mark.minibroker(kafka_version="3.9")),
    pytest.param("4.4", marks=pytest.mark.minibroker(kafka_version="4.4"))])
def test_java_client_quotas(release: str, minibroker: str) -> None:
    """alterClientQuotas/describeClientQuotas, then a producer and a consumer whose client id has byte-rate
    quotas are throttled (their throttle-time metrics), another producer is not; the quotas removed."""
    results = jvm.require(jvm.run_checks, "4.4", minibroker, ["quotas."], zookeeper_mode=release == "3.9")
    assert all(r.ok for r in results), jvm.failures(results)


@pytest.mark.parametrize("release", ["3.9", "4.4"])
def test_java_delegation_tokens(release: str, tmp_path) -> None:
    """Delegation tokens over SASL/SCRAM: created with a renewer, described, used to log in (tokenauth=true) and
    produce, refused to manage tokens with, renewed by the renewer and not by another user, expired, and a
    login with the expired token refused."""
    from broker.testkit import BrokerThread

    users = {name: f"{name}-secret" for name in ("alice", "bob", "carol")}
    broker = BrokerThread(tmp_path / "data", kafka_version=release, security="SASL_PLAINTEXT", users=users,
                          sasl_mechanisms=("SCRAM-SHA-256", "SCRAM-SHA-512"),
                          security_settings={"delegation.token.secret.key": "a-secret-of-the-cluster"}).start()
    try:
        results = jvm.require(jvm.run_checks, "4.4", broker.bootstrap, ["tokens."], zookeeper_mode=release == "3.9",
                              client_config={"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256"})
    finally:
        broker.stop()
    assert all(r.ok for r in results), jvm.failures(results)
