"""The schema registry (--schema-registry) with real clients: confluent-kafka's SchemaRegistryClient and its
Avro, JSON Schema and Protobuf serializers and deserializers, producing and consuming through the broker; the
compatibility levels refusing incompatible schemas (409); references; soft and hard deletes; a restart; the
`_schemas` topic in Confluent's record format; bad requests answered with Confluent's error bodies."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient, SchemaRegistryError
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from broker.testkit import BrokerThread

DOC = Path(__file__).resolve().parents[2] / "docs" / "schema-registry.md"

USER_V1 = {"type": "record", "name": "User", "namespace": "shop",
           "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}


def _avro(fields: list[dict]) -> str:
    return json.dumps({**USER_V1, "fields": fields})


NAME = {"name": "name", "type": "string"}
AGE = {"name": "age", "type": "int"}
EMAIL_REQUIRED = {"name": "email", "type": "string"}
EMAIL_OPTIONAL = {"name": "email", "type": "string", "default": ""}


@pytest.fixture
def registry(minibroker_server):
    return SchemaRegistryClient({"url": minibroker_server.schema_registry_url})


def _http(method: str, url: str, body: bytes | None = None,
          content_type: str = "application/vnd.schemaregistry.v1+json") -> tuple[int, str, object]:
    request = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers["Content-Type"], json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], json.loads(exc.read() or b"null")


def _over_the_bound(base: str) -> bytes:
    """A registration announcing a body over the bound (8 MiB): answered 413 before the body is read."""
    import socket

    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"POST /subjects/x/versions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 9000000\r\n\r\n{")
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < int(
                answer.lower().partition(b"content-length: ")[2].split(b"\r\n")[0] or 0):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    assert b'"error_code":413' in answer
    return answer


def _consume(bootstrap: str, topic: str, count: int, timeout: float = 60) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    found = []
    try:
        BrokerThread.wait_until(lambda: _poll(consumer, found, count), timeout, f"{count} records of {topic}")
    finally:
        consumer.close()
    return found


def _poll(consumer: Consumer, found: list, count: int) -> bool | None:
    message = consumer.poll(0.5)
    if message is not None and not message.error():
        found.append(message)
    return True if len(found) >= count else None


@pytest.mark.minibroker(schema_registry=True)
def test_avro_serializer_registers_produces_and_consumes(minibroker_server, registry, topic_name):
    """The issue's "done when": the Avro serializer registers its schema, the record goes through the broker
    and is deserialized; `_schemas` holds the registration in Confluent's format."""
    ctx = SerializationContext(topic_name, MessageField.VALUE)
    serializer = AvroSerializer(registry, json.dumps(USER_V1))
    producer = Producer({"bootstrap.servers": minibroker_server.bootstrap})
    producer.produce(topic_name, serializer({"name": "ann", "age": 31}, ctx))
    assert producer.flush(30) == 0
    [message] = _consume(minibroker_server.bootstrap, topic_name, 1)
    assert message.value()[0] == 0 and int.from_bytes(message.value()[1:5], "big") == 1  # Confluent's framing, id 1
    assert AvroDeserializer(registry)(message.value(), ctx) == {"name": "ann", "age": 31}
    assert registry.get_subjects() == [f"{topic_name}-value"]
    latest = registry.get_latest_version(f"{topic_name}-value")
    assert (latest.schema_id, latest.version) == (1, 1)
    assert json.loads(latest.schema.schema_str) == USER_V1
    records = _consume(minibroker_server.bootstrap, "_schemas", 2)
    keys = [r.key() for r in records]
    assert keys[0] == b'{"keytype":"NOOP","magic":0}'  # the leader's read barrier
    assert keys[1] == b'{"keytype":"SCHEMA","subject":"' + topic_name.encode() + b'-value","version":1,"magic":1}'
    value = json.loads(records[1].value())
    assert list(value) == ["subject", "version", "id", "schema", "deleted"]
    assert (value["subject"], value["version"], value["id"], value["deleted"]) == (f"{topic_name}-value", 1, 1, False)
    assert minibroker_server.topics(include_internal=True)["_schemas"]["partitions"][0]["log_end_offset"] == 2


# Each level: a change it accepts, then one it refuses (409), from USER_V1 = (name, age).
LEVELS = {
    "NONE": ([NAME], [{"name": "name", "type": "int"}]),
    "BACKWARD": ([NAME, AGE, EMAIL_OPTIONAL], [NAME, AGE, EMAIL_OPTIONAL, EMAIL_REQUIRED | {"name": "phone"}]),
    "FORWARD": ([NAME, AGE, EMAIL_REQUIRED], [NAME]),
    "FULL": ([NAME, AGE, EMAIL_OPTIONAL], [NAME, AGE, EMAIL_OPTIONAL, EMAIL_REQUIRED | {"name": "phone"}]),
}


@pytest.mark.minibroker(schema_registry=True)
@pytest.mark.parametrize("level", ["NONE", "BACKWARD", "FORWARD", "FULL"])
def test_each_level_refuses_an_incompatible_schema(registry, level):
    subject = f"users-{level.lower()}"
    registry.set_compatibility(subject, level)
    assert registry.get_compatibility(subject) == level
    first = registry.register_schema(subject, Schema(json.dumps(USER_V1), "AVRO"))
    accepted, refused = LEVELS[level]
    second = registry.register_schema(subject, Schema(_avro(accepted), "AVRO"))
    assert second == first + 1
    if level == "NONE":  # nothing is refused: even a type change is a new version
        assert registry.register_schema(subject, Schema(_avro(refused), "AVRO")) == second + 1
        return
    assert not registry.test_compatibility(subject, Schema(_avro(refused), "AVRO"))
    with pytest.raises(SchemaRegistryError) as refusal:
        registry.register_schema(subject, Schema(_avro(refused), "AVRO"))
    assert refusal.value.http_status_code == 409 and refusal.value.error_code == 409
    assert [v for v in registry.get_versions(subject)] == [1, 2]


@pytest.mark.minibroker(schema_registry=True)
@pytest.mark.parametrize("level", ["BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE"])
def test_transitive_levels_check_every_earlier_version(registry, level):
    """A chain each step of which is compatible with the one before, but not with the first: the plain level
    accepts its last step, the transitive one refuses it."""
    age_default = AGE | {"default": 0}
    chains = {  # v1, v2, v3
        "BACKWARD_TRANSITIVE": ([NAME, AGE], [NAME], [NAME, {"name": "age", "type": "string", "default": "x"}]),
        "FORWARD_TRANSITIVE": ([NAME, AGE], [NAME, age_default], [NAME]),
        "FULL_TRANSITIVE": ([NAME, age_default], [NAME], [NAME, {"name": "age", "type": "string", "default": ""}]),
    }
    v1, *chain = (_avro(fields) for fields in chains[level])
    plain = level.removesuffix("_TRANSITIVE")
    for subject, chosen in ((f"plain-{level}", plain), (f"transitive-{level}", level)):
        registry.set_compatibility(subject, chosen)
        registry.register_schema(subject, Schema(v1, "AVRO"))
        registry.register_schema(subject, Schema(chain[0], "AVRO"))
        if chosen == plain:
            registry.register_schema(subject, Schema(chain[1], "AVRO"))
            assert registry.get_versions(subject) == [1, 2, 3]
        else:
            with pytest.raises(SchemaRegistryError) as refusal:
                registry.register_schema(subject, Schema(chain[1], "AVRO"))
            assert refusal.value.http_status_code == 409


@pytest.mark.minibroker(schema_registry=True)
def test_identical_schemas_share_one_id_across_subjects(registry):
    first = registry.register_schema("a-value", Schema(json.dumps(USER_V1), "AVRO"))
    reformatted = json.dumps(USER_V1, indent=2)  # the same schema, written differently
    assert registry.register_schema("b-value", Schema(reformatted, "AVRO")) == first
    assert registry.register_schema("a-value", Schema(reformatted, "AVRO")) == first  # no new version
    assert registry.get_versions("a-value") == [1]
    assert sorted(registry.get_subjects_by_schema_id(first)) == ["a-value", "b-value"]
    found = registry.lookup_schema("b-value", Schema(reformatted, "AVRO"))
    assert (found.schema_id, found.version) == (first, 1)
    other = registry.register_schema("c-value", Schema(_avro([NAME]), "AVRO"))
    assert other == first + 1


@pytest.mark.minibroker(schema_registry=True)
def test_json_schema_serde_and_an_incompatible_change(minibroker_server, registry, topic_name):
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
              "required": ["name"]}
    ctx = SerializationContext(topic_name, MessageField.VALUE)
    serializer = JSONSerializer(json.dumps(schema), registry)
    producer = Producer({"bootstrap.servers": minibroker_server.bootstrap})
    producer.produce(topic_name, serializer({"name": "bo", "age": 7}, ctx))
    assert producer.flush(30) == 0
    [message] = _consume(minibroker_server.bootstrap, topic_name, 1)
    assert JSONDeserializer(json.dumps(schema), schema_registry_client=registry)(message.value(), ctx) == \
        {"name": "bo", "age": 7}
    subject = f"{topic_name}-value"
    assert registry.get_latest_version(subject).schema.schema_type == "JSON"
    widened = {**schema, "properties": {**schema["properties"], "age": {"type": ["integer", "null"]}}}
    assert registry.register_schema(subject, Schema(json.dumps(widened), "JSON")) == 2
    changed = {**schema, "properties": {**schema["properties"], "age": {"type": "string"}}}
    with pytest.raises(SchemaRegistryError) as refusal:
        registry.register_schema(subject, Schema(json.dumps(changed), "JSON"))
    assert refusal.value.http_status_code == 409
    with pytest.raises(SchemaRegistryError) as invalid:
        registry.register_schema(subject, Schema('{"type": 12}', "JSON"))
    assert (invalid.value.http_status_code, invalid.value.error_code) == (422, 42201)


def _order_class(fields: list[tuple[str, int, int]], name: str):
    """A Protobuf message class made at run time (as protoc's generated code would define it)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    fd = descriptor_pb2.FileDescriptorProto(name=f"{name}.proto", package="shop", syntax="proto3")
    message = fd.message_type.add(name="Order")
    for field, number, kind in fields:
        message.field.add(name=field, number=number, type=kind, label=1)
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


@pytest.mark.minibroker(schema_registry=True)
def test_protobuf_serde_and_an_incompatible_change(minibroker_server, registry, topic_name):
    string, int32, double = 9, 5, 1
    order = _order_class([("id", 1, string), ("qty", 2, int32)], "orders_v1")
    ctx = SerializationContext(topic_name, MessageField.VALUE)
    serializer = ProtobufSerializer(order, registry, {"use.deprecated.format": False})
    producer = Producer({"bootstrap.servers": minibroker_server.bootstrap})
    producer.produce(topic_name, serializer(order(id="o-1", qty=3), ctx))
    assert producer.flush(30) == 0
    [message] = _consume(minibroker_server.bootstrap, topic_name, 1)
    decoded = ProtobufDeserializer(order, {"use.deprecated.format": False}, registry)(message.value(), ctx)
    assert (decoded.id, decoded.qty) == ("o-1", 3)
    subject = f"{topic_name}-value"
    stored = registry.get_latest_version(subject).schema
    assert stored.schema_type == "PROTOBUF" and "message Order" in stored.schema_str  # stored as .proto text
    added = _order_class([("id", 1, string), ("qty", 2, int32), ("note", 3, string)], "orders_v2")
    assert ProtobufSerializer(added, registry, {"use.deprecated.format": False})(added(id="o-2"), ctx)
    assert registry.get_versions(subject) == [1, 2]
    retyped = _order_class([("id", 1, string), ("qty", 2, double)], "orders_v3")
    with pytest.raises(SchemaRegistryError) as refusal:
        ProtobufSerializer(retyped, registry, {"use.deprecated.format": False})(retyped(id="o-3"), ctx)
    assert refusal.value.http_status_code == 409


@pytest.mark.minibroker(schema_registry=True)
def test_references(registry):
    address = {"type": "record", "name": "Address", "namespace": "shop",
               "fields": [{"name": "city", "type": "string"}]}
    address_id = registry.register_schema("address", Schema(json.dumps(address), "AVRO"))
    customer = {"type": "record", "name": "Customer", "namespace": "shop",
                "fields": [{"name": "name", "type": "string"}, {"name": "home", "type": "shop.Address"}]}
    reference = SchemaReference("shop.Address", "address", 1)
    customer_id = registry.register_schema("customer-value", Schema(json.dumps(customer), "AVRO", [reference]))
    assert customer_id != address_id
    fetched = registry.get_schema(customer_id)
    assert [(r.name, r.subject, r.version) for r in fetched.references] == [("shop.Address", "address", 1)]
    assert registry.get_referenced_by("address", 1) == [customer_id]
    ctx = SerializationContext("customer", MessageField.VALUE)
    serializer = AvroSerializer(registry, Schema(json.dumps(customer), "AVRO", [reference]),
                                conf={"auto.register.schemas": False, "use.latest.version": True})
    data = serializer({"name": "cy", "home": {"city": "Oslo"}}, ctx)
    assert AvroDeserializer(registry)(data, ctx) == {"name": "cy", "home": {"city": "Oslo"}}
    with pytest.raises(SchemaRegistryError) as referenced:
        registry.delete_version("address", 1)
    assert (referenced.value.http_status_code, referenced.value.error_code) == (422, 42206)
    with pytest.raises(SchemaRegistryError) as missing:
        registry.register_schema("broken", Schema(json.dumps(customer), "AVRO", [SchemaReference("x", "nope", 1)]))
    assert missing.value.error_code == 42201


@pytest.mark.minibroker(schema_registry=True)
def test_soft_and_hard_deletes(minibroker_server, registry):
    subject, base = "events-value", minibroker_server.schema_registry_url
    registry.set_compatibility(subject, "NONE")
    ids = [registry.register_schema(subject, Schema(_avro(fields), "AVRO"))
           for fields in ([NAME], [AGE], [NAME, AGE])]
    assert registry.delete_version(subject, 2) == 2  # soft
    assert registry.get_versions(subject) == [1, 3]
    with pytest.raises(SchemaRegistryError) as gone:
        registry.get_version(subject, 2)
    assert gone.value.error_code == 40402
    assert registry.get_schema(ids[1]).schema_str  # a soft-deleted version's schema is still found by id
    with pytest.raises(SchemaRegistryError) as not_soft:
        registry.delete_version(subject, 3, permanent=True)
    assert not_soft.value.error_code == 40407
    assert registry.delete_version(subject, 2, permanent=True) == 2
    assert _http("GET", f"{base}/schemas/ids/{ids[1]}")[2]["error_code"] == 40403  # (the client caches by id)
    assert registry.delete_subject(subject) == [1, 3]
    assert registry.get_subjects() == [] and registry.get_subjects(deleted=True) == [subject]
    with pytest.raises(SchemaRegistryError) as again:
        registry.delete_subject(subject)
    assert again.value.error_code == 40404
    assert registry.delete_subject(subject, permanent=True) == [1, 3]
    assert registry.get_subjects(deleted=True) == []
    with pytest.raises(SchemaRegistryError) as unknown:
        registry.get_versions(subject)
    assert unknown.value.error_code == 40401
    # Ids are never given twice: a new schema after the hard deletes gets the next one.
    assert registry.register_schema(subject, Schema(_avro([NAME, AGE, EMAIL_OPTIONAL]), "AVRO")) == ids[-1] + 1


def test_schemas_survive_a_restart(tmp_path):
    with BrokerThread(tmp_path / "data", schema_registry=True) as broker:
        registry = SchemaRegistryClient({"url": broker.schema_registry_url})
        first = registry.register_schema("kept-value", Schema(json.dumps(USER_V1), "AVRO"))
        registry.set_compatibility("kept-value", "FULL")
        broker.restart()
        registry = SchemaRegistryClient({"url": broker.schema_registry_url})
        assert registry.get_subjects() == ["kept-value"]
        assert json.loads(registry.get_schema(first).schema_str) == USER_V1
        assert registry.get_compatibility("kept-value") == "FULL"
        with pytest.raises(SchemaRegistryError) as refusal:  # FULL, from the replayed config
            registry.register_schema("kept-value", Schema(_avro([NAME, AGE, EMAIL_REQUIRED]), "AVRO"))
        assert refusal.value.http_status_code == 409
        assert registry.register_schema("new-value", Schema(_avro([NAME]), "AVRO")) == first + 1


@pytest.mark.minibroker(schema_registry=True)
def test_config_mode_and_compatibility_endpoints(minibroker_server, registry):
    base = minibroker_server.schema_registry_url
    assert _http("GET", base + "/config")[2] == {"compatibilityLevel": "BACKWARD"}
    assert _http("PUT", base + "/config", b'{"compatibility": "full"}')[2] == {"compatibility": "FULL"}
    assert _http("GET", base + "/config/nothing")[2]["error_code"] == 40408
    assert _http("GET", base + "/config/nothing?defaultToGlobal=true")[2] == {"compatibilityLevel": "FULL"}
    assert _http("PUT", base + "/config", b'{"compatibility": "SIDEWAYS"}')[2]["error_code"] == 42203
    assert _http("GET", base + "/schemas/types")[2] == ["JSON", "PROTOBUF", "AVRO"]
    registry.register_schema("m-value", Schema(json.dumps(USER_V1), "AVRO"))
    status, _, verdict = _http("POST", base + "/compatibility/subjects/m-value/versions/latest?verbose=true",
                               json.dumps({"schema": _avro([NAME, AGE, EMAIL_REQUIRED])}).encode())
    assert status == 200 and verdict["is_compatible"] is False and verdict["messages"]
    assert registry.update_mode("m-value", "READONLY") == "READONLY"
    assert registry.get_mode("m-value") == "READONLY" and registry.get_global_mode() == "READWRITE"
    with pytest.raises(SchemaRegistryError) as read_only:
        registry.register_schema("m-value", Schema(_avro([NAME, AGE, EMAIL_OPTIONAL]), "AVRO"))
    assert read_only.value.error_code == 42205
    assert registry.delete_mode("m-value") == "READONLY"
    # IMPORT mode: registrations carry their ids (a migration keeps them).
    assert _http("PUT", base + "/mode", b'{"mode": "IMPORT"}')[2]["error_code"] == 42205  # not empty
    assert _http("PUT", base + "/mode?force=true", b'{"mode": "IMPORT"}')[2] == {"mode": "IMPORT"}
    status, _, answer = _http("POST", base + "/subjects/imported/versions",
                              json.dumps({"schema": _avro([NAME]), "id": 100, "version": 7}).encode())
    assert (status, answer) == (200, {"id": 100})
    assert registry.update_global_mode("READWRITE") == "READWRITE"
    assert registry.get_version("imported", 7).schema_id == 100


@pytest.mark.minibroker(schema_registry=True)
def test_bad_requests_get_confluent_error_bodies(minibroker_server):
    base = minibroker_server.schema_registry_url
    status, content_type, body = _http("POST", base + "/subjects/x/versions", b"{not json")
    assert (status, body["error_code"]) == (400, 400) and content_type == "application/vnd.schemaregistry.v1+json"
    assert _http("POST", base + "/subjects/x/versions", b"[1, 2]")[2]["error_code"] == 400
    status, _, body = _http("POST", base + "/subjects/x/versions", b'{"schema": "{\\"type\\": \\"nope\\"}"}')
    assert (status, body["error_code"]) == (422, 42201) and "nope" in body["message"]
    assert _http("GET", base + "/subjects/x/versions/zero")[2]["error_code"] == 42202
    assert _http("GET", base + "/subjects/x/versions")[:3:2] == (404, {"error_code": 40401,
                                                                        "message": "Subject 'x' not found."})
    assert _http("GET", base + "/schemas/ids/99")[2]["error_code"] == 40403
    assert _http("GET", base + "/no/such/path")[0] == 404
    assert _over_the_bound(base).startswith(b"HTTP/1.1 413 ")
    # The broker and its registry go on serving.
    assert _http("GET", base + "/subjects")[:3:2] == (200, [])
    producer = Producer({"bootstrap.servers": minibroker_server.bootstrap})
    producer.produce("after-bad-requests", b"v")
    assert producer.flush(30) == 0


@pytest.mark.minibroker(schema_registry=True)
def test_the_docs_snippet_runs(minibroker_server):
    [snippet] = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    scope: dict = {}
    exec(compile(snippet, str(DOC), "exec"), scope)
    scope["test_my_service_registers_its_schema"](minibroker_server)
