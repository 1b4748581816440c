"""The project's images and docker-compose.yml, run for real (podman as the engine, conftest.py): `docker run -p
9092:9092 minibroker` with a client on the host; ZooKeeper and the broker from the compose file, clients on the
host, the broker's container recreated on its volume; the `pipeline` service to its verified exit; the
`cluster` profile with a broker container killed while a client produces. The tests run in this order and
share the compose project (`make compose-test`). They run what README.md's container snippet shows."""

from __future__ import annotations

import re
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.healthcheck import answers_api_versions
from tests.containers.conftest import SKIP_UNLESS_ASKED, Compose, timed
from tests.containers.podman import Podman
from tests.integration.conftest import wait_until

# Skipped before any fixture starts (a skip inside a fixture would come after the session's engine).
pytestmark = SKIP_UNLESS_ASKED
DOC = Path(__file__).resolve().parents[2] / "docs/running/docker-compose.md"
# Quiet clients: a refused connection to a broker that is starting or was killed is expected here.
CLIENT = {"log_level": 3, "socket.connection.setup.timeout.ms": 5000}


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    """Every value written with acks=all by an idempotent producer; fails on any delivery error."""
    producer = Producer({**CLIENT, "bootstrap.servers": bootstrap, "enable.idempotence": True})
    errors: list[str] = []
    for value in values:
        producer.produce(topic, value.encode(), key=value.encode(),
                         on_delivery=lambda err, _msg: errors.append(str(err)) if err else None)
        producer.poll(0)
    assert producer.flush(60) == 0, "messages still unacknowledged after 60 s"
    assert not errors, errors[:5]


def consume(bootstrap: str, topic: str, count: int, group: str, timeout: float = 90) -> list[str]:
    """`count` values read from the start by a member of `group`, its offsets committed."""
    consumer = Consumer({**CLIENT, "bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while len(values) < count and time.monotonic() < deadline:
            for message in consumer.consume(1000, 1.0):
                if message.error():
                    raise KafkaException(message.error())
                values.append(message.value().decode())
        if values:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert len(values) >= count, f"read {len(values)} of {count} from {topic} within {timeout} s"
    return values


def committed(bootstrap: str, topic: str, group: str, partitions: int) -> int:
    consumer = Consumer({**CLIENT, "bootstrap.servers": bootstrap, "group.id": group})
    try:
        offsets = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return sum(max(tp.offset, 0) for tp in offsets)


def advertised(bootstrap: str) -> set[str]:
    metadata = AdminClient({**CLIENT, "bootstrap.servers": bootstrap}).list_topics(timeout=30)
    return {f"{b.host}:{b.port}" for b in metadata.brokers.values()}


def test_docker_run_serves_clients_on_the_host(engine: Podman, compose: Compose) -> None:
    """The image's defaults: `docker run -p 9092:9092 minibroker` advertises localhost:9092
    (MINIBROKER_ADVERTISED), which a client on the host reaches through the published port. Where 9092 is
    taken on this host, the documented form for another port: -p PORT:9092 -e MINIBROKER_ADVERTISED=..."""
    port = compose.ports["MINIBROKER_PORT"]
    options = ["-p", "9092:9092"] if port == 9092 else ["-p", f"{port}:9092",
                                                       "-e", f"MINIBROKER_ADVERTISED=localhost:{port}"]
    assert f"docker run {' '.join(options)} minibroker\n" in DOC.read_text().replace("19092", str(port))
    bootstrap = f"localhost:{port}"
    started = time.monotonic()
    engine.check("run", "-d", "--name", "mbct-run", *options, "minibroker:latest")
    try:
        wait_until(lambda: answers_api_versions("127.0.0.1", port) is None, 60, interval=0.2,
                   message=f"the broker answering on {port}")
        assert advertised(bootstrap) == {bootstrap}
        topic = f"run-{uuid.uuid4().hex[:8]}"
        values = [f"run-{i}" for i in range(1000)]
        produce(bootstrap, topic, values)
        assert sorted(consume(bootstrap, topic, len(values), "run-readers")) == sorted(values)
        # The page's own client snippet (kafka-python), as a user on the host runs it.
        snippet = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
        exec(compile(snippet.replace("localhost:9092", bootstrap), str(DOC), "exec"), {})  # noqa: S102
    finally:
        engine.podman("rm", "-f", "-t", "5", "mbct-run")
    timed(f"docker run {' '.join(options)} minibroker: start, 1,000 produced and consumed from the host", started)


def test_compose_broker_serves_the_host_and_keeps_its_data(compose: Compose) -> None:
    """ZooKeeper and the broker (health checks order them), a client on the host through the published
    loopback port; the broker's container recreated: its data and the group's offsets are read back from
    the volume."""
    started = time.monotonic()
    compose.run("up", "-d", "broker")
    compose.wait_healthy("zookeeper", "broker")
    timed("compose up broker (ZooKeeper healthy, then the broker)", started)
    port = compose.ports["MINIBROKER_PORT"]
    published = compose.run("port", "broker", "9092").stdout.strip()
    assert published == f"127.0.0.1:{port}", published  # on loopback only, by default
    bootstrap = f"localhost:{port}"
    assert advertised(bootstrap) == {bootstrap}

    started = time.monotonic()
    topic = f"compose-{uuid.uuid4().hex[:8]}"
    values = [f"m{i}" for i in range(10_000)]
    produce(bootstrap, topic, values)
    assert sorted(consume(bootstrap, topic, len(values), "first-readers")) == sorted(values)
    timed("compose: 10,000 produced and consumed from the host", started)

    started = time.monotonic()
    before = compose.container("broker")
    compose.run("up", "-d", "--force-recreate", "--no-deps", "broker")
    assert compose.container("broker") != before, "the broker's container was not recreated"
    compose.wait_healthy("broker")
    timed("compose: broker container recreated on its volume", started)
    assert sorted(consume(bootstrap, topic, len(values), "second-readers")) == sorted(values)
    assert committed(bootstrap, topic, "first-readers", partitions=4) == len(values)


def test_pipeline_service_exits_after_verifying(compose: Compose) -> None:
    """The one-shot `pipeline` service: 100,000 rows written exactly once by Spark, then verified with
    read_committed; it exits 0 only when the verification holds."""
    started = time.monotonic()
    result = compose.run("up", "--exit-code-from", "pipeline", "pipeline", check=False, timeout=900)
    timed("compose up pipeline (100,000 rows written and verified)", started)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert "OK: expected 100000 rows, no duplicate keys" in output, output[-6000:]


def test_cluster_profile_loses_nothing_acknowledged_when_a_broker_is_killed(engine: Podman,
                                                                           compose: Compose) -> None:
    """Three brokers (replication factor 3, min.insync.replicas=2); an idempotent acks=all producer on the host
    keeps writing while the container of the partition's leader is killed (SIGKILL): every acknowledged
    message is read back, and acknowledgements go on after the kill."""
    started = time.monotonic()
    brokers = ("broker-1", "broker-2", "broker-3")
    compose.run("--profile", "cluster", "up", "-d", *brokers)
    compose.wait_healthy("zookeeper", *brokers)
    host_port = {b: compose.ports[f"MINIBROKER_PORT_{b[-1]}"] for b in brokers}
    bootstrap = ",".join(f"localhost:{port}" for port in host_port.values())
    wait_until(lambda: len(advertised(bootstrap)) == 3, 60, interval=0.5, message="metadata listing three brokers")
    timed("compose --profile cluster up (three brokers healthy)", started)

    topic = f"cluster-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({**CLIENT, "bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    leader = wait_until(lambda: _leader(admin, topic), 30, interval=0.5, message="a leader for the new topic")

    acked: list[str] = []
    failed: list[str] = []
    stop = threading.Event()

    def keep_producing() -> None:
        producer = Producer({**CLIENT, "bootstrap.servers": bootstrap, "enable.idempotence": True,
                             "message.timeout.ms": 120_000, "linger.ms": 5})

        def delivered(err, msg) -> None:  # noqa: ANN001
            (failed if err else acked).append(str(err) if err else msg.value().decode())

        i = 0
        while not stop.is_set():
            try:
                producer.produce(topic, f"c{i}".encode(), on_delivery=delivered)
            except BufferError:  # the client's queue is full while a leader is elected: wait for answers
                producer.poll(0.1)
                continue
            i += 1
            producer.poll(0)
        producer.flush(120)

    thread = threading.Thread(target=keep_producing)
    thread.start()
    try:
        wait_until(lambda: len(acked) >= 2000, 60, message="2,000 acknowledged before the kill")
        killed = f"broker-{leader}"
        compose.run("kill", "-s", "SIGKILL", killed)
        at_kill = len(acked)
        started = time.monotonic()
        wait_until(lambda: len(acked) >= at_kill + 2000, 120, message="2,000 more acknowledged after the kill")
        timed(f"cluster: {killed} (the leader) killed; 2,000 more acknowledged", started)
    finally:
        stop.set()
        thread.join(180)
    assert not failed, failed[:5]
    survivors = ",".join(f"localhost:{port}" for b, port in host_port.items() if b != killed)
    values = consume(survivors, topic, len(acked), "cluster-readers", timeout=120)
    missing = set(acked) - set(values)
    assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {sorted(missing)[:5]}"


def _leader(admin: AdminClient, topic: str) -> int | None:
    metadata = admin.list_topics(topic, timeout=10)
    partition = metadata.topics[topic].partitions.get(0)
    return partition.leader if partition is not None and partition.leader >= 0 else None

