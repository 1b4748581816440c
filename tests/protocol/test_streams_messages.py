"""The streams group protocol (KIP-1071) as Kafka 4.4 defines it: StreamsGroupHeartbeat (88),
StreamsGroupDescribe (89) and StreamsGroupTopologyDescriptionUpdate (93, KIP-1331) at every version, and the
StreamsGroup* records of `__consumer_offsets`, byte for byte against Kafka 4.4's own generated classes and
GroupCoordinatorRecordSerde (tests/protocol/kafka_oracle), both directions. Kafka 4.2 serves v0 of 88 and 89,
whose bytes 4.4's classes write the same (4.4 renamed v0's AcceptableRecoveryLag, not its wire form)."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.kafka4_group_records import GroupRecordType
from protocol.schema import DecodeError, message
from tests.protocol.test_kafka4_group_records import GROUP_SERDE, check_records, kafka_record_answers
from tests.protocol.test_kafka4_messages import _same, cases, kafka_answers

RELEASE = "4.4"
APIS = ["StreamsGroupHeartbeat", "StreamsGroupDescribe", "StreamsGroupTopologyDescriptionUpdate"]
CASES = cases([f"{api}{kind}" for api in APIS for kind in ("Request", "Response")])
RECORD_CASES = [(GROUP_SERDE, kind) for kind in GroupRecordType if kind.name.startswith("STREAMS_GROUP")]


@pytest.fixture(scope="module")
def answers() -> dict[Any, Any]:
    return kafka_answers(CASES, RELEASE)


@pytest.fixture(scope="module")
def record_answers() -> dict[Any, Any]:
    return kafka_record_answers(RECORD_CASES, RELEASE)


def test_versions_are_kafka_44s() -> None:
    assert ("StreamsGroupHeartbeatRequest", 1) in CASES and ("StreamsGroupDescribeResponse", 1) in CASES
    assert ("StreamsGroupTopologyDescriptionUpdateRequest", 0) in CASES
    assert message("StreamsGroupTopologyDescriptionUpdateRequest").api_key == 93
    assert len(RECORD_CASES) == 6


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_matches_kafka(name: str, version: int, answers: dict[Any, Any]) -> None:
    spec = message(name)
    for value, ours, from_value, from_bytes in answers[(name, version)]:
        assert "error" not in from_value, (value, from_value)
        assert from_value["hex"] == ours.hex(), value
        assert "error" not in from_bytes, (value, from_bytes)
        assert from_bytes["hex"] == ours.hex(), value
        assert _same(value, spec.decode(version, bytes.fromhex(from_value["hex"])))


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_truncation_is_a_decode_error(name: str, version: int, answers: dict[Any, Any]) -> None:
    spec = message(name)
    for _value, ours, _a, _b in answers[(name, version)]:
        for cut in range(len(ours)):
            with pytest.raises(DecodeError):
                spec.decode(version, ours[:cut])


@pytest.mark.parametrize(("serde", "kind"), RECORD_CASES, ids=[k.name for _, k in RECORD_CASES])
def test_records_match_kafka(serde: str, kind: int, record_answers: dict[Any, Any]) -> None:
    check_records(serde, kind, record_answers)
