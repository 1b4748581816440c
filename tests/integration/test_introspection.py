"""The fixture handle's view into the broker: topics, groups (with why they rebalanced), transactions,
producers, the waits built on them, and reset()."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer

from broker.testkit import BrokerThread
from tests.integration.conftest import wait_until


def test_topics_groups_and_waits(minibroker_server, topic_name):
    broker = minibroker_server
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(10):
        producer.produce(topic_name, b"%d" % i, partition=0)
    assert producer.flush(60) == 0
    partition = broker.topics()[topic_name]["partitions"][0]
    assert (partition["log_start_offset"], partition["log_end_offset"], partition["last_stable_offset"]) == (0, 10, 10)
    [entry] = broker.producers(topic_name, 0)
    assert entry["last_offset"] == 9 and entry["last_sequence"] == 9
    first = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "intro", "auto.offset.reset": "earliest",
                      "client.id": "first"})
    first.subscribe([topic_name])
    seen = 0
    while seen < 10:
        seen += sum(1 for m in first.consume(10, 0.5) if not m.error())
    group = broker.wait_group_stable("intro", members=1)
    assert group["members"][0]["client_id"] == "first"
    first.commit(asynchronous=False)
    assert broker.wait_committed("intro", topic_name, 0, 10) == 10
    second = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "intro", "client.id": "second"})
    second.subscribe([topic_name])

    def both_members() -> bool:  # both consumers must keep polling for the rebalance to complete
        first.poll(0.05)
        second.poll(0.05)
        found = broker.groups().get("intro")
        return found is not None and found["state"] == "Stable" and len(found["members"]) == 2

    wait_until(both_members, timeout=60)
    group = broker.wait_group_stable("intro", members=2)
    events = [e["event"] for e in group["timeline"]]
    assert any("joined" in e and "client second" in e for e in events), events
    assert "PreparingRebalance -> CompletingRebalance" in events
    second.close()
    first.close()


def test_transactions_are_visible(minibroker_server, topic_name):
    producer = Producer({"bootstrap.servers": minibroker_server.bootstrap, "transactional.id": "intro-txn"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic_name, b"open", partition=0)
    producer.flush(30)
    txn = minibroker_server.transactions()["intro-txn"]
    assert txn["state"] == "Ongoing" and txn["partitions"] == [f"{topic_name}-0"]
    partition = minibroker_server.topics()[topic_name]["partitions"][0]
    assert partition["last_stable_offset"] == 0 < partition["log_end_offset"]
    producer.commit_transaction(30)
    assert minibroker_server.transactions()["intro-txn"]["state"] == "CompleteCommit"


def test_reset_empties_the_broker(tmp_path, topic_name):
    with BrokerThread(tmp_path) as broker:
        port = broker.port
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        producer.produce(topic_name, b"v")
        assert producer.flush(30) == 0
        assert topic_name in broker.topics()
        broker.inject_error("FETCH", "REQUEST_TIMED_OUT")
        broker.reset()
        assert broker.port == port and broker.topics() == {} and broker.faults() == []
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        producer.produce(topic_name, b"again")
        assert producer.flush(30) == 0
        assert broker.topics()[topic_name]["partitions"][0]["log_end_offset"] == 1
