"""The admin HTTP endpoint: fault rules from outside Python (curl), acting on real clients."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Producer

from broker.testkit import BrokerThread
from tests.kafka_wire import WireClient


def _call(method: str, url: str, body: dict | None = None) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


@pytest.fixture
def broker(tmp_path):
    with BrokerThread(tmp_path, admin_listen="127.0.0.1:0") as broker:
        yield broker


def test_rules_over_http(broker, topic_name):
    base = broker.admin_url
    assert _call("GET", base + "/health") == (200, "ok")
    status, created = _call("POST", base + "/faults", {"action": "error", "api": "PRODUCE",
                                                        "error": "NOT_LEADER_OR_FOLLOWER", "count": 2,
                                                        "topic": topic_name})
    assert status == 201
    status, rules = _call("GET", base + "/faults")
    assert status == 200 and [r["id"] for r in rules] == [created["id"]] and rules[0]["count"] == 2
    with WireClient(broker.bootstrap) as client:
        client.create_topic(topic_name)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "retry.backoff.ms": 50})
    reports = []
    producer.produce(topic_name, b"v", partition=0, on_delivery=lambda e, m: reports.append((e, m)))
    assert producer.flush(60) == 0
    assert reports[0][0] is None and reports[0][1].offset() == 0  # retried through both errors, stored once
    assert _call("GET", base + "/faults") == (200, [])


def test_removal_and_bad_requests(broker):
    base = broker.admin_url
    _, first = _call("POST", base + "/faults", {"action": "delay", "api": "FETCH", "delay_ms": 10, "count": None})
    _, second = _call("POST", base + "/faults", {"action": "drop_response", "api": "PRODUCE"})
    assert _call("DELETE", f"{base}/faults/{first['id']}") == (204, None)
    assert _call("DELETE", f"{base}/faults/{first['id']}")[0] == 404
    assert [r["id"] for r in _call("GET", base + "/faults")[1]] == [second["id"]]
    assert _call("DELETE", base + "/faults") == (204, None)
    assert _call("GET", base + "/faults") == (200, [])
    assert _call("POST", base + "/faults", {"action": "explode"})[0] == 400
    assert _call("POST", base + "/faults", {"action": "error", "api": "PRODUCE"})[0] == 400  # no error code
    assert _call("POST", base + "/faults", {"action": "error", "api": "NO_SUCH_API", "error": 6})[0] == 400
    assert _call("POST", base + "/faults", {"action": "error", "error": 6, "colour": "red"})[0] == 400
    assert _call("GET", base + "/nothing")[0] == 404
