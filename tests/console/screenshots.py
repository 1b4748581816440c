"""The console's screenshots for docs/console.md (`make console-screenshots`): a broker with a schema registry and
sample data made by real clients (JSON and Avro messages, a lagging consumer group with a live member, an open
transaction and an aborted one, an ACL, a SCRAM user, a fault rule), each page captured in headless Chromium at
1280x800, and two at a phone's size.

    python -m tests.console.screenshots docs/images/console
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from broker.testkit import BrokerThread
from tests.console.browser import DESKTOP, PHONE, chromium, errors

PAGES = [  # (file name, path, what must be on it before the capture)
    ("overview", "/", "#brokers"),
    ("topics", "/topics", "#topics"),
    ("topic", "/topics/orders", "#partitions"),
    ("messages", "/topics/orders/messages?partition=0", "#records"),
    ("messages-schema-registry", "/topics/payments/messages", "#records"),
    ("messages-transactions", "/topics/ledger/messages?from=offset&offset=0", "#records"),
    ("produce", "/topics/orders/produce", "#produce"),
    ("groups", "/groups", "#groups"),
    ("group-lag", "/groups/billing", "#lag"),
    ("transactions", "/transactions", "#transactions"),
    ("security", "/security", "#acls"),
    ("trace", "/trace?api=PRODUCE", "#trace"),
    ("testkit", "/testkit", "#faults"),
]
PHONE_PAGES = [("phone-overview", "/", "#brokers"), ("phone-group-lag", "/groups/billing", "#lag")]


def sample_data(broker: BrokerThread) -> list[Any]:
    """Topics, messages, groups and transactions from real clients; returns the clients to keep open (a group's
    live member, an open transaction) while the pages are captured."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        NewTopic,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("orders", 3, 1), NewTopic("payments", 1, 1),
                                       NewTopic("ledger", 1, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "order-service"})
    for i in range(60):
        order = {"order_id": f"o-{1000 + i}", "customer": f"c-{i % 7}", "items": [{"sku": f"sku-{i % 5}",
                                                                                    "qty": 1 + i % 3}],
                 "total": round(19.9 + i * 1.25, 2)}
        producer.produce("orders", json.dumps(order).encode(), key=order["customer"].encode(),
                         headers=[("source", b"web"), ("trace-id", f"{i:08x}".encode())])
    registry = SchemaRegistryClient({"url": broker.schema_registry_url})
    serialize = AvroSerializer(registry, json.dumps({"type": "record", "name": "Payment", "fields": [
        {"name": "payment_id", "type": "string"}, {"name": "amount_cents", "type": "long"},
        {"name": "currency", "type": "string"}]}))
    for i in range(8):
        producer.produce("payments", serialize({"payment_id": f"p-{i}", "amount_cents": 1250 * (i + 1),
                                                "currency": "EUR"},
                                               SerializationContext("payments", MessageField.VALUE)), key=b"p-%d" % i)
    producer.flush(30)
    for done, txn_id in ((True, "ledger-writer-1"), (False, "ledger-writer-2")):
        txn = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        txn.init_transactions()
        txn.begin_transaction()
        txn.send("ledger", json.dumps({"entry": txn_id, "amount": 100}).encode(), partition=0).get(30)
        (txn.commit_transaction if done else txn.abort_transaction)()
        txn.close()
    open_txn = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="settlement-batch-42")
    open_txn.init_transactions()
    open_txn.begin_transaction()
    for p in range(3):
        open_txn.send("orders", b'{"settled": true}', partition=p).get(30)
    member = KafkaConsumer("orders", bootstrap_servers=bootstrap, group_id="billing", client_id="billing-worker-1",
                           enable_auto_commit=False, auto_offset_reset="earliest")
    deadline = time.monotonic() + 30
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(timeout_ms=200)
    member.commit({TopicPartition("orders", p): OffsetAndMetadata((5, 0, 13)[p], "", -1) for p in range(3)})
    caught_up = KafkaConsumer(bootstrap_servers=bootstrap, group_id="analytics", enable_auto_commit=False)
    caught_up.commit({TopicPartition("payments", 0): OffsetAndMetadata(8, "", -1)})
    caught_up.close()
    for future in admin.create_acls([
            # (not on the topics shown: an ACL on a topic hides it from the console's own principal, as from any
            # client without a matching ACL; see docs/console.md)
            AclBinding(ResourceType.TOPIC, "invoices.", ResourcePatternType.PREFIXED, "User:billing", "*",
                       AclOperation.READ, AclPermissionType.ALLOW),
            AclBinding(ResourceType.GROUP, "invoicing", ResourcePatternType.LITERAL, "User:billing", "*",
                       AclOperation.READ, AclPermissionType.ALLOW)]).values():
        future.result(30)
    for future in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "billing", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"billing-secret")]).values():
        future.result(30)
    broker.inject_error("FETCH", "NOT_LEADER_OR_FOLLOWER", count=None, topic="payments", client_id="flaky-reader")
    return [open_txn, member]


def capture(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    saved = []
    with tempfile.TemporaryDirectory() as data_dir, \
            BrokerThread(data_dir, console=True, schema_registry=True, fsync="none") as broker:
        keep = sample_data(broker)
        try:
            with chromium(DESKTOP) as driver:
                for size, pages in ((DESKTOP, PAGES), (PHONE, PHONE_PAGES)):
                    driver.set_window_size(*size)
                    for name, path, ready in pages:
                        driver.get(broker.console_url + path)
                        if not driver.find_elements("css selector", ready):
                            raise RuntimeError(f"{path} is not the page expected: {driver.title}: "
                                               f"{driver.find_element('css selector', 'main').text[:500]}")
                        time.sleep(0.5)  # the live pages' first refresh and stream rows
                        problems = errors(driver)
                        if problems:
                            raise RuntimeError(f"{path}: {problems}")
                        target = out / f"{name}.png"
                        driver.save_screenshot(str(target))
                        saved.append(target)
                    driver.get("about:blank")
        finally:
            for client in keep:
                client.close()
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", default=Path("docs/images/console"))
    args = parser.parse_args(argv)
    for path in capture(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
