"""SCRAM credentials (KIP-554) through confluent-kafka's admin client: upsert, describe, delete, Kafka's
error codes, persistence across a restart."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)


def upsert(user: str, mechanism: ScramMechanism, iterations: int) -> UserScramCredentialUpsertion:
    return UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations), b"secret", b"salt")


def error_of(future) -> str:
    with pytest.raises(KafkaException) as failure:
        future.result(10)
    return failure.value.args[0].name()


def test_scram_credentials_lifecycle(minibroker_server):
    admin = AdminClient({"bootstrap.servers": minibroker_server.bootstrap})
    assert admin.describe_user_scram_credentials().result(10) == {}
    assert error_of(admin.describe_user_scram_credentials(["alice"])["alice"]) == "RESOURCE_NOT_FOUND"

    done = admin.alter_user_scram_credentials([upsert("alice", ScramMechanism.SCRAM_SHA_256, 8192),
                                               upsert("alice", ScramMechanism.SCRAM_SHA_512, 4096),
                                               upsert("bob", ScramMechanism.SCRAM_SHA_256, 4096)])
    for future in done.values():
        future.result(10)
    described = admin.describe_user_scram_credentials(["alice"])["alice"].result(10)
    assert sorted((i.mechanism, i.iterations) for i in described.scram_credential_infos) == [
        (ScramMechanism.SCRAM_SHA_256, 8192), (ScramMechanism.SCRAM_SHA_512, 4096)]

    # Per user, all or nothing: bob's bad upsertion leaves his deletion undone; carol's change applies.
    outcome = admin.alter_user_scram_credentials([
        UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_256),
        upsert("bob", ScramMechanism.SCRAM_SHA_512, 100),
        upsert("carol", ScramMechanism.SCRAM_SHA_256, 5000),
        upsert("dave", ScramMechanism.SCRAM_SHA_256, 20000),
        UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_256)])
    assert error_of(outcome["bob"]) == "UNACCEPTABLE_CREDENTIAL"  # too few iterations
    outcome["carol"].result(10)
    assert error_of(outcome["dave"]) == "UNACCEPTABLE_CREDENTIAL"  # too many
    assert error_of(outcome["erin"]) == "RESOURCE_NOT_FOUND"  # nothing to delete
    duplicate = admin.alter_user_scram_credentials([upsert("bob", ScramMechanism.SCRAM_SHA_256, 4096),
                                                    UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_256)])
    assert error_of(duplicate["bob"]) == "DUPLICATE_RESOURCE"
    assert set(admin.describe_user_scram_credentials().result(10)) == {"alice", "bob", "carol"}

    admin.alter_user_scram_credentials([UserScramCredentialDeletion("alice", ScramMechanism.SCRAM_SHA_512)])[
        "alice"].result(10)
    minibroker_server.restart()
    admin = AdminClient({"bootstrap.servers": minibroker_server.bootstrap})
    everyone = admin.describe_user_scram_credentials().result(10)
    assert {u: [(i.mechanism, i.iterations) for i in d.scram_credential_infos] for u, d in everyone.items()} == {
        "alice": [(ScramMechanism.SCRAM_SHA_256, 8192)], "bob": [(ScramMechanism.SCRAM_SHA_256, 4096)],
        "carol": [(ScramMechanism.SCRAM_SHA_256, 5000)]}
