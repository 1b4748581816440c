"""`__consumer_offsets` consumer/share group records and `__share_group_state` records: our framing (record
type, value version) and structs against Kafka 4.1's own serdes (GroupCoordinatorRecordSerde,
ShareCoordinatorRecordSerde) run in a JVM, both directions, tombstones included. (The streams group records:
test_streams_messages.py, against Kafka 4.4's.) Record type 18 (Kafka 4.0's StreamsGroupPartitionMetadata) is
no longer a record type."""

from __future__ import annotations

import random

import pytest

from protocol.kafka4_group_records import (
    GROUP_RECORD_NAMES,
    SHARE_STATE_RECORD_NAMES,
    GroupRecordType,
    RecordError,
    ShareStateRecordType,
    decode_group_record,
    decode_share_state_record,
    encode_group_record,
    encode_share_state_record,
    record_type,
)
from protocol.schema import message
from tests.protocol.kafka_oracle import oracle as kafka
from tests.protocol.test_kafka4_messages import _same, _sample

GROUP_SERDE = "org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde"
SHARE_SERDE = "org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde"
# The names come from the module under test; Kafka's serde checks them, since it writes the record type
# of the class the name selects.
CASES = [(GROUP_SERDE, kind) for kind in GROUP_RECORD_NAMES if not kind.name.startswith("STREAMS")] + \
    [(SHARE_SERDE, kind) for kind in ShareStateRecordType]


def _name(kind: int, serde: str) -> str:
    return GROUP_RECORD_NAMES[kind] if serde == GROUP_SERDE else SHARE_STATE_RECORD_NAMES[kind]


def _records(which):
    for serde, kind in which:
        name = _name(kind, serde)
        key_spec, value_spec = message(f"{name}Key"), message(f"{name}Value")
        rng = random.Random(name)
        for i in range(8):
            key = _sample(key_spec.definition["fields"], 0, False, rng)
            value = None if i == 0 else _sample(value_spec.definition["fields"], 0, True, rng)
            yield serde, kind, name, key, value


def kafka_record_answers(which, release: str = kafka.RELEASE):
    """Per (serde, kind): (key, value, our bytes, Kafka's answer for the value, Kafka's for our bytes), from
    Kafka `release`'s serdes; skips the test when they cannot be had."""
    records = list(_records(which))
    requests = []
    ours = []
    for serde, kind, name, key, value in records:
        encode = encode_group_record if serde == GROUP_SERDE else encode_share_state_record
        k, v = encode(kind, key, value)
        ours.append((k, v))
        key_def, value_def = message(f"{name}Key").definition, message(f"{name}Value").definition
        requests.append({"serde": serde, "keyClass": kafka.java_class(key_def),
                         "valueClass": kafka.java_class(value_def), "version": 0,
                         "key": kafka.to_kafka_json(key_def["fields"], key),
                         "value": None if value is None else kafka.to_kafka_json(value_def["fields"], value)})
        requests.append({"serde": serde, "keyHex": k.hex(), "valueHex": None if v is None else v.hex()})
    try:
        replies = kafka.ask(requests, release=release)
    except kafka.Unavailable as exc:
        pytest.skip(f"Kafka's classes are not available: {exc}")
    out = {}
    for i, (serde, kind, _, key, value) in enumerate(records):
        out.setdefault((serde, kind), []).append((key, value, ours[i], replies[2 * i], replies[2 * i + 1]))
    return out


@pytest.fixture(scope="module")
def answers():
    return kafka_record_answers(CASES)


@pytest.mark.parametrize(("serde", "kind"), CASES, ids=[f"{s.rsplit('.', 1)[1]}-{k.name}" for s, k in CASES])
def test_records_match_kafka(serde: str, kind: int, answers) -> None:
    check_records(serde, kind, answers)


def check_records(serde: str, kind: int, answers) -> None:
    """Kafka's bytes are ours both ways, and we decode them back to the value."""
    decode = decode_group_record if serde == GROUP_SERDE else decode_share_state_record
    for key, value, (k, v), from_value, from_bytes in answers[(serde, kind)]:
        assert "error" not in from_value, from_value
        assert (from_value["key"], from_value["value"]) == (k.hex(), None if v is None else v.hex())
        assert "error" not in from_bytes, from_bytes
        assert (from_bytes["key"], from_bytes["value"]) == (k.hex(), None if v is None else v.hex())
        kafka_value = from_value["value"]
        got_kind, got_key, got_value = decode(bytes.fromhex(from_value["key"]),
                                              None if kafka_value is None else bytes.fromhex(kafka_value))
        assert got_kind == kind and _same(key, got_key)
        assert (value is None and got_value is None) or _same(value, got_value)


def test_other_record_types_are_refused() -> None:
    assert record_type(b"\x00\x02\x00\x01g") == GroupRecordType.GROUP_METADATA
    for key in (b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00", b"\x00\x12\x00\x01g", b"\x00", b""):
        with pytest.raises(RecordError):
            decode_group_record(key, None)
    with pytest.raises(RecordError):
        decode_share_state_record(b"\x00\x05\x00\x01g", None)


def test_unknown_value_version_and_garbage_are_record_errors() -> None:
    key, value = encode_group_record(GroupRecordType.CONSUMER_GROUP_METADATA, {"group_id": "g"}, {"epoch": 3})
    assert value is not None
    with pytest.raises(RecordError, match="version 1"):
        decode_group_record(key, b"\x00\x01" + value[2:])
    for cut in range(len(value)):
        with pytest.raises(RecordError):
            decode_group_record(key, value[:cut])


def test_member_records_of_both_protocols_are_kafkas() -> None:
    """A member record's ClassicMemberMetadata (KIP-848 mixed membership): Kafka writes it null for a
    consumer-protocol member (its default is a struct: an absent field would read as a classic member), and the
    protocols of a classic member; ours are the same bytes, and read back as the member they came from."""
    from coordinator.consumer_group import (
        ClassicMemberMetadata,
        ConsumerGroupMember,
        member_subscription_record,
        replay,
    )

    classic = ClassicMemberMetadata(10_000, (("range", b"\x00\x00"), ("cooperative-sticky", b"\x00\x03")))
    members = [ConsumerGroupMember("consumer", subscribed_topic_names=("t",), rebalance_timeout_ms=30_000),
               ConsumerGroupMember("classic", subscribed_topic_names=("t",), subscribed_topic_regex="",
                                   client_id="c", client_host="/127.0.0.1", classic=classic)]
    name = GROUP_RECORD_NAMES[GroupRecordType.CONSUMER_GROUP_MEMBER_METADATA]
    key_def, value_def = message(f"{name}Key").definition, message(f"{name}Value").definition
    records = [member_subscription_record("g", m) for m in members]
    requests = [{"serde": GROUP_SERDE, "keyClass": kafka.java_class(key_def), "valueClass": kafka.java_class(value_def),
                 "version": 0, "key": kafka.to_kafka_json(key_def["fields"], key),
                 "value": kafka.to_kafka_json(value_def["fields"], value)} for _, key, value in records]
    try:
        replies = kafka.ask(requests)
    except kafka.Unavailable as exc:
        pytest.skip(f"Kafka's classes are not available: {exc}")
    groups: dict = {}
    for member, record, reply in zip(members, records, replies, strict=True):
        assert "error" not in reply, reply
        key, value = encode_group_record(*record)
        assert (reply["key"], reply["value"]) == (key.hex(), value.hex())
        kind, k, v = decode_group_record(bytes.fromhex(reply["key"]), bytes.fromhex(reply["value"]))
        replay(groups, (kind, dict(k), dict(v)), 0)
        assert groups["g"].members[member.member_id].classic == member.classic
    assert records[0][2]["classic_member_metadata"] is None
