"""List-type configs accept what Kafka's ConfigDef.ValidList accepts, with its messages (item 4 of issue 24):
measured against a real Kafka 4.1 broker, and the same code in Kafka 3.9 (ValidList and LIST parsing are
unchanged from 3.7 to 4.1). An empty list is valid: an incremental SUBTRACT of the last element of
cleanup.policy leaves "" (no deletion, no compaction)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testkit import BrokerThread
from tests.kafka_wire import WireClient

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
INVALID_CONFIG = 40
THROTTLE_MESSAGE = ("Invalid value [x] for configuration leader.replication.throttled.replicas: "
                    "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the "
                    "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
CASES = [  # (operations, error code, message, cleanup.policy, throttled replicas after)
    ([("cleanup.policy", SUBTRACT, "delete")], 0, None, "", ""),
    ([("cleanup.policy", SET, "")], 0, None, "", ""),
    ([("cleanup.policy", SET, "foo")], INVALID_CONFIG,
     "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete", "delete", ""),
    ([("cleanup.policy", SET, "compact,delete,compact")], 0, None, "compact,delete,compact", ""),
    ([("cleanup.policy", SET, "compact, delete")], 0, None, "compact,delete", ""),
    ([("cleanup.policy", SET, "compact,")], INVALID_CONFIG,
     "Invalid value  for configuration cleanup.policy: String must be one of: compact, delete", "delete", ""),
    ([("cleanup.policy", APPEND, "bogus")], INVALID_CONFIG,
     "Invalid value bogus for configuration cleanup.policy: String must be one of: compact, delete", "delete", ""),
    ([("leader.replication.throttled.replicas", SET, "x")], INVALID_CONFIG, THROTTLE_MESSAGE, "delete", ""),
    ([("leader.replication.throttled.replicas", SET, "*")], 0, None, "delete", "*"),
    ([("leader.replication.throttled.replicas", SET, "0:1, 1:1")], 0, None, "delete", "0:1,1:1"),
]


@pytest.fixture(params=["3.9", "4.1"])
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path, kafka_version=request.param)
    b.start()
    try:
        yield b
    finally:
        b.stop()


def test_list_configs_follow_kafkas_valid_list(broker: BrokerThread) -> None:
    with WireClient(broker.bootstrap) as wire:
        wire.create_topic("lists")
        for ops, error, message, policy, throttled in CASES:
            wire.request(44, 1, {"resources": [{"resource_type": 2, "resource_name": "lists", "configs": [
                {"name": "cleanup.policy", "config_operation": SET, "value": "delete"},
                {"name": "leader.replication.throttled.replicas", "config_operation": DELETE, "value": None}]}],
                "validate_only": False})
            answer = wire.request(44, 1, {"resources": [{"resource_type": 2, "resource_name": "lists", "configs": [
                {"name": n, "config_operation": op, "value": v} for n, op, v in ops]}], "validate_only": False})
            result = answer.responses[0]
            assert (result.error_code, result.error_message) == (error, message), ops
            described = wire.request(32, 4, {"resources": [{"resource_type": 2, "resource_name": "lists",
                                                            "configuration_keys": None}],
                                             "include_synonyms": False, "include_documentation": False})
            values = {c.name: c.value for c in described.results[0].configs}
            assert (values["cleanup.policy"], values["leader.replication.throttled.replicas"]) == \
                (policy, throttled), ops
