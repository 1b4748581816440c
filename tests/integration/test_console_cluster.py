"""Any broker's console shows the whole cluster (three brokers on ZooKeeper): every broker's pages give the same
partitions with their leaders and log end offsets (ListOffsets to each leader), the same group with its lag (at
its coordinator, wherever it is) and the same open transaction; a message produced from one broker's console goes
to the partition's leader on another."""

from __future__ import annotations

import re
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from tests.integration.test_console import Browserless


@pytest.mark.minibroker_cluster(brokers=3, console=True)
def test_every_brokers_console_shows_the_whole_cluster(minibroker_cluster) -> None:
    cluster = minibroker_cluster
    topic, group, txn_id = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}", f"txn-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=3, replication_factor=2)
    leaders = {p: cluster.wait_leader(topic, p) for p in range(3)}
    assert set(leaders.values()) == {1, 2, 3}  # one partition led by each broker
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap)
    for p in range(3):
        for i in range(p + 2):
            producer.send(topic, b"v%d" % i, partition=p)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=group, enable_auto_commit=False)
    consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(1, "", -1) for p in range(3)})
    consumer.close()
    transactional = KafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id=txn_id)
    try:
        transactional.init_transactions()
        transactional.begin_transaction()
        transactional.send(topic, b"open", partition=0).get(30)
        urls = cluster.console_urls
        assert sorted(urls) == [1, 2, 3]
        for broker_id, url in urls.items():
            client = Browserless(url)
            status, page = client.get(f"/topics/{topic}")
            assert status == 200, page
            rows = re.findall(r'messages\?partition=(\d)">\d</a></td>\s*<td class="num">(\d)</td>.*?'
                              r'<td class="num">([\d,]+)</td><td class="num">([\d,]+)</td>', page, re.S)
            assert {int(p): int(leader) for p, leader, _, _ in rows} == leaders, broker_id
            # log end offsets from each partition's leader (partition 0 also holds the open transaction's record)
            assert [int(end) for _, _, _, end in rows] == [3, 3, 4], broker_id
            status, page = client.get(f"/groups/{group}")
            assert status == 200 and re.search(r'id="total-lag">7<', page), (broker_id, page)  # 2 + 2 + 3
            cluster.wait_until(lambda c=client: txn_id in c.get("/transactions")[1], 30, f"the txn at {broker_id}")
            _, page = client.get("/transactions")
            assert re.search(rf'data-transactional-id="{txn_id}">.*?Ongoing.*?{topic}-0', page, re.S), broker_id
        transactional.commit_transaction()
    finally:
        transactional.close()
    # Produced from broker 1's console to the partition broker 2 or 3 leads.
    elsewhere = next(p for p, leader in leaders.items() if leader != 1)
    client = Browserless(urls[1])
    client.get(f"/topics/{topic}/produce")
    status, page = client.post(f"/topics/{topic}/produce", {"partition": str(elsewhere), "value": "from broker 1"})
    assert status == 200 and f"Produced to {topic}-{elsewhere} at offset" in page
    reader = KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                           consumer_timeout_ms=10_000)
    reader.assign([TopicPartition(topic, elsewhere)])
    assert b"from broker 1" in [r.value for r in reader]
    reader.close()
