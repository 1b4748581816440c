"""The web console over HTTP with real clients (its browser tests are tests/console): groups of every type
(classic, consumer and share on the 4.1 profile, streams on 4.4), schema-registry payloads decoded on the
messages page, aborted records marked, proper error pages (404, 400 with Kafka's error, 403 without the CSRF
token, 401 without the password, 415) that leave the broker serving, HTTP Basic for scripts, secured brokers read
with their own credentials, and the refusal to start off loopback without a password."""

from __future__ import annotations

import base64
import html
import http.cookiejar
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from broker.testkit import BrokerThread
from tests.integration.conftest import wait_until


class Browserless:
    """A cookie-keeping HTTP client: a session as a browser has it, the CSRF token read from the pages."""

    def __init__(self, url: str, authorization: str | None = None) -> None:
        self.url = url
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self.headers = {"Authorization": authorization} if authorization else {}
        self.csrf = ""

    def get(self, path: str) -> tuple[int, str]:
        status, body = self._send(urllib.request.Request(self.url + path, headers=self.headers))
        found = re.search(r'name="csrf-token" content="([0-9a-f]+)"', body)
        self.csrf = found.group(1) if found else self.csrf
        return status, body

    def post(self, path: str, fields: dict[str, str], *, csrf: bool = True,
             content_type: str = "application/x-www-form-urlencoded") -> tuple[int, str]:
        data = urllib.parse.urlencode({**fields, **({"csrf": self.csrf} if csrf else {})}).encode()
        return self._send(urllib.request.Request(self.url + path, data=data, method="POST",
                                                 headers={**self.headers, "Content-Type": content_type}))

    def _send(self, request: urllib.request.Request) -> tuple[int, str]:
        try:
            with self.opener.open(request, timeout=30) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()


def message_of(body: str) -> str:
    found = re.search(r'id="error-message">([^<]*)<', body)
    return found.group(1) if found else ""


@pytest.mark.minibroker(console=True, kafka_version="4.1")
def test_groups_of_every_type_with_their_members_and_lag(minibroker_server: BrokerThread) -> None:
    bootstrap, topic = minibroker_server.bootstrap, f"t-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(4):
        producer.send(topic, b"v%d" % i, partition=0)
    producer.flush(30)
    producer.close()
    classic = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="g-classic", auto_offset_reset="earliest",
                            enable_auto_commit=False)
    modern = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-consumer", "group.protocol": "consumer",
                       "auto.offset.reset": "earliest", "enable.auto.commit": False})
    modern.subscribe([topic])
    # A share group starts at the log end unless told otherwise (share.auto.offset.reset=latest, as Kafka's).
    earliest = ConfigResource(ResourceType.GROUP, "g-share", incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.incremental_alter_configs([earliest])[earliest].result(30)
    shared = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "g-share"})
    shared.subscribe([topic])
    try:
        wait_until(lambda: classic.poll(timeout_ms=200) is not None and classic.assignment(), 30,
                   message="the classic member's assignment")
        classic.commit({TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)})

        def modern_committed() -> bool:
            message = modern.poll(0.2)
            if message is not None and not message.error():
                modern.commit(message=message, asynchronous=False)
                return True
            return False

        wait_until(modern_committed, 30, message="the KIP-848 consumer's first record")
        wait_until(lambda: any(not m.error() for m in shared.poll(0.2) or ()), 30,
                   message="the share consumer's first record")

        client = Browserless(minibroker_server.console_url)
        status, body = client.get("/groups")
        assert status == 200
        for group, kind in (("g-classic", "classic"), ("g-consumer", "consumer"), ("g-share", "share")):
            assert re.search(rf">{group}</a></td><td><span class=\"tag\">{kind}</span>", body), (group, body)
            status, page = client.get(f"/groups/{group}")
            assert status == 200, page
            assert re.search(r'id="group-state">Stable<', page), (group, page)
            assert f"{topic}-0" in page  # the member's assignment
        _, page = client.get("/groups/g-classic")
        assert re.search(rf'data-tp="{topic}-0">.*?class="num committed">1<.*?class="num lag lag-high">3<', page, re.S)
        _, page = client.get("/groups/g-consumer")
        assert re.search(rf'data-tp="{topic}-0">.*?class="num committed">1<', page, re.S)
        # A group with members keeps its offsets: Kafka's refusal on the page.
        status, page = client.post("/groups/g-classic/reset", {"topic": topic, "to": "earliest"})
        assert status == 400 and re.search(r"OffsetCommit g-classic .*: [A-Z_]+", message_of(page)), page
    finally:
        classic.close()
        modern.close()
        shared.close()


def _order_class() -> Any:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    fd = descriptor_pb2.FileDescriptorProto(name="console_orders.proto", package="shop", syntax="proto3")
    message = fd.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=9, label=1)
    message.field.add(name="qty", number=2, type=5, label=1)
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


@pytest.mark.minibroker(console=True, schema_registry=True)
def test_schema_registry_payloads_are_decoded_and_aborted_records_marked(minibroker_server: BrokerThread) -> None:
    bootstrap, topic = minibroker_server.bootstrap, f"t-{uuid.uuid4().hex[:8]}"
    registry = SchemaRegistryClient({"url": minibroker_server.schema_registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    avro = AvroSerializer(registry, json.dumps({"type": "record", "name": "User", "fields": [
        {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}))
    order = _order_class()
    protobuf = ProtobufSerializer(order, registry, {"use.deprecated.format": False})
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, avro({"name": "ann", "age": 31}, ctx), partition=0)
    producer.flush(30)
    producer.produce(topic, key=protobuf(order(id="o-1", qty=3), SerializationContext(topic, MessageField.KEY)),
                     value=b"plain", partition=0)
    assert producer.flush(30) == 0
    aborting = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"txn-{topic}")
    aborting.init_transactions()
    aborting.begin_transaction()
    aborting.send(topic, b"never committed", partition=0).get(30)
    aborting.abort_transaction()
    aborting.close()

    status, page = Browserless(minibroker_server.console_url).get(f"/topics/{topic}/messages?from=offset&offset=0")
    assert status == 200, page
    rows = re.findall(r'<tr class="record([^"]*)" data-offset="(\d+)".*?</tr>', page, re.S)
    assert [(cls.strip(), int(offset)) for cls, offset in rows] == [("", 0), ("", 1), ("aborted", 2), ("marker", 3)]
    record = dict(re.findall(r'data-offset="(\d+)"(.*?)</tr>', page, re.S))
    assert "&#34;name&#34;: &#34;ann&#34;" in record["0"]
    assert f"avro: schema id 1 ({topic}-value v1)" in record["0"]
    assert "&#34;qty&#34;: 3" in record["1"] and "protobuf: schema id 2" in record["1"]
    assert "never committed" in record["2"] and "aborted</span>" in record["2"]
    assert "ABORT marker" in record["3"]


@pytest.mark.minibroker(console=True)
def test_error_pages_and_the_broker_serves_on(minibroker_server: BrokerThread) -> None:
    client = Browserless(minibroker_server.console_url)
    assert client.get("/")[0] == 200
    status, body = client.get("/topics/no-such-topic")
    assert (status, message_of(body)) == (404, "No topic no-such-topic.")
    assert client.get("/no/such/page")[0] == 404
    assert client.get("/groups/no-such-group")[0] == 404
    # Kafka's own validation, on the page (CreateTopics' error code and message).
    status, body = client.post("/topics", {"name": "bad name!", "partitions": "1", "replication_factor": "1"})
    assert status == 400 and "INVALID_TOPIC_EXCEPTION" in message_of(body)
    status, body = client.post("/topics", {"name": "twice", "partitions": "1", "replication_factor": "1"})
    assert status == 200  # redirected to the new topic's page
    status, body = client.post("/topics", {"name": "twice", "partitions": "1", "replication_factor": "1"})
    assert status == 400 and "TOPIC_ALREADY_EXISTS" in message_of(body)
    status, body = client.post("/topics", {"name": "x", "partitions": "many"})
    assert status == 400 and "whole number" in message_of(body)
    status, body = client.post("/topics/twice/produce", {"partition": "9", "value": "v"})
    assert status == 400 and "no partition twice-9" in message_of(body).lower()
    status, body = client.get("/topics/twice/messages?format=nope")
    assert status == 400
    # A change without the page's CSRF token, or with another session's, is refused.
    status, body = client.post("/topics", {"name": "forged"}, csrf=False)
    assert status == 403 and "CSRF" in message_of(body)
    other = Browserless(minibroker_server.console_url)
    other.get("/")
    other.csrf = client.csrf
    assert other.post("/topics", {"name": "forged"})[0] == 403
    status, _ = client.post("/topics", {"name": "x"}, content_type="multipart/form-data; boundary=x")
    assert status in (403, 415)
    assert "forged" not in minibroker_server.topics()
    # The broker served on: a client still produces and consumes.
    producer = KafkaProducer(bootstrap_servers=minibroker_server.bootstrap)
    producer.send("twice", b"still here").get(30)
    producer.close()
    assert minibroker_server.topics()["twice"]["partitions"][0]["log_end_offset"] == 1


def test_a_password_guards_every_page_and_basic_auth_lets_scripts_in(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("letmein\n")
    with BrokerThread(tmp_path / "b", console=True, console_password_file=str(secret)) as broker:
        anonymous = Browserless(broker.console_url)
        status, body = anonymous.get("/topics")
        assert status == 200 and 'id="login"' in body  # redirected to the login form
        assert anonymous.get("/trace/stream")[0] == 401
        assert anonymous.post("/topics", {"name": "x"})[0] == 401
        assert anonymous.get("/static/console.css")[0] == 200  # the login form's own style
        status, body = anonymous.post("/login", {"password": "nope", "next": "/topics"})
        assert status == 401 and message_of(body) == "Wrong password."
        status, body = anonymous.post("/login", {"password": "letmein", "next": "https://elsewhere.example/"})
        assert status == 200 and "<h1>Overview" in body  # logged in; never sent to another site
        script = Browserless(broker.console_url, "Basic " + base64.b64encode(b"ops:letmein").decode())
        status, body = script.get("/topics")
        assert status == 200 and "<h1>Topics" in body
        wrong = Browserless(broker.console_url, "Basic " + base64.b64encode(b"ops:guess").decode())
        assert 'id="login"' in wrong.get("/topics")[1]


def test_the_console_refuses_to_start_off_loopback_without_a_password(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "broker", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path),
                             "--console", "0.0.0.0:0"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--console-password-file" in result.stderr
    empty = tmp_path / "empty-password"
    empty.write_text("\n")
    for password_file, reason in ((tmp_path / "missing", "No such file"), (empty, "the first line is empty")):
        result = subprocess.run([sys.executable, "-m", "broker", "--listen", "127.0.0.1:0", "--data-dir",
                                 str(tmp_path / "data"), "--console", "0.0.0.0:0", "--console-password-file",
                                 str(password_file)], capture_output=True, text=True, timeout=60)
        assert result.returncode == 1 and reason in result.stderr, result.stderr[-2000:]


@pytest.mark.minibroker(console=True)
def test_the_live_trace_stream_sends_a_clients_requests(minibroker_server: BrokerThread) -> None:
    client_id = f"tracer-{uuid.uuid4().hex[:6]}"
    request = urllib.request.Request(minibroker_server.console_url + f"/trace/stream?client_id={client_id}")
    with urllib.request.urlopen(request, timeout=30) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        producer = KafkaProducer(bootstrap_servers=minibroker_server.bootstrap, client_id=client_id)
        producer.send("traced", b"x").get(30)
        producer.close()
        received = b""
        deadline = time.monotonic() + 30
        while b"PRODUCE v" not in received and time.monotonic() < deadline:
            received += stream.read1(65536)
    assert b"event: row" in received and b"PRODUCE v" in received and client_id.encode() in received


@pytest.mark.parametrize("security", ["SSL", "SASL_SSL"])
def test_a_secured_broker_is_read_with_its_own_credentials(tmp_path: Path, security: str) -> None:
    """The console connects as the broker's own connections do: TLS with the listener's trust store, SASL with
    the username and password of the listener's JAAS config; without them its pages say so (502)."""
    own = {"listener.name.sasl_ssl.plain.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
           'required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'}
    with BrokerThread(tmp_path / "b", console=True, security=security, users={"alice": "alice-secret"},
                      security_settings=own if security == "SASL_SSL" else {}) as broker:
        status, body = Browserless(broker.console_url).get("/topics")
        assert status == 200 and "<h1>Topics" in body
    if security == "SASL_SSL":
        with BrokerThread(tmp_path / "c", console=True, security=security, users={"alice": "alice-secret"}) as broker:
            status, body = Browserless(broker.console_url).get("/topics")
            assert status == 502 and "username=" in html.unescape(message_of(body))
            producer = KafkaProducer(bootstrap_servers=broker.bootstrap, **broker.kafka_python("alice"))
            producer.send("still-served", b"x").get(30)  # the broker serves its clients all the same
            producer.close()


@pytest.mark.minibroker(console=True, kafka_version="4.4")
def test_a_streams_group_with_its_member_and_tasks(minibroker_server: BrokerThread) -> None:
    """A KIP-1071 streams group (its member's StreamsGroupHeartbeat sent as Kafka Streams sends it): listed with
    its type, described with StreamsGroupDescribe (state, epoch, the member's process and tasks)."""
    from tests.kafka_wire import WireClient
    from tests.reference.scenarios.streams_groups import NO_TASKS, TASKS_UNCHANGED, word_count

    group, source, member = f"words-{uuid.uuid4().hex[:6]}", f"lines-{uuid.uuid4().hex[:6]}", "member-a"
    with WireClient(minibroker_server.bootstrap) as wire:
        wire.create_topic(source, partitions=2)
        body = {"group_id": group, "member_id": member, "member_epoch": 0, "endpoint_information_epoch": 0,
                "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000,
                "topology": word_count(group, source), **NO_TASKS, "process_id": "process-a",
                "user_endpoint": None, "client_tags": None, "task_offsets": None, "task_end_offsets": None,
                "shutdown_application": False}
        tasks: list[Any] = []

        def heartbeat() -> bool:
            answer = wire.request(88, 1, body)
            if answer.error_code:
                return False  # the coordinator is loading: again
            body.update(member_epoch=answer.member_epoch, topology=None, **TASKS_UNCHANGED)
            if answer.active_tasks:
                tasks[:] = answer.active_tasks
            return bool(tasks)

        wait_until(heartbeat, 60, interval=0.5, message="the member's tasks")
        client = Browserless(minibroker_server.console_url)
        status, page = client.get("/groups")
        assert status == 200 and re.search(rf">{group}</a></td><td><span class=\"tag\">streams</span>", page), page
        status, page = client.get(f"/groups/{group}")
        assert status == 200, page
        assert re.search(r'id="group-state">(Stable|Reconciling|Assigning)<', page), page
        assert f">{member}<" in page and "process process-a" in page and "active 0:" in page
