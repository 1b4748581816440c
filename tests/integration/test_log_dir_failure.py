"""A log directory that fails on a cluster broker (an I/O error on append, injected with the test kit's
`io_error` fault rule): the broker takes it offline as Kafka does. The write is answered KAFKA_STORAGE_ERROR
and not acknowledged; the partitions on it stop being led there; the controller, told through
/log_dir_event_notification, elects their leaders elsewhere from the ISR and drops the broker from the ISRs;
DescribeLogDirs reports the directory's error; a client goes on through the new leaders without losing an
acknowledged message; a restart brings the broker back."""

from __future__ import annotations

import time

from protocol.records import Record, build_batch
from tests.kafka_wire import WireClient
from tests.soak.crash_loop import read_topic

KAFKA_STORAGE_ERROR = 56
DESCRIBE_LOG_DIRS = 35


def _batch(value: bytes) -> bytes:
    return build_batch([Record(0, 0, None, value)], base_timestamp=int(time.time() * 1000))


def test_an_io_error_takes_the_log_directory_offline(minibroker_cluster, topic_name):
    from confluent_kafka import Producer

    cluster = minibroker_cluster
    cluster.create_topic(topic_name, partitions=3, replication_factor=3, configs={"min.insync.replicas": "2"})
    for p in range(3):
        cluster.wait_isr(topic_name, p, 3)
    victim = cluster.leader(topic_name, 0)
    led = [p for p in range(3) if cluster.leader(topic_name, p) == victim]
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                         "log_level": 2})
    acked: list[bytes] = []

    def send(values: list[bytes]) -> None:
        for value in values:
            producer.produce(topic_name, value, partition=int(value.split(b"-")[1]) % 3,
                             on_delivery=lambda err, msg: err is None and acked.append(msg.value()))
        assert producer.flush(90) == 0

    send([b"before-%d" % i for i in range(30)])
    cluster.broker(victim).inject("io_error", topic=topic_name, partition=0)
    with WireClient(cluster.broker(victim).bootstrap) as client:
        answer = client.produce(topic_name, 0, _batch(b"on the failing disk"))
        assert answer.error_code == KAFKA_STORAGE_ERROR
        # The directory is offline: every partition on it answers KAFKA_STORAGE_ERROR here from now on.
        assert client.produce(topic_name, 0, _batch(b"after the failure")).error_code == KAFKA_STORAGE_ERROR
        dirs = client.request(DESCRIBE_LOG_DIRS, 1, {"topics": None})
        assert [(d.error_code, d.topics) for d in dirs.results] == [(KAFKA_STORAGE_ERROR, [])]
    # The controller moves its leaderships and drops it from the ISRs, though it stays registered.
    for p in led:
        cluster.wait_leader(topic_name, p, not_broker=victim, timeout=60)
    for p in range(3):
        cluster.wait_until(lambda p=p: victim not in cluster.wait_isr(topic_name, p, 2) or None, 60,
                           f"broker {victim} out of the ISR of partition {p}")
    assert victim in {b.node_id for b in cluster.metadata([]).brokers}
    send([b"after-%d" % i for i in range(30)])  # the client goes on through the new leaders
    values = [v for _, _, v in read_topic(cluster.bootstrap, topic_name, 3, "read_uncommitted")]
    assert sorted(acked) == sorted(v for v in values if v in acked) and len(acked) == 60
    assert b"on the failing disk" not in values and b"after the failure" not in values
    # A restart opens the directory again: the broker catches up and rejoins every ISR.
    cluster.stop_broker(victim)
    cluster.start_broker(victim)
    for p in range(3):
        cluster.wait_isr(topic_name, p, 3, timeout=90)
