"""The Kafka 4 message definitions kafka-python lacks (protocol/definitions/: KIP-848 and KIP-932 APIs, the
`__consumer_offsets` consumer/share group records, `__share_group_state`), byte for byte against Kafka
4.4's own generated classes (tests/protocol/kafka_oracle): for random values of every valid version,
Kafka's serialization of the value equals ours, Kafka re-serializes our bytes unchanged after parsing them,
and we decode Kafka's bytes back to the value. The definitions taken from newer releases than kafka-python's
(ApiVersions v5, TxnOffsetCommit v6, DeleteGroups v3, the delegation token APIs) against those releases'
classes: 4.4's, and 3.9's for the versions Kafka 4 removed.
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
# Definitions of a newer release than kafka-python's (tests/protocol/test_messages.py leaves them out).
NEWER_APIS = ["ApiVersions", "TxnOffsetCommit", "DeleteGroups", "CreateDelegationToken", "RenewDelegationToken",
              "ExpireDelegationToken", "DescribeDelegationToken"]
NEWER = [f"{api}{kind}" for api in NEWER_APIS for kind in ("Request", "Response")]
NAMES = [f"{api}{kind}" for api in APIS for kind in ("Request", "Response")] + \
    [f"{record}{kind}" for record in RECORDS for kind in ("Key", "Value")] + NEWER
# Versions Kafka 4 removed that the 3.x profiles serve, each the same on the wire as the next one (Kafka's
# definitions say so: "Version 1 is the same as version 0"): checked as that one.
SAME_AS_NEXT = {("CreateDelegationToken", 0), ("RenewDelegationToken", 0), ("ExpireDelegationToken", 0),
                ("DescribeDelegationToken", 0)}


def release_of(name: str, default: str = kafka.RELEASE) -> str:
    """Whose classes check a definition: 4.4's for those newer than kafka-python's, else `default`'s."""
    return "4.4" if name in NEWER else default


def kafka_version(name: str, version: int) -> int:
    return version + 1 if (name.removesuffix("Request").removesuffix("Response"), version) in SAME_AS_NEXT \
        else version
SAMPLES = 12
_TEXT = string.ascii_letters + string.digits + "-_.é€𝄞"


def cases(names: list[str]) -> list[tuple[str, int]]:
    """(definition, version) for every valid version of the definitions."""
    out = []
    for name in names:
        lo, hi = message(name).valid_versions
        out += [(name, v) for v in range(lo, hi + 1)]
    return out


CASES = cases(NAMES)


def _scalar(type_name: str, rng: random.Random) -> Any:
    bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}.get(type_name)
    if bits is not None:
        return rng.choice([0, -1, 1, rng.randrange(-(1 << (bits - 1)), 1 << (bits - 1))])
    if type_name in ("uint16", "uint32"):
        bits = int(type_name[4:])
        return rng.choice([0, 1, (1 << bits) - 1, rng.randrange(0, 1 << bits)])
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


def _values(which: list[tuple[str, int]]) -> Iterator[tuple[str, int, dict[str, Any]]]:
    for name, version in which:
        spec = message(name)
        rng = random.Random(f"{name}-{version}")
        for _ in range(SAMPLES):
            yield name, version, _sample(spec.definition["fields"], version, spec.is_flexible(version), rng)


def kafka_answers(which: list[tuple[str, int]], release: str = kafka.RELEASE
                  ) -> dict[tuple[str, int], list[tuple[dict[str, Any], bytes, dict[str, Any], dict[str, Any]]]]:
    """(value, our bytes, Kafka's answer for the value, Kafka's answer for our bytes) per case, from the
    generated classes of Kafka `release`; skips the test when they cannot be had."""
    values = list(_values(which))
    requests = []
    ours = []
    for name, version, value in values:
        spec = message(name)
        encoded = spec.encode(version, value)
        ours.append(encoded)
        cls = kafka.java_class(spec.definition)
        theirs = kafka_version(name, version)
        requests.append({"class": cls, "version": theirs,
                         "json": kafka.to_kafka_json(spec.definition["fields"], value)})
        requests.append({"class": cls, "version": theirs, "hex": encoded.hex()})
    releases = [release_of(name, release) for name, _version, _ in values]
    replies: list[dict[str, Any]] = [{}] * len(requests)
    try:
        for which_release in sorted(set(releases)):  # one JVM per release
            mine = [i for i, r in enumerate(releases) if r == which_release]
            answered = kafka.ask([requests[j] for i in mine for j in (2 * i, 2 * i + 1)], release=which_release)
            for n, i in enumerate(mine):
                replies[2 * i], replies[2 * i + 1] = answered[2 * n], answered[2 * n + 1]
    except kafka.Unavailable as exc:
        pytest.skip(f"Kafka's classes are not available: {exc}")
    out: dict[tuple[str, int], list[Any]] = {}
    for i, (name, version, value) in enumerate(values):
        out.setdefault((name, version), []).append((value, ours[i], replies[2 * i], replies[2 * i + 1]))
    return out


@pytest.fixture(scope="module")
def answers() -> dict[tuple[str, int], list[tuple[dict[str, Any], bytes, dict[str, Any], dict[str, Any]]]]:
    return kafka_answers(CASES)


def test_every_definition_is_covered() -> None:
    assert len(NAMES) == 58 + len(NEWER)
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
