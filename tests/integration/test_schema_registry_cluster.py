"""The schema registry on a cluster: every broker serves reads from its replica of `_schemas`; writes sent to
any broker are forwarded to the leader of `_schemas-0`; killing that leader loses no registered schema, and
the new leader goes on numbering ids after the last one."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient


def _schema(name: str) -> Schema:
    return Schema(json.dumps({"type": "record", "name": name, "fields": [{"name": "f", "type": "string"}]}), "AVRO")


def _get(url: str) -> object | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return json.loads(answer.read())
    except (urllib.error.URLError, OSError):
        return None


@pytest.mark.minibroker_cluster(brokers=3, schema_registry=True)
def test_writes_forwarded_to_the_leader_survive_its_death(minibroker_cluster):
    cluster = minibroker_cluster
    urls = cluster.schema_registry_urls
    assert sorted(urls) == [1, 2, 3]
    first = SchemaRegistryClient({"url": urls[1]}).register_schema("a-value", _schema("A"))
    leader = cluster.wait_leader("_schemas", 0)
    assert len(cluster._partition("_schemas", 0).replica_nodes) == 3
    follower = next(i for i in urls if i != leader)
    second = SchemaRegistryClient({"url": urls[follower]}).register_schema("b-value", _schema("B"))  # forwarded
    assert second == first + 1
    for url in urls.values():  # every broker reads both from its own replica
        cluster.wait_until(lambda url=url: _get(f"{url}/schemas/ids/{second}"), 30, f"schema {second} at {url}")
        assert _get(f"{url}/subjects") == ["a-value", "b-value"]
    cluster.kill_broker(leader)
    new_leader = cluster.wait_leader("_schemas", 0, not_broker=leader)
    survivors = cluster.schema_registry_urls
    assert leader not in survivors and new_leader in survivors
    for url in survivors.values():
        for schema_id in (first, second):
            found = _get(f"{url}/schemas/ids/{schema_id}")
            assert found is not None and "record" in found["schema"]
    other = next(i for i in survivors if i != new_leader)
    third = SchemaRegistryClient({"url": survivors[other]}).register_schema("c-value", _schema("C"))
    assert third == second + 1
    cluster.wait_until(lambda: _get(f"{survivors[new_leader]}/schemas/ids/{third}"), 30, "the third schema")
