"""What Apache Kafka's Java client, Streams and tools found in the broker (tests/java/), each kept as a test
with exact requests over a raw socket."""

from __future__ import annotations

import uuid

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
