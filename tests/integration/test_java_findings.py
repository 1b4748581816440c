"""What Apache Kafka's Java client, Streams and tools found in the broker (tests/java/), each kept as a test
with exact requests over a raw socket."""

from __future__ import annotations

import uuid
from typing import Any

from tests.kafka_wire import WireClient

UNKNOWN_TOPIC_ID = 100


def test_metadata_by_topic_id_beside_an_empty_name(minibroker, topic_name):
    """The Java AdminClient (describeTopics and deleteTopics by id) names a topic by id with the name "" (the
    field's default), not null. Kafka answers a request by id whenever it carries a non-zero id; minibroker
    looked the empty name up and answered INVALID_TOPIC_EXCEPTION with a zero id, which the client refuses
    ("Use errors() when managing topic using topic name")."""
    with WireClient(minibroker) as client:
        client.create_topic(topic_name)
        topic_id = client.request(3, 12, {"topics": [{"name": topic_name, "topic_id": None}],
                                          "allow_auto_topic_creation": False}).topics[0].topic_id
        unknown = uuid.uuid4()
        response = client.request(3, 12, {"topics": [{"topic_id": topic_id, "name": ""},
                                                     {"topic_id": unknown, "name": ""}],
                                          "allow_auto_topic_creation": False})
        assert [(t.name, t.topic_id, t.error_code) for t in response.topics] == [
            (topic_name, topic_id, 0), (None, unknown, UNKNOWN_TOPIC_ID)]
        assert len(response.topics[0].partitions) == 1


def test_transactional_produce_right_after_a_restart_waits_for_the_coordinator(minibroker_server, topic_name):
    """Kafka Streams, its broker killed and restarted, sent the first batch of an open transaction to a
    partition it had added before the restart as the first request after it: the KIP-890 check asked the
    transaction coordinator before it had replayed
    `__transaction_state` (it starts with the first request that needs it) and answered INVALID_TXN_STATE,
    which is fatal to the producer (the stream thread died). The check now waits for the coordinator's load,
    as the transaction APIs do."""
    from protocol.records import Record, build_batch

    txn_id = "restart-" + topic_name

    def produce(client: WireClient, pid: int, epoch: int, sequence: int) -> int:
        batch = build_batch([Record(0, 0, None, b"v%d" % sequence)], producer_id=pid, producer_epoch=epoch,
                            base_sequence=sequence, is_transactional=True)
        response = client.request(0, 9, {"transactional_id": txn_id, "acks": -1, "timeout_ms": 30000,
                                         "topic_data": [{"name": topic_name, "partition_data": [
                                             {"index": 0, "records": batch}]}]})
        return response.responses[0].partition_responses[0].error_code

    with WireClient(minibroker_server.bootstrap) as client:
        client.create_topic(topic_name)
        init = client.request(22, 4, {"transactional_id": txn_id, "transaction_timeout_ms": 60000,
                                      "producer_id": -1, "producer_epoch": -1})
        pid, epoch = init.producer_id, init.producer_epoch
        added = client.request(24, 3, {"v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": pid,
                                       "v3_and_below_producer_epoch": epoch,
                                       "v3_and_below_topics": [{"name": topic_name, "partitions": [0]}]})
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    minibroker_server.restart()
    with WireClient(minibroker_server.bootstrap) as client:
        assert produce(client, pid, epoch, 0) == 0  # the first request: the coordinator has not loaded yet
        ended = client.request(26, 3, {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch,
                                       "committed": True})
        assert ended.error_code == 0
        assert client.list_latest(topic_name) == 2  # the record and the commit marker


def test_broker_loggers_are_described_and_set(minibroker):
    """`kafka-configs --entity-type broker-loggers --entity-name 0` (Kafka's BROKER_LOGGER config resource)
    was answered INVALID_REQUEST "Unsupported resource type 8". Every logger of the broker is described with
    its level; IncrementalAlterConfigs sets or unsets levels at run time, with Kafka's checks."""
    import logging

    name = "broker.services.transactions"
    logging.getLogger(name)  # the broker's module may not have been imported by this process yet

    def describe(client: WireClient, keys: list[str] | None = None, resource: str = "0") -> Any:
        return client.request(32, 4, {"resources": [{"resource_type": 8, "resource_name": resource,
                                                     "configuration_keys": keys}],
                                      "include_synonyms": True, "include_documentation": False}).results[0]

    def alter(client: WireClient, *ops: tuple[int, str, str | None], resource: str = "0") -> tuple[int, str]:
        answer = client.request(44, 1, {"resources": [{"resource_type": 8, "resource_name": resource, "configs": [
            {"name": n, "config_operation": op, "value": v} for op, n, v in ops]}], "validate_only": False})
        return answer.responses[0].error_code, answer.responses[0].error_message

    with WireClient(minibroker) as client:
        described = describe(client)
        assert described.error_code == 0
        levels = {c.name: (c.value, c.config_source, c.read_only) for c in described.configs}
        assert levels["root"][1:] == (6, False)  # DYNAMIC_BROKER_LOGGER_CONFIG
        assert name in levels and levels["root"][0] in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
        try:
            assert alter(client, (0, name, "TRACE")) == (0, None)
            assert [(c.name, c.value) for c in describe(client, [name]).configs] == [(name, "TRACE")]
            assert logging.getLogger(name).getEffectiveLevel() == 5
        finally:
            assert alter(client, (1, name, None)) == (0, None)  # unset: the parent's level again
        assert logging.getLogger(name).level == logging.NOTSET
        assert alter(client, (0, name, "LOUD"))[0] == 40  # INVALID_CONFIG
        assert alter(client, (0, "no.such.logger", "INFO")) == (40, "Logger no.such.logger does not exist!")
        assert alter(client, (1, "root", None))[0] == 42  # INVALID_REQUEST: the root logger keeps a level
        assert alter(client, (2, name, "INFO"))[0] == 42  # APPEND
        assert alter(client, (0, name, "INFO"), resource="7")[0] == 42
        assert describe(client, resource="").error_code == 42
