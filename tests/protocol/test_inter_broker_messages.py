"""LeaderAndIsr, UpdateMetadata, StopReplica, ControlledShutdown and AlterPartition (protocol/definitions/,
Kafka 3.9's versions) against the bytes Kafka's own *Data classes make (tests/protocol/golden/inter_broker.json,
made by tests/protocol/inter_broker_golden.py): our encoding is byte for byte Kafka's, and we decode Kafka's
bytes to the same values, every version of each."""

from __future__ import annotations

import json

import pytest

from protocol.schema import DecodeError, message
from tests import kafka_jars
from tests.protocol import inter_broker_golden as golden

GOLDEN = json.loads(golden.GOLDEN.read_text())
KAFKA_39_VERSIONS = {"LeaderAndIsr": (0, 7), "UpdateMetadata": (0, 8), "StopReplica": (0, 4),
                     "ControlledShutdown": (0, 3), "AlterPartition": (0, 3)}


def _id(case: dict) -> str:
    return f"{case['message']}-v{case['version']}"


def test_definitions_cover_kafka_39s_versions():
    for api, versions in KAFKA_39_VERSIONS.items():
        for kind in ("Request", "Response"):
            spec = message(api + kind)
            assert spec.valid_versions == versions
            covered = {c["version"] for c in GOLDEN if c["message"] == api + kind}
            assert covered == set(range(versions[0], versions[1] + 1))


@pytest.mark.parametrize("case", GOLDEN, ids=[_id(c) for c in GOLDEN])
def test_round_trip_against_kafkas_bytes(case):
    spec = message(case["message"])
    fields = spec.definition["fields"]
    version = case["version"]
    value = golden.from_kafka_json(fields, version, case["json"])
    kafka = bytes.fromhex(case["hex"])
    assert spec.encode(version, value).hex() == case["hex"]
    assert golden.project(fields, version, spec.decode(version, kafka)) == value
    if kafka:
        with pytest.raises(DecodeError):
            spec.decode(version, kafka[:-1])


def test_golden_bytes_are_kafkas():
    """The committed bytes are what Kafka 3.9's classes make of the committed values (needs the jars)."""
    inputs = [{k: c[k] for k in ("message", "version", "json")} for c in GOLDEN]
    try:
        hexes = golden.kafka_bytes(inputs)
    except kafka_jars.Unavailable as exc:
        pytest.skip(f"Kafka 3.9's jars are not available: {exc}")
    assert hexes == [c["hex"] for c in GOLDEN]
