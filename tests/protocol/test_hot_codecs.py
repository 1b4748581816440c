"""The hand-written Produce, Fetch and ApiVersions codecs agree with the construct specs (and so with kafka-python)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.messages import api_versions, fetch, produce
from protocol.schema import DecodeError, message
from tests.protocol import kafka_python_oracle as oracle
from tests.protocol.test_messages import _same, _strategy

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _without_tags(body: dict[str, Any], partitions_key: str, tags: tuple[str, ...]) -> dict[str, Any]:
    """Drop tagged fields (the fast encoders hand non-default ones to the construct spec)."""
    body = dict(body)
    body.pop("node_endpoints", None)
    key = "responses"
    body[key] = [dict(t, **{partitions_key: [{k: v for k, v in p.items() if k not in tags}
                                             for p in t[partitions_key]]}) for t in body[key]]
    return body


@pytest.mark.parametrize("version", range(0, 14))
@SETTINGS
@given(data=st.data())
def test_produce_request_decoder(version: int, data: st.DataObject) -> None:
    spec = message("ProduceRequest")
    value = data.draw(_strategy(spec, version))
    encoded = spec.encode(version, value)
    decoded = produce.decode_request(version, b"xx" + encoded, 2)
    assert _same(value, _plain(decoded))
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(DecodeError):
        produce.decode_request(version, encoded[:cut])


@pytest.mark.parametrize("version", range(0, 14))
@SETTINGS
@given(data=st.data())
def test_produce_response_encoder(version: int, data: st.DataObject) -> None:
    spec = message("ProduceResponse")
    value = data.draw(_strategy(spec, version))
    assert produce.encode_response(version, value) == spec.encode(version, value)
    if version >= 3:  # v0-2: the spec is checked against kafka-python's old classes (test_old_versions)
        plain = _without_tags(value, "partition_responses", ("current_leader",))
        assert produce.encode_response(version, plain) == oracle.encode("ProduceResponse", version, plain)


@pytest.mark.parametrize("version", range(0, 19))
@SETTINGS
@given(data=st.data())
def test_fetch_request_decoder(version: int, data: st.DataObject) -> None:
    spec = message("FetchRequest")
    value = data.draw(_strategy(spec, version))
    encoded = spec.encode(version, value)
    decoded = _plain(fetch.decode_request(version, encoded))
    value.pop("replica_state", None)  # tagged, for replicas only: skipped
    for topic in value["topics"]:  # v17+: tagged, for replicas only (KIP-853, KIP-1166): skipped
        for partition in topic["partitions"]:
            partition.pop("replica_directory_id", None)
            partition.pop("high_watermark", None)
    assert _same(value, decoded)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(DecodeError):
        fetch.decode_request(version, encoded[:cut])


@pytest.mark.parametrize("version", range(0, 19))
@SETTINGS
@given(data=st.data())
def test_fetch_response_encoder(version: int, data: st.DataObject) -> None:
    spec = message("FetchResponse")
    value = data.draw(_strategy(spec, version))
    assert fetch.encode_response(version, value) == spec.encode(version, value)
    if version >= 4:  # v0-3: the spec is checked against kafka-python's old classes (test_old_versions)
        plain = _without_tags(value, "partitions", ("diverging_epoch", "current_leader", "snapshot_id"))
        assert fetch.encode_response(version, plain) == oracle.encode("FetchResponse", version, plain)


@pytest.mark.parametrize("version", range(0, 6))
@SETTINGS
@given(data=st.data())
def test_api_versions_request_decoder(version: int, data: st.DataObject) -> None:
    spec = message("ApiVersionsRequest")
    value = data.draw(_strategy(spec, version))
    decoded = _plain(api_versions.decode_request(version, b"xx" + spec.encode(version, value), 2))
    assert _same(value, {k: v for k, v in decoded.items() if k in value})


@pytest.mark.parametrize("version", range(0, 6))
@SETTINGS
@given(data=st.data())
def test_api_versions_response_encoder(version: int, data: st.DataObject) -> None:
    spec = message("ApiVersionsResponse")
    value = data.draw(_strategy(spec, version))
    assert api_versions.encode_response(version, value) == spec.encode(version, value)
    plain = {k: v for k, v in value.items() if k in ("error_code", "api_keys", "throttle_time_ms")}
    assert api_versions.encode_response(version, plain) == spec.encode(version, plain)
