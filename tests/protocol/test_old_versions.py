"""The versions Kafka 4 removed (KIP-896) that the 3.x profiles serve: every one of them, byte for byte
against kafka-python's hand-written protocol classes (kafka.protocol.old: written long before the JSON
definitions, so an independent encoder), both directions, and every truncation an error.

Our definitions of these APIs (protocol/definitions/) are kafka-python's Kafka 4 files with the low end
of validVersions restored: a test checks that nothing else differs.
"""

from __future__ import annotations

import importlib
import io
import json
import pkgutil
import re
from functools import cache
from pathlib import Path
from typing import Any

import kafka.protocol.old
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.old.types import Array, Boolean, Int16, Int32, Int64, Schema, String

from protocol.schema import DecodeError, _resources_dir, in_versions, message, parse_versions
from tests.protocol import kafka_python_oracle as json_oracle
from tests.protocol.test_messages import _same, _strategy

OWN = Path(__file__).resolve().parents[2] / "protocol" / "definitions"
_COMMENTS = re.compile(r"(?m)^\s*//.*\n?")


def _kafka_python_definition(name: str) -> dict[str, Any] | None:
    path = _resources_dir() / f"{name}.json"
    return json.loads(_COMMENTS.sub("", path.read_text())) if path.exists() else None


def _old_cases() -> list[tuple[str, int]]:
    cases = []
    for path in sorted(OWN.glob("*.json")):
        theirs = _kafka_python_definition(path.stem)
        if theirs is None:
            continue
        ours_lo = message(path.stem).valid_versions[0]
        theirs_lo = parse_versions(theirs["validVersions"])[0]
        cases += [(path.stem, v) for v in range(ours_lo, theirs_lo)]
    return cases


CASES = _old_cases()


def test_every_removed_version_is_covered() -> None:
    names = {name for name, _ in CASES}
    for api in ("Produce", "Fetch", "ListOffsets", "OffsetCommit", "OffsetFetch", "CreateTopics", "DeleteTopics",
                "OffsetForLeaderEpoch", "DescribeAcls", "CreateAcls", "DeleteAcls", "DescribeConfigs",
                "DescribeLogDirs", "AlterReplicaLogDirs", "WriteTxnMarkers"):
        assert {api + "Request", api + "Response"} <= names, api
    assert ("FetchRequest", 0) in CASES and ("FetchResponse", 3) in CASES and ("ProduceRequest", 2) in CASES


@pytest.mark.parametrize("name", sorted({n for n, _ in CASES}))
def test_definition_is_kafka_pythons_with_the_old_versions(name: str) -> None:
    ours = json.loads((OWN / f"{name}.json").read_text())
    theirs = _kafka_python_definition(name)
    assert theirs is not None
    assert {k: v for k, v in ours.items() if k != "validVersions"} == \
        {k: v for k, v in theirs.items() if k != "validVersions"}
    assert parse_versions(ours["validVersions"])[1] == parse_versions(theirs["validVersions"])[1]


# --- the oracle: kafka-python's old classes, fed positionally in the definition's field order ----------

@cache
def _old_classes() -> dict[str, type]:
    out: dict[str, type] = {}
    for info in pkgutil.iter_modules(kafka.protocol.old.__path__, "kafka.protocol.old."):
        module = importlib.import_module(info.name)
        for key, value in vars(module).items():
            if isinstance(value, type) and re.fullmatch(r"\w+_v\d+", key) and hasattr(value, "SCHEMA"):
                out.setdefault(key, value)
    return out


# Versions kafka-python has no (right) class for, written here from Kafka 3.9's definitions: WriteTxnMarkers
# v0 is v1 without flexible encoding; AlterReplicaLogDirs and DescribeLogDirs v0 are their v1 ("Version 1 is
# the same as version 0"), which kafka-python's JSON classes encode (its DescribeLogDirsRequest_v0 class
# has `partitions` as one int32 instead of an array).
_SAME_AS_V1 = ("AlterReplicaLogDirsRequest", "AlterReplicaLogDirsResponse", "DescribeLogDirsRequest")
_WRITE_TXN_MARKERS_V0 = {
    "WriteTxnMarkersRequest": Schema(
        ("markers", Array(("producer_id", Int64), ("producer_epoch", Int16), ("transaction_result", Boolean),
                          ("topics", Array(("name", String("utf-8")), ("partition_indexes", Array(Int32)))),
                          ("coordinator_epoch", Int32)))),
    "WriteTxnMarkersResponse": Schema(
        ("markers", Array(("producer_id", Int64),
                          ("topics", Array(("name", String("utf-8")),
                                           ("partitions", Array(("partition_index", Int32),
                                                                ("error_code", Int16)))))))),
}


def _schema(name: str, version: int) -> Schema | None:
    if version == 0 and name in _WRITE_TXN_MARKERS_V0:
        return _WRITE_TXN_MARKERS_V0[name]
    cls = _old_classes().get(f"{name}_v{version}")
    return None if cls is None else cls.SCHEMA


def _positional(fields: list[dict[str, Any]], version: int, value: dict[str, Any]) -> list[Any]:
    out = []
    for field in fields:
        if not in_versions(version, parse_versions(field.get("versions"))):
            continue
        item = value[_snake(field["name"])]
        if item is not None and "fields" in field:
            if field["type"].startswith("[]"):
                item = [_positional(field["fields"], version, x) for x in item]
            else:
                item = _positional(field["fields"], version, item)
        out.append(item)
    return out


def _named(fields: list[dict[str, Any]], version: int, values: Any) -> dict[str, Any]:
    out = {}
    present = [f for f in fields if in_versions(version, parse_versions(f.get("versions")))]
    assert len(present) == len(values)
    for field, item in zip(present, values, strict=True):
        if item is not None and "fields" in field:
            if field["type"].startswith("[]"):
                item = [_named(field["fields"], version, x) for x in item]
            else:
                item = _named(field["fields"], version, item)
        elif isinstance(item, bytearray | memoryview):
            item = bytes(item)
        out[_snake(field["name"])] = item
    return out


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _oracle_encode(name: str, version: int, value: dict[str, Any]) -> bytes:
    if name in _SAME_AS_V1 and version == 0:
        return json_oracle.encode(name, 1, value)
    schema = _schema(name, version)
    assert schema is not None, f"no independent encoder for {name} v{version}"
    return bytes(schema.encode(_positional(message(name).definition["fields"], version, value)))


def _oracle_decode(name: str, version: int, data: bytes) -> dict[str, Any]:
    if name in _SAME_AS_V1 and version == 0:
        return json_oracle.decode(name, 1, data)
    schema = _schema(name, version)
    assert schema is not None
    stream = io.BytesIO(data)
    values = schema.decode(stream)
    assert stream.tell() == len(data)
    return _named(message(name).definition["fields"], version, values)


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_matches_kafka_pythons_old_classes(name: str, version: int, data: st.DataObject) -> None:
    spec = message(name)
    value = data.draw(_strategy(spec, version))
    ours = spec.encode(version, value)
    assert ours == _oracle_encode(name, version, value)
    assert _same(value, spec.decode(version, ours))
    assert _same(value, _oracle_decode(name, version, ours))
    cut = data.draw(st.integers(0, max(0, len(ours) - 1)))
    if ours:
        with pytest.raises(DecodeError):
            spec.decode(version, ours[:cut])


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_defaults_encode(name: str, version: int) -> None:
    spec = message(name)
    encoded = spec.encode(version, {})
    assert spec.encode(version, spec.decode(version, encoded)) == encoded
