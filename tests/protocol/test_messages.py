"""Every API x version the broker serves: our construct codec against kafka-python's, byte for byte.

Values come from hypothesis, generated from the same JSON definition (only the fields of that version).
Directions: ours.encode == kafka-python.encode; ours.decode(kafka-python bytes) == value;
kafka-python.decode(our bytes) == value; and every truncation of a message is a DecodeError.
"""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.server.dispatch import table
from protocol.schema import (
    DecodeError,
    MessageSpec,
    default_factory,
    in_versions,
    message,
    parse_versions,
    snake_case,
)
from tests.protocol import kafka_python_oracle as oracle

INT_RANGES = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}


def _cases() -> list[tuple[str, int]]:
    """Every message kafka-python has a class for. The inter-broker APIs (LeaderAndIsr, UpdateMetadata,
    StopReplica, ControlledShutdown, AlterPartition) are not among them: tests/protocol/
    test_inter_broker_messages.py checks those against Kafka's own serializer; the KIP-848 and KIP-932 ones, and
    those whose definitions are newer than kafka-python's, tests/protocol/test_kafka4_messages.py; the KIP-1071
    ones, tests/protocol/test_streams_messages.py."""
    from tests.protocol.test_kafka4_messages import NEWER

    cases = []
    known = oracle.known_messages()
    for api in table().values():
        lo, hi = api.advertised_range
        for name in (api.request_name, api.response_name):
            if name not in known or name in NEWER:  # newer than kafka-python's: checked against Kafka's classes
                continue
            valid = message(name).valid_versions
            for v in range(max(lo, valid[0]), hi + 1):
                cases.append((name, v))
    return cases


CASES = _cases()


def _scalar(type_name: str, nullable: bool) -> st.SearchStrategy[Any]:
    if type_name in INT_RANGES:
        bits = INT_RANGES[type_name]
        base = st.integers(-(1 << bits), (1 << bits) - 1)
    elif type_name == "uint16":
        base = st.integers(0, 0xFFFF)
    elif type_name == "uint32":
        base = st.integers(0, 0xFFFFFFFF)
    elif type_name == "float64":
        base = st.floats(allow_nan=False)
    elif type_name == "bool":
        base = st.booleans()
    elif type_name == "uuid":
        base = st.uuids().map(lambda u: uuid.UUID(int=u.int))
    elif type_name == "string":
        base = st.text(max_size=12)
    elif type_name in ("bytes", "records"):
        base = st.binary(max_size=40)
    else:
        raise AssertionError(type_name)
    return st.none() | base if nullable else base


def _field_strategy(field: dict[str, Any], version: int, flexible: bool) -> st.SearchStrategy[Any]:
    nullable = in_versions(version, parse_versions(field.get("nullableVersions")))
    type_name: str = field["type"]
    if type_name.startswith("[]"):
        if "fields" in field:
            element = _struct_strategy(field["fields"], version, flexible)
        else:
            element = _scalar(type_name[2:], False)
        base = st.lists(element, max_size=3)
    elif "fields" in field:
        base = _struct_strategy(field["fields"], version, flexible)
    else:
        return _scalar(type_name, nullable)
    return st.none() | base if nullable else base


def _struct_strategy(fields: list[dict[str, Any]], version: int, flexible: bool) -> st.SearchStrategy[Any]:
    parts: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for field in fields:
        if not in_versions(version, parse_versions(field.get("versions"))):
            continue
        strategy = _field_strategy(field, version, flexible)
        tagged = flexible and "tag" in field and in_versions(version, parse_versions(field.get("taggedVersions")))
        if tagged:
            # A tagged field equal to its default is not written (Kafka); kafka-python writes a
            # default-valued struct anyway, so a tagged field is either absent or not the default.
            default = default_factory(field, version, flexible)()
            optional[snake_case(field["name"])] = strategy.filter(lambda x, d=default: x is not None and x != d)
            continue
        parts[snake_case(field["name"])] = strategy
    return st.fixed_dictionaries(parts, optional=optional)


def _strategy(spec: MessageSpec, version: int) -> st.SearchStrategy[dict[str, Any]]:
    return _struct_strategy(spec.definition["fields"], version, spec.is_flexible(version))


def _same(expected: Any, actual: Any) -> bool:
    """Values equal, comparing only the keys of `expected` (decoders also fill absent fields)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(_same(v, actual.get(k)) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and \
            all(_same(a, b) for a, b in zip(expected, actual, strict=True))
    if isinstance(expected, float):
        return math.isclose(expected, actual) or expected == actual
    if isinstance(expected, bytes | bytearray | memoryview):
        if isinstance(actual, str):  # kafka-python's to_dict() renders bytes as text
            return bytes(expected).decode(errors="backslashreplace") == actual
        return actual is not None and bytes(expected) == bytes(actual)
    if isinstance(expected, uuid.UUID) and isinstance(actual, uuid.UUID | str | bytes):
        return str(expected) == str(actual) if not isinstance(actual, bytes) else expected.bytes == actual
    return expected == actual


def test_cases_cover_every_served_api() -> None:
    assert {name for name, _ in CASES} >= {"ProduceRequest", "FetchResponse", "MetadataResponse"}
    assert len(CASES) > 80


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_matches_kafka_python(name: str, version: int, data: st.DataObject) -> None:
    spec = message(name)
    value = data.draw(_strategy(spec, version))
    ours = spec.encode(version, value)
    theirs = oracle.encode(name, version, value)
    assert ours == theirs
    assert _same(value, spec.decode(version, theirs))
    if not (name == "ApiVersionsResponse" and value["error_code"]):
        # kafka-python reads any ApiVersions response with an error as v0 (the KIP-511 fallback).
        assert _same(value, oracle.decode(name, version, ours))
    # Every truncation is an error, never a wrong value or a crash.
    cut = data.draw(st.integers(0, max(0, len(ours) - 1)))
    if len(ours):
        with pytest.raises(DecodeError):
            spec.decode(version, ours[:cut])


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_defaults_encode(name: str, version: int) -> None:
    """An empty mapping encodes with Kafka's defaults and decodes back to them."""
    spec = message(name)
    encoded = spec.encode(version, {})
    assert spec.encode(version, spec.decode(version, encoded)) == encoded
