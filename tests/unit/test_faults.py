"""Fault rules (broker/observability/faults.py) and the admin endpoint's request handling, as pure logic."""

from __future__ import annotations

import json
import random

import pytest

from broker.http.admin import add_rule
from broker.http.stack import HttpError
from broker.observability.faults import FaultAction, FaultInjector, error_response
from broker.server.dispatch import table
from protocol.header import ApiKey, ErrorCode
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from tests.fuzz import corpus


def _produce(topic: str = "t", partition: int = 0) -> ProduceRequest:
    return ProduceRequest(None, -1, 1000, [TopicProduceData(topic, [PartitionProduceData(partition, b"")])])


def test_matching_and_counting():
    faults = FaultInjector()
    rule = faults.add("error", api="PRODUCE", error="NOT_LEADER_OR_FOLLOWER", count=2, topic="t", partition=1)
    assert faults.match(ApiKey.FETCH, None, None, 0) is None
    assert faults.match(ApiKey.PRODUCE, None, _produce("t", 0), 0) is None  # other partition
    assert faults.match(ApiKey.PRODUCE, None, _produce("u", 1), 0) is None  # other topic
    assert faults.match(ApiKey.PRODUCE, None, _produce("t", 1), 0) is rule
    assert faults.match(ApiKey.PRODUCE, None, _produce("t", 1), 0) is rule
    assert faults.match(ApiKey.PRODUCE, None, _produce("t", 1), 0) is None and not faults.active


def test_client_id_unlimited_count_and_expiry():
    faults = FaultInjector()
    faults.add(FaultAction.DELAY, api=ApiKey.METADATA, delay_ms=5, count=None, client_id="me", duration_ms=1000,
               now_ms=10_000)
    assert faults.match(ApiKey.METADATA, "you", None, 10_001) is None
    for now in (10_001, 10_500, 10_999):
        assert faults.match(ApiKey.METADATA, "me", None, now) is not None
    assert faults.match(ApiKey.METADATA, "me", None, 11_000) is None
    assert faults.describe(11_000) == []


def test_leader_unavailable():
    faults = FaultInjector()
    faults.add("leader_unavailable", topic="t", partition=0, duration_ms=500, now_ms=0)
    assert faults.unavailable_leaders(100) == {("t", 0)}
    assert faults.match(ApiKey.METADATA, None, None, 100) is None  # Metadata is answered, with no leader
    rule = faults.match(ApiKey.PRODUCE, None, _produce("t", 0), 100)
    assert rule is not None and rule.action is FaultAction.LEADER_UNAVAILABLE
    assert faults.match(ApiKey.PRODUCE, None, _produce("t", 0), 500) is None
    assert faults.unavailable_leaders(500) == set()


def test_invalid_rules():
    faults = FaultInjector()
    for bad in ({"action": "error", "api": "PRODUCE"}, {"action": "nonsense"},
                {"action": "leader_unavailable", "topic": "t"}, {"action": "delay", "count": 0},
                {"action": "error", "api": "NOPE", "error": 1}):
        with pytest.raises((ValueError, KeyError)):
            faults.add(**bad)


@pytest.mark.parametrize("api_version", corpus.served_versions())
def test_error_responses_encode(api_version):
    """An injected error makes a valid response of every API and version."""
    api_key, version = api_version
    api = table()[api_key]
    frame = corpus.valid_request(api_key, version, random.Random(api_key * 100 + version))
    from protocol.header import parse_request_header

    header, offset = parse_request_header(frame[4:])
    request = api.decode_request(version, frame[4:], offset)
    api.encode_response(version, error_response(ApiKey(api_key), request, ErrorCode.REQUEST_TIMED_OUT,
                                                lambda _id: "t"))


def test_admin_rules_from_json():
    faults = FaultInjector()
    assert add_rule(json.dumps({"action": "error", "api": "FETCH", "error": 7}).encode(), faults, 0) == 1
    assert faults.describe(0)[0]["error"] == "REQUEST_TIMED_OUT"
    for bad in (b"[1]", b"{not json", b'{"action": "error", "api": "FETCH", "colour": "red"}',
                b'{"action": "explode"}'):
        with pytest.raises(HttpError) as refused:
            add_rule(bad, faults, 0)
        assert refused.value.status == 400
    assert len(faults.describe(0)) == 1
