"""The Kafka 4 message definitions kafka-python lacks (protocol/definitions/: KIP-848 and KIP-932 APIs, the
`__consumer_offsets` consumer/share group records, `__share_group_state`), byte for byte against Kafka
4.4's own generated classes (tests/protocol/kafka_oracle): for random values of every valid version,
Kafka's serialization of the value equals ours, Kafka re-serializes our bytes unchanged after parsing them,
and we decode Kafka's bytes back to the value.
"""

from __future__ import annotations

import random
import string
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from protocol.schema import (
    DecodeError,
    default_factory,
    in_versions,
    message,
    parse_versions,
    snake_case,
)
from tests.protocol.kafka_oracle import oracle as kafka

APIS = ["ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "ShareGroupHeartbeat", "ShareGroupDescribe",
        "ShareFetch", "ShareAcknowledge", "DescribeShareGroupOffsets", "AlterShareGroupOffsets",
        "DeleteShareGroupOffsets", "InitializeShareGroupState", "ReadShareGroupState", "WriteShareGroupState",
        "DeleteShareGroupState", "ReadShareGroupStateSummary"]
RECORDS = ["ConsumerGroupMetadata", "ConsumerGroupPartitionMetadata", "ConsumerGroupMemberMetadata",
           "ConsumerGroupTargetAssignmentMetadata", "ConsumerGroupTargetAssignmentMember",
           "ConsumerGroupCurrentMemberAssignment", "ConsumerGroupRegularExpression", "ShareGroupMetadata",
           "ShareGroupMemberMetadata", "ShareGroupTargetAssignmentMetadata", "ShareGroupTargetAssignmentMember",
           "ShareGroupCurrentMemberAssignment", "ShareGroupStatePartitionMetadata", "ShareSnapshot", "ShareUpdate"]
NAMES = [f"{api}{kind}" for api in APIS for kind in ("Request", "Response")] + \
    [f"{record}{kind}" for record in RECORDS for kind in ("Key", "Value")]
SAMPLES = 12
_TEXT = string.ascii_letters + string.digits + "-_.é€𝄞"


def _cases() -> list[tuple[str, int]]:
    cases = []
    for name in NAMES:
        lo, hi = message(name).valid_versions
        cases += [(name, v) for v in range(lo, hi + 1)]
    return cases


CASES = _cases()


def _scalar(type_name: str, rng: random.Random) -> Any:
    bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}.get(type_name)
    if bits is not None:
        return rng.choice([0, -1, 1, rng.randrange(-(1 << (bits - 1)), 1 << (bits - 1))])
    if type_name == "bool":
        return rng.random() < 0.5
    if type_name == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if type_name == "string":
        return "".join(rng.choice(_TEXT) for _ in range(rng.randrange(0, 10)))
    if type_name in ("bytes", "records"):
        return rng.randbytes(rng.randrange(0, 20))
    if type_name == "float64":
        return rng.uniform(-1e6, 1e6)
    raise AssertionError(type_name)


def _sample(fields: list[dict[str, Any]], version: int, flexible: bool, rng: random.Random,
            depth: int = 0) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for field in fields:
        if not in_versions(version, parse_versions(field.get("versions"))):
            continue
        key = snake_case(field["name"])
        tagged = flexible and "tag" in field and in_versions(version, parse_versions(field.get("taggedVersions")))
        if tagged and rng.random() < 0.3:
            continue  # absent: the default
        nullable = in_versions(version, parse_versions(field.get("nullableVersions")))
        if nullable and rng.random() < 0.25:
            v: Any = None
        else:
            type_name: str = field["type"]
            if type_name.startswith("[]"):
                count = rng.randrange(0, 3 if depth < 2 else 2)
                if "fields" in field:
                    v = [_sample(field["fields"], version, flexible, rng, depth + 1) for _ in range(count)]
                else:
                    v = [_scalar(type_name[2:], rng) for _ in range(count)]
            elif "fields" in field:
                v = _sample(field["fields"], version, flexible, rng, depth + 1)
            else:
                v = _scalar(type_name, rng)
        if tagged and (v is None or v == default_factory(field, version, flexible)()):
            continue  # a tagged field equal to its default is not written: leave it out
        value[key] = v
    return value


def _same(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(_same(v, actual.get(k)) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and \
            all(_same(a, b) for a, b in zip(expected, actual, strict=True))
    if isinstance(expected, bytes):
        return actual is not None and bytes(actual) == expected
    return expected == actual


def _values() -> Iterator[tuple[str, int, dict[str, Any]]]:
    for name, version in CASES:
        spec = message(name)
        rng = random.Random(f"{name}-{version}")
        for _ in range(SAMPLES):
            yield name, version, _sample(spec.definition["fields"], version, spec.is_flexible(version), rng)


@pytest.fixture(scope="module")
def answers() -> dict[tuple[str, int], list[tuple[dict[str, Any], bytes, dict[str, Any], dict[str, Any]]]]:
    """(value, our bytes, Kafka's answer for the value, Kafka's answer for our bytes) per case."""
    values = list(_values())
    requests = []
    ours = []
    for name, version, value in values:
        spec = message(name)
        encoded = spec.encode(version, value)
        ours.append(encoded)
        cls = kafka.java_class(spec.definition)
        requests.append({"class": cls, "version": version,
                         "json": kafka.to_kafka_json(spec.definition["fields"], value)})
        requests.append({"class": cls, "version": version, "hex": encoded.hex()})
    try:
        replies = kafka.ask(requests)
    except kafka.Unavailable as exc:
        pytest.skip(f"Kafka's classes are not available: {exc}")
    out: dict[tuple[str, int], list[Any]] = {}
    for i, (name, version, value) in enumerate(values):
        out.setdefault((name, version), []).append((value, ours[i], replies[2 * i], replies[2 * i + 1]))
    return out


def test_every_definition_is_covered() -> None:
    assert len(NAMES) == 58
    assert {n for n, _ in CASES} == set(NAMES)


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
