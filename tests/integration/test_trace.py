"""The decoded protocol trace: JSON lines per request and response, payloads summarised, and the pytest
plugin attaching it to a failing test's report."""

from __future__ import annotations

import json

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from broker.testkit import BrokerThread

pytest_plugins = ["pytester"]


def test_trace_of_real_clients(tmp_path, topic_name):
    trace = tmp_path / "trace.jsonl"
    with BrokerThread(tmp_path / "data", trace_file=str(trace)) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, client_id="tracer-test")
        producer.send(topic_name, b"SECRET-PAYLOAD" * 10, partition=0).get(timeout=30)
        producer.close()
        broker.inject_error("FETCH", "NOT_LEADER_OR_FOLLOWER", topic=topic_name)
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                                 consumer_timeout_ms=10000)
        consumer.assign([TopicPartition(topic_name, 0)])
        consumer.seek_to_beginning()
        assert next(consumer).value.startswith(b"SECRET")
        consumer.close()
        broker.flush_trace()
        text = trace.read_text()
    assert "SECRET" not in text  # payloads are summarised, not dumped
    events = [json.loads(line) for line in text.splitlines()]
    produce = [e for e in events if e["api"] == "PRODUCE"]
    request = next(e for e in produce if e["dir"] == "request")
    assert request["client_id"] == "tracer-test" and request["software"].startswith("kafka-python/")
    records = request["fields"]["topic_data"][0]["partition_data"][0]["records"]
    assert records["batches"] == 1 and records["records"] == 1 and records["bytes"] > 140
    response = next(e for e in produce if e["dir"] == "response")
    assert response["correlation_id"] == request["correlation_id"] and response["errors"] == []
    assert response["latency_ms"] >= 0
    fetch_errors = [e for e in events if e["api"] == "FETCH" and e["dir"] == "response" and e["errors"]]
    assert fetch_errors and fetch_errors[0]["errors"] == ["NOT_LEADER_OR_FOLLOWER"]
    assert {e["dir"] for e in events} == {"request", "response"}


def test_failing_test_report_carries_the_trace(pytester):
    pytester.makepyfile("""
        from kafka import KafkaProducer

        def test_fails(minibroker):
            producer = KafkaProducer(bootstrap_servers=minibroker)
            producer.send("traced-topic", b"v").get(timeout=30)
            producer.close()
            assert False, "deliberately"

        def test_passes(minibroker):
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    output = result.stdout.str()
    assert "minibroker protocol trace" in output
    assert '"api": "PRODUCE"' in output and "traced-topic" in output
