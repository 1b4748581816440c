"""Apache Kafka's command-line tools (the newest release's, and the 3.9 ones under the 3.9 profile) against the
fixture broker, run as a user runs them (tests/kafka_tools.py, what `scripts/kafka-tool` runs), their outputs
checked. kafka-leader-election and kafka-reassign-partitions are checked on one broker and on a cluster of
three (replicas moved, the preferred leader elected)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests import kafka_jars, kafka_tools
from tests.kafka_wire import WireClient

REPO = Path(__file__).resolve().parents[2]


def tool(name: str, *args: str, bootstrap: str | None = None, input: str | None = None, ok: bool = True,
         release: str = kafka_tools.DEFAULT_RELEASE) -> subprocess.CompletedProcess[str]:
    """Runs a tool (with --bootstrap-server when `bootstrap` is given); `ok`: it must exit 0, else non-zero."""
    if bootstrap is not None:
        args = ("--bootstrap-server", bootstrap, *args)
    try:
        result = kafka_tools.run(name, *args, release=release, input=input)
    except kafka_jars.Unavailable as exc:
        pytest.fail(str(exc)) if _ci() else pytest.skip(str(exc))
    assert (result.returncode == 0) == ok, f"{name} {' '.join(args)} exited {result.returncode}:\n" \
                                           f"{result.stdout}\n{result.stderr[-4000:]}"
    return result


def _ci() -> bool:
    import os

    return bool(os.environ.get("CI"))


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def rows(output: str) -> list[list[str]]:
    """A tool's table: the non-empty lines split on whitespace."""
    return [line.split() for line in output.splitlines() if line.strip()]


def test_kafka_topics(minibroker):
    topic = name("orders")
    created = tool("kafka-topics", "--create", "--topic", topic, "--partitions", "3", "--config",
                   "retention.ms=3600000", bootstrap=minibroker)
    assert created.stdout.strip() == f"Created topic {topic}."
    assert topic in tool("kafka-topics", "--list", bootstrap=minibroker).stdout.split()

    described = tool("kafka-topics", "--describe", "--topic", topic, bootstrap=minibroker).stdout
    head, *partitions = described.strip().splitlines()
    assert re.match(rf"Topic: {topic}\tTopicId: \S{{22}}\tPartitionCount: 3\tReplicationFactor: 1\t"
                    r"Configs: retention\.ms=3600000$", head), head
    assert [p.split("\t")[1:5] for p in partitions] == [
        [f"Topic: {topic}", f"Partition: {i}", "Leader: 0", "Replicas: 0"] for i in range(3)]
    assert all("Isr: 0" in p for p in partitions)

    tool("kafka-topics", "--alter", "--topic", topic, "--partitions", "5", bootstrap=minibroker)
    assert "PartitionCount: 5" in tool("kafka-topics", "--describe", "--topic", topic, bootstrap=minibroker).stdout
    again = tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", bootstrap=minibroker, ok=False)
    assert f"Topic '{topic}' already exists" in again.stdout + again.stderr
    shrink = tool("kafka-topics", "--alter", "--topic", topic, "--partitions", "2", bootstrap=minibroker, ok=False)
    assert "InvalidPartitionsException" in shrink.stderr and "2 would not be an increase" in shrink.stdout

    tool("kafka-topics", "--delete", "--topic", topic, bootstrap=minibroker)
    assert topic not in tool("kafka-topics", "--list", bootstrap=minibroker).stdout.split()
    gone = tool("kafka-topics", "--describe", "--topic", topic, bootstrap=minibroker, ok=False)
    assert f"Topic '{topic}' does not exist" in gone.stdout + gone.stderr


def test_kafka_configs(minibroker):
    topic = name("configured")
    tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--config", "retention.ms=3600000",
         bootstrap=minibroker)
    entity = ("--entity-type", "topics", "--entity-name", topic)
    described = tool("kafka-configs", "--describe", *entity, bootstrap=minibroker).stdout
    assert f"Dynamic configs for topic {topic} are:" in described
    assert "retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000" in described

    altered = tool("kafka-configs", "--alter", *entity, "--add-config", "retention.ms=1000,cleanup.policy=compact",
                   bootstrap=minibroker)
    assert f"Completed updating config for topic {topic}." in altered.stdout
    described = tool("kafka-configs", "--describe", *entity, bootstrap=minibroker).stdout
    assert "cleanup.policy=compact sensitive=false" in described and "retention.ms=1000 sensitive=false" in described
    tool("kafka-configs", "--alter", *entity, "--delete-config", "retention.ms", bootstrap=minibroker)
    described = tool("kafka-configs", "--describe", *entity, bootstrap=minibroker).stdout
    assert "retention.ms" not in described and "cleanup.policy=compact" in described
    invalid = tool("kafka-configs", "--alter", *entity, "--add-config", "retention.ms=soon", bootstrap=minibroker,
                   ok=False)
    assert "InvalidConfigurationException" in invalid.stdout + invalid.stderr

    # Broker configs: this broker's, the cluster-wide default, and all of them with --all.
    broker = ("--entity-type", "brokers", "--entity-name", "0")
    tool("kafka-configs", "--alter", *broker, "--add-config", "message.max.bytes=2000000", bootstrap=minibroker)
    tool("kafka-configs", "--alter", "--entity-type", "brokers", "--entity-default", "--add-config",
         "log.retention.ms=86400000", bootstrap=minibroker)
    described = tool("kafka-configs", "--describe", *broker, bootstrap=minibroker).stdout
    assert "Dynamic configs for broker 0 are:" in described
    assert "message.max.bytes=2000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:message.max.bytes=2000000, " \
           "DEFAULT_CONFIG:message.max.bytes=1048588}" in described
    default = tool("kafka-configs", "--describe", "--entity-type", "brokers", "--entity-default",
                   bootstrap=minibroker).stdout
    assert "log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=" \
           "86400000}" in default
    everything = tool("kafka-configs", "--describe", *broker, "--all", bootstrap=minibroker).stdout
    assert "All configs for broker 0 are:" in everything
    assert "  broker.id=0 sensitive=false" in everything
    assert "  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG" in everything
    read_only = tool("kafka-configs", "--alter", *broker, "--add-config", "log.dirs=/elsewhere",
                     bootstrap=minibroker, ok=False)
    assert "Cannot update these configs dynamically" in read_only.stdout + read_only.stderr
    tool("kafka-configs", "--alter", *broker, "--delete-config", "message.max.bytes", bootstrap=minibroker)
    assert "message.max.bytes" not in tool("kafka-configs", "--describe", *broker, bootstrap=minibroker).stdout

    # The broker's loggers, and their levels changed at run time.
    loggers = ("--entity-type", "broker-loggers", "--entity-name", "0")
    described = tool("kafka-configs", "--describe", *loggers, bootstrap=minibroker).stdout
    assert "Dynamic configs for broker-logger 0 are:" in described
    assert re.search(r"^  root=(INFO|WARN|ERROR|DEBUG) sensitive=false synonyms=\{\}$", described, re.M), described
    logger = "broker.services.topics"
    try:
        tool("kafka-configs", "--alter", *loggers, "--add-config", f"{logger}=TRACE", bootstrap=minibroker)
        assert f"  {logger}=TRACE sensitive=false" in tool("kafka-configs", "--describe", *loggers,
                                                             bootstrap=minibroker).stdout
    finally:
        tool("kafka-configs", "--alter", *loggers, "--delete-config", logger, bootstrap=minibroker)


def test_console_producer_and_consumer(minibroker_server):
    bootstrap = minibroker_server.bootstrap
    topic, group = name("greetings"), name("readers")
    tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", bootstrap=bootstrap)
    lines = ["lang:en,kind:greeting\tk1:hello", "lang:fr\tk2:bonjour", "lang:de\tk1:hallo"]
    tool("kafka-console-producer", "--topic", topic, "--reader-property", "parse.key=true",
         "--reader-property", "key.separator=:", "--reader-property", "parse.headers=true",
         bootstrap=bootstrap, input="\n".join(lines) + "\n")
    consumed = tool("kafka-console-consumer", "--topic", topic, "--from-beginning", "--group", group,
                    "--max-messages", "3", "--formatter-property", "print.key=true", "--formatter-property",
                    "print.headers=true", "--formatter-property", "print.offset=true", "--timeout-ms", "30000",
                    bootstrap=bootstrap)
    assert consumed.stdout.splitlines() == [
        "Offset:0\tlang:en,kind:greeting\tk1\thello", "Offset:1\tlang:fr\tk2\tbonjour",
        "Offset:2\tlang:de\tk1\thallo"]
    assert "Processed a total of 3 messages" in consumed.stderr
    # The group committed its position: a second run of the group reads only what came since.
    tool("kafka-console-producer", "--topic", topic, bootstrap=bootstrap, input="later\n")
    again = tool("kafka-console-consumer", "--topic", topic, "--group", group, "--max-messages", "1",
                 "--timeout-ms", "30000", bootstrap=bootstrap)
    assert again.stdout.splitlines() == ["later"]
    assert minibroker_server.groups()[group]["offsets"] == {f"{topic}-0": 4}

    # The broker's segment is Kafka's format: kafka-dump-log reads it.
    segment = minibroker_server.data_dir / f"{topic}-0" / "00000000000000000000.log"
    dumped = tool("kafka-dump-log", "--files", str(segment), "--print-data-log").stdout
    assert re.findall(r"\| offset: (\d+) .* headerKeys: \[([^\]]*)\] key: (\S+) payload: (\S+)", dumped) == [
        ("0", "lang,kind", "k1", "hello"), ("1", "lang", "k2", "bonjour"), ("2", "lang", "k1", "hallo")]
    assert "| offset: 3 " in dumped and "payload: later" in dumped


def test_kafka_consumer_groups(minibroker):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.structs import OffsetAndMetadata, TopicPartition

    topic, group = name("lagging"), name("lagging")
    tool("kafka-topics", "--create", "--topic", topic, "--partitions", "2", bootstrap=minibroker)
    producer = KafkaProducer(bootstrap_servers=minibroker)
    for i in range(10):
        producer.send(topic, value=b"%d" % i, partition=i % 2)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=minibroker, group_id=group, client_id="lagging-client",
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        # Joined and stable (kafka-python commits only then); a loaded machine can take a while.
        deadline = time.monotonic() + 120
        while len(consumer.assignment()) < 2 or consumer._coordinator.generation_if_stable() is None:
            assert time.monotonic() < deadline, "the consumer did not join its group within 120 s"
            consumer.poll(timeout_ms=100)
        consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(3, "", -1),
                         TopicPartition(topic, 1): OffsetAndMetadata(1, "", -1)})
        assert group in tool("kafka-consumer-groups", "--list", bootstrap=minibroker).stdout.split()
        described = rows(tool("kafka-consumer-groups", "--describe", "--group", group, bootstrap=minibroker).stdout)
        assert described[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                "CONSUMER-ID", "HOST", "CLIENT-ID"]
        table = sorted(r for r in described[1:] if r[0] == group)
        assert [r[:6] for r in table] == [[group, topic, "0", "3", "5", "2"], [group, topic, "1", "1", "5", "4"]]
        assert all(r[8] == "lagging-client" and r[6].startswith("lagging-client-") for r in table)
        state = rows(tool("kafka-consumer-groups", "--describe", "--group", group, "--state",
                          bootstrap=minibroker).stdout)
        assert state[1][-3:] == ["range", "Stable", "1"], state
        # The tool says so and exits 0, as it does against Kafka; nothing is reset.
        busy = tool("kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest",
                    "--execute", bootstrap=minibroker)
        assert f"Assignments can only be reset if the group '{group}' is inactive, but the current state is " \
               "Stable." in busy.stdout
    finally:
        consumer.close(autocommit=False)

    reset = rows(tool("kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", f"{topic}:1",
                      "--to-offset", "4", "--execute", bootstrap=minibroker).stdout)
    assert reset[-1] == [group, topic, "1", "4"]
    described = rows(tool("kafka-consumer-groups", "--describe", "--group", group, bootstrap=minibroker).stdout)
    assert sorted(r[:6] for r in described[1:] if r[0] == group) == [
        [group, topic, "0", "3", "5", "2"], [group, topic, "1", "4", "5", "1"]]
    deleted = tool("kafka-consumer-groups", "--delete", "--group", group, bootstrap=minibroker)
    assert f"Deletion of requested consumer groups ('{group}') was successful." in deleted.stdout
    assert group not in tool("kafka-consumer-groups", "--list", bootstrap=minibroker).stdout.split()


def test_kafka_get_offsets_and_delete_records(minibroker, tmp_path):
    topic = name("offsets")
    tool("kafka-topics", "--create", "--topic", topic, "--partitions", "2", bootstrap=minibroker)
    tool("kafka-console-producer", "--topic", topic, "--producer-property", "partitioner.class="
         "org.apache.kafka.clients.producer.RoundRobinPartitioner", bootstrap=minibroker,
         input="".join(f"m{i}\n" for i in range(10)))
    latest = tool("kafka-get-offsets", "--topic", topic, bootstrap=minibroker).stdout.split()
    assert sorted(latest) == [f"{topic}:0:5", f"{topic}:1:5"]
    plan = tmp_path / "delete.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 1, "offset": 3}]}))
    deleted = tool("kafka-delete-records", "--offset-json-file", str(plan), bootstrap=minibroker).stdout
    assert f"partition: {topic}-1\tlow_watermark: 3" in deleted
    earliest = tool("kafka-get-offsets", "--topic", topic, "--time", "-2", bootstrap=minibroker).stdout.split()
    assert sorted(earliest) == [f"{topic}:0:0", f"{topic}:1:3"]
    one = tool("kafka-get-offsets", "--topic-partitions", f"{topic}:1", "--time", "earliest",
               bootstrap=minibroker).stdout.split()
    assert one == [f"{topic}:1:3"]


def test_kafka_acls(minibroker):
    topic, group = name("secured"), name("secured")
    added = tool("kafka-acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation",
                 "Describe", "--topic", topic, "--group", group, bootstrap=minibroker).stdout
    assert f"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)`" \
        in added
    listed = tool("kafka-acls", "--list", "--topic", topic, bootstrap=minibroker).stdout
    assert f"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)`:" \
        in listed
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in listed
    assert "(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)" in listed
    tool("kafka-acls", "--add", "--deny-principal", "User:mallory", "--operation", "Write", "--topic", "secret-",
         "--resource-pattern-type", "prefixed", bootstrap=minibroker)
    prefixed = tool("kafka-acls", "--list", "--topic", "secret-", "--resource-pattern-type", "prefixed",
                    bootstrap=minibroker).stdout
    assert "(principal=User:mallory, host=*, operation=WRITE, permissionType=DENY)" in prefixed

    tool("kafka-acls", "--remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic", topic,
         "--force", bootstrap=minibroker)
    listed = tool("kafka-acls", "--list", "--topic", topic, bootstrap=minibroker).stdout
    assert "operation=READ" not in listed and "operation=DESCRIBE" in listed
    everything = tool("kafka-acls", "--list", bootstrap=minibroker).stdout
    assert f"name={group}, patternType=LITERAL" in everything and "User:mallory" in everything


@pytest.mark.minibroker(transaction_partition_verification_enable=False)
def test_kafka_transactions(minibroker):
    """list, describe and describe-producers on an open transaction; find-hanging and abort on a hanging one
    (records of a producer with no transactional id: what KIP-664's tools clean up, possible when the
    broker does not verify transactional batches, as here)."""
    from kafka import KafkaProducer

    from protocol.records import Record, build_batch

    topic, txn_id = name("txn"), name("txn")
    tool("kafka-topics", "--create", "--topic", topic, "--partitions", "2", bootstrap=minibroker)
    producer = KafkaProducer(bootstrap_servers=minibroker, transactional_id=txn_id)
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(3):
        producer.send(topic, value=b"open-%d" % i, partition=0)
    producer.flush()
    try:
        listed = rows(tool("kafka-transactions", "list", bootstrap=minibroker).stdout)
        assert listed[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
        mine = [r for r in listed if r[0] == txn_id]
        assert len(mine) == 1 and mine[0][1] == "0" and mine[0][3] == "Ongoing"
        pid = mine[0][2]
        described = rows(tool("kafka-transactions", "describe", "--transactional-id", txn_id,
                              bootstrap=minibroker).stdout)
        assert described[1][:6] == ["0", txn_id, pid, "0", "Ongoing", "60000"]
        assert described[1][-1] == f"{topic}-0"
        producers = rows(tool("kafka-transactions", "describe-producers", "--topic", topic, "--partition", "0",
                              bootstrap=minibroker).stdout)
        assert producers[0][-1] == "CurrentTransactionStartOffset"
        assert producers[1][:4] == [pid, "0", "-1", "2"] and producers[1][-1] == "0"
        # An open transaction its coordinator knows is not hanging.
        assert len(rows(tool("kafka-transactions", "find-hanging", "--broker-id", "0",
                             "--max-transaction-timeout", "0", bootstrap=minibroker).stdout)) == 1
        producer.commit_transaction()
    finally:
        producer.close()

    with WireClient(minibroker) as client:
        init = client.init_producer_id()  # an idempotent producer's id: no transactional id maps to it
        batch = build_batch([Record(0, 0, None, b"stuck")], producer_id=init.producer_id,
                            producer_epoch=init.producer_epoch, base_sequence=0, is_transactional=True)
        answer = client.request(0, 9, {"transactional_id": "ghost", "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 1, "records": batch}]}]})
        assert answer.responses[0].partition_responses[0].error_code == 0
    hanging = rows(tool("kafka-transactions", "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0",
                        bootstrap=minibroker).stdout)
    assert hanging[0][:6] == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset"]
    assert [r[:6] for r in hanging[1:]] == [[topic, "1", str(init.producer_id), "0", "-1", "0"]]
    tool("kafka-transactions", "abort", "--topic", topic, "--partition", "1", "--start-offset", "0",
         bootstrap=minibroker)
    assert len(rows(tool("kafka-transactions", "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0",
                         bootstrap=minibroker).stdout)) == 1
    after = rows(tool("kafka-transactions", "describe-producers", "--topic", topic, "--partition", "1",
                      bootstrap=minibroker).stdout)
    assert after[1][0] == str(init.producer_id) and after[1][-1] == "None"
    # The aborted record and its marker: a read_committed consumer reads past them, and finds nothing.
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=minibroker, isolation_level="read_committed", group_id=None)
    try:
        tp = TopicPartition(topic, 1)
        assert consumer.end_offsets([tp])[tp] == 2
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        assert consumer.poll(timeout_ms=1000) == {} and consumer.position(tp) == 2
    finally:
        consumer.close()


def test_kafka_leader_election_and_reassign_partitions(minibroker_server, tmp_path):
    bootstrap = minibroker_server.bootstrap
    topic = name("placed")
    tool("kafka-topics", "--create", "--topic", topic, "--partitions", "2", bootstrap=bootstrap)
    elected = tool("kafka-leader-election", "--election-type", "preferred", "--topic", topic, "--partition", "0",
                   bootstrap=bootstrap).stdout
    assert elected.strip() == f"Valid replica already elected for partitions {topic}-0"
    # Asked for every partition, Kafka answers only those it elected or failed to: here none.
    everything = tool("kafka-leader-election", "--election-type", "preferred", "--all-topic-partitions",
                      bootstrap=bootstrap)
    assert everything.stdout.strip() == "" and everything.stderr.strip() == ""

    moves = tmp_path / "topics.json"
    moves.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    generated = tool("kafka-reassign-partitions", "--topics-to-move-json-file", str(moves), "--broker-list", "0",
                     "--generate", bootstrap=bootstrap).stdout.splitlines()
    current = json.loads(generated[generated.index("Current partition replica assignment") + 1])
    data_dir = str(minibroker_server.data_dir)
    assert current["partitions"] == [{"topic": topic, "partition": p, "replicas": [0], "log_dirs": [data_dir]}
                                     for p in range(2)]
    proposed = json.loads(generated[generated.index("Proposed partition reassignment configuration") + 1])
    assert [(p["partition"], p["replicas"]) for p in proposed["partitions"]] == [(0, [0]), (1, [0])]

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [0], "log_dirs": [data_dir]},
        {"topic": topic, "partition": 1, "replicas": [0], "log_dirs": ["any"]}]}))
    executed = tool("kafka-reassign-partitions", "--reassignment-json-file", str(plan), "--execute",
                    bootstrap=bootstrap).stdout
    assert f"Successfully started partition reassignments for {topic}-0,{topic}-1" in executed
    verified = tool("kafka-reassign-partitions", "--reassignment-json-file", str(plan), "--verify",
                    bootstrap=bootstrap).stdout
    assert f"Reassignment of partition {topic}-0 is completed." in verified
    assert f"Reassignment of partition {topic}-1 is completed." in verified
    assert "No partition reassignments found." in tool("kafka-reassign-partitions", "--list",
                                                       bootstrap=bootstrap).stdout


def test_kafka_features_of_a_zookeeper_mode_profile(minibroker):
    # The default profile is Kafka 3.9 in ZooKeeper mode, whose brokers report no KIP-584 features.
    assert "Feature:" not in tool("kafka-features", "describe", bootstrap=minibroker).stdout


@pytest.mark.minibroker(kafka_version="4.1")
def test_kafka_features_of_a_kraft_profile(minibroker):
    features = tool("kafka-features", "describe", bootstrap=minibroker).stdout
    assert re.search(r"Feature: metadata\.version\s+SupportedMinVersion: 3\.3-IV3\s+SupportedMaxVersion: 4\.1-IV1\s+"
                     r"FinalizedVersionLevel: 4\.1-IV1\s+Epoch: 1", features), features
    assert re.search(r"Feature: kraft\.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1", features)
    assert re.search(r"Feature: group\.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+"
                     r"FinalizedVersionLevel: 1", features), features
    assert re.search(r"Feature: transaction\.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 2\s+"
                     r"FinalizedVersionLevel: 2", features), features


def test_kafka_broker_api_versions(minibroker):
    from broker.server.dispatch import version_profile

    listed = tool("kafka-broker-api-versions", bootstrap=minibroker).stdout
    assert listed.startswith(f"{minibroker} (id: 0 rack: null")
    # "Name(key): lo to hi [usable: v]" (or "Name(key): v [...]"; "[unusable: node too new]" for the ZooKeeper
    # mode's inter-broker APIs, which 4.x clients no longer speak) for each API the broker advertises,
    # UNSUPPORTED for the others: exactly the profile's table.
    ranges = {int(key): (int(lo), int(hi or lo)) for key, lo, hi in
              re.findall(r"\t\w+\((\d+)\): (\d+)(?: to (\d+))? \[(?:usable: \d+|unusable: [^]]+)\]", listed)}
    assert ranges == version_profile().advertised
    assert "UNKNOWN" not in listed


def test_verifiable_producer_and_consumer(minibroker):
    topic, group = name("verifiable"), name("verifiable")
    tool("kafka-topics", "--create", "--topic", topic, "--partitions", "3", bootstrap=minibroker)
    produced = [json.loads(line) for line in tool("kafka-verifiable-producer", "--topic", topic, "--max-messages",
                                                  "600", "--acks", "-1", "--repeating-keys", "30",
                                                  bootstrap=minibroker).stdout.splitlines()]
    acked = {(e["partition"], e["offset"]): e["value"] for e in produced if e["name"] == "producer_send_success"}
    assert [e for e in produced if e["name"] == "producer_send_error"] == []
    assert produced[-1]["name"] == "tool_data" and (produced[-1]["sent"], produced[-1]["acked"]) == (600, 600)
    assert sorted(acked.values(), key=int) == [str(i) for i in range(600)]
    assert {p for p, _ in acked} == {0, 1, 2}

    events = [json.loads(line) for line in tool("kafka-verifiable-consumer", "--topic", topic, "--group-id", group,
                                                "--max-messages", "600", "--verbose", "--reset-policy", "earliest",
                                                bootstrap=minibroker).stdout.splitlines()]
    read = [(e["partition"], e["offset"], e["value"]) for e in events if e["name"] == "record_data"]
    assert sorted(read) == sorted((p, o, v) for (p, o), v in acked.items())  # each acknowledged one, once
    assert sum(e["count"] for e in events if e["name"] == "records_consumed") == 600
    assert {p["partition"] for e in events if e["name"] == "partitions_assigned" for p in e["partitions"]} == {0, 1, 2}
    commits = [e for e in events if e["name"] == "offsets_committed"]
    assert commits and all(e["success"] for e in commits)
    last = {}
    for e in commits:
        last.update({o["partition"]: o["offset"] for o in e["offsets"]})
    ends = {}
    for p, o in acked:
        ends[p] = max(ends.get(p, 0), o + 1)
    assert last == ends


@pytest.mark.minibroker(kafka_version="3.9")
def test_kafka_3_9_tools(minibroker):
    """The 3.9 tools, some still in the Scala core (kafka.admin.ConfigCommand, AclCommand,
    kafka.tools.ConsoleProducer), under the 3.9 profile."""
    topic = name("classic")
    old = {"release": "3.9", "bootstrap": minibroker}
    assert kafka_tools.main_class("kafka-configs", kafka_tools.classpath("3.9")) == "kafka.admin.ConfigCommand"
    tool("kafka-topics", "--create", "--topic", topic, "--partitions", "2", **old)
    tool("kafka-configs", "--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config",
         "retention.ms=1000", **old)
    assert "retention.ms=1000 sensitive=false" in tool("kafka-configs", "--describe", "--entity-type", "topics",
                                                        "--entity-name", topic, **old).stdout
    tool("kafka-acls", "--add", "--allow-principal", "User:bob", "--operation", "Write", "--topic", "bobs-",
         "--resource-pattern-type", "prefixed", **old)
    assert "(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW)" in tool(
        "kafka-acls", "--list", "--topic", "bobs-", "--resource-pattern-type", "prefixed", **old).stdout
    tool("kafka-console-producer", "--topic", topic, "--property", "parse.key=true", "--property", "key.separator=:",
         input="a:1\nb:2\n", **old)
    consumed = tool("kafka-console-consumer", "--topic", topic, "--from-beginning", "--max-messages", "2",
                    "--property", "print.key=true", "--timeout-ms", "30000", **old).stdout
    assert sorted(consumed.splitlines()) == ["a\t1", "b\t2"]


def test_kafka_tool_wrapper(minibroker):
    """scripts/kafka-tool: what a user types."""
    wrapper = str(REPO / "scripts" / "kafka-tool")
    listing = subprocess.run([sys.executable, wrapper, "--help"], capture_output=True, text=True, timeout=60)
    assert listing.returncode == 0 and "kafka-console-producer" in listing.stderr
    unknown = subprocess.run([sys.executable, wrapper, "kafka-nonsense"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "no Kafka tool is called 'kafka-nonsense'" in unknown.stderr
    version = subprocess.run([sys.executable, wrapper, "kafka-topics.sh", "--version"], capture_output=True,
                             text=True, timeout=120)
    assert version.stdout.strip() == kafka_jars.release_version(kafka_tools.DEFAULT_RELEASE)
    listed = subprocess.run([sys.executable, wrapper, "kafka-topics", "--bootstrap-server", minibroker, "--list"],
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr


def test_kafka_reassign_partitions_and_leader_election_in_a_cluster(minibroker_cluster, tmp_path):
    """Three brokers: replicas reordered and one removed with kafka-reassign-partitions, then the preferred
    leader (the first replica) elected with kafka-leader-election."""
    bootstrap = minibroker_cluster.bootstrap
    topic = name("moved")
    tool("kafka-topics", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "3",
         bootstrap=bootstrap)

    def assignment() -> list[tuple[str, str, str]]:
        described = tool("kafka-topics", "--describe", "--topic", topic, bootstrap=bootstrap).stdout
        return re.findall(r"Partition: \d+\tLeader: (\d+)\tReplicas: ([\d,]+)\tIsr: ([\d,]+)", described)

    before = assignment()
    assert [len(replicas.split(",")) for _, replicas, _ in before] == [3, 3]
    assert [leader for leader, replicas, _ in before] == [replicas.split(",")[0] for _, replicas, _ in before]
    first = before[0][1].split(",")
    reordered = first[1:] + first[:1]  # the old preferred leader last
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [int(b) for b in reordered]},
        {"topic": topic, "partition": 1, "replicas": [int(b) for b in before[1][1].split(",")[:2]]}]}))
    executed = tool("kafka-reassign-partitions", "--reassignment-json-file", str(plan), "--execute",
                    bootstrap=bootstrap).stdout
    assert f"Successfully started partition reassignments for {topic}-0,{topic}-1" in executed

    def completed() -> bool:
        verified = tool("kafka-reassign-partitions", "--reassignment-json-file", str(plan), "--verify",
                        bootstrap=bootstrap).stdout
        return all(f"Reassignment of partition {topic}-{p} is completed." in verified for p in (0, 1))

    minibroker_cluster.wait_until(lambda: completed() or None, what="the reassignment to complete")
    after = assignment()
    assert after[0][1] == ",".join(reordered) and after[0][0] == first[0]  # moved, leader not yet
    assert after[1][1] == ",".join(before[1][1].split(",")[:2]) and len(after[1][2].split(",")) == 2

    elected = tool("kafka-leader-election", "--election-type", "preferred", "--all-topic-partitions",
                   bootstrap=bootstrap).stdout
    assert f"Successfully completed leader election (PREFERRED) for partitions {topic}-0" in elected
    assert assignment()[0][0] == reordered[0]
