"""Virtual time: timeouts that take the broker's clock, not the test's patience."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from broker.testkit import BrokerThread
from tests.kafka_wire import WireClient

JOIN_GROUP, SYNC_GROUP = 11, 14


@pytest.fixture
def broker(tmp_path):
    with BrokerThread(tmp_path, virtual_time=True) as broker:
        yield broker


def _join(client: WireClient, group: str, session_timeout_ms: int) -> str:
    body = {"group_id": group, "session_timeout_ms": session_timeout_ms, "rebalance_timeout_ms": 60000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}], "reason": None}
    response = client.request(JOIN_GROUP, 5, body)
    if response.error_code == 79:  # MEMBER_ID_REQUIRED: join again with the id
        body["member_id"] = response.member_id
        response = client.request(JOIN_GROUP, 5, body)
    assert response.error_code == 0
    sync = client.request(SYNC_GROUP, 3, {"group_id": group, "generation_id": response.generation_id,
                                          "member_id": response.member_id, "group_instance_id": None,
                                          "assignments": [{"member_id": response.member_id, "assignment": b""}]})
    assert sync.error_code == 0
    return response.member_id


def test_a_silent_member_expires_when_time_is_advanced(broker):
    with WireClient(broker.bootstrap) as client:
        member = _join(client, "vt-group", session_timeout_ms=45_000)
        assert broker.wait_group_stable("vt-group", members=1)["members"][0]["member_id"] == member
        started = time.monotonic()
        broker.advance(44)  # not yet: no heartbeat for 44 s of broker time
        assert broker.groups()["vt-group"]["state"] == "Stable"
        broker.advance(2)
        group = broker.groups()["vt-group"]
        assert group["state"] == "Empty" and group["members"] == []
        assert any("session timeout expired" in e["event"] for e in group["timeline"])
        assert time.monotonic() - started < 30  # not 45 s of waiting (a generous bound, not a speed)


def test_an_open_transaction_times_out_when_time_is_advanced(broker, topic_name):
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "vt-txn",
                         "transaction.timeout.ms": 60_000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic_name, b"never committed", partition=0)
    assert producer.flush(30) == 0
    epoch = broker.transactions()["vt-txn"]["producer_epoch"]
    assert broker.transactions()["vt-txn"]["state"] == "Ongoing"
    broker.advance(61)

    def aborted() -> dict | None:
        txn = broker.transactions()["vt-txn"]
        return txn if txn["state"] == "CompleteAbort" else None

    txn = broker.wait_until(aborted, 30, "the timed-out transaction to be aborted")
    assert txn["producer_epoch"] == epoch + 1  # fenced, as Kafka's timeout abort does
    partition = broker.topics()[topic_name]["partitions"][0]
    assert partition["last_stable_offset"] == partition["log_end_offset"]  # the abort marker is written


def test_advance_needs_virtual_time(minibroker_server):
    with pytest.raises(RuntimeError):
        minibroker_server.advance(1)
