"""Client quotas (KIP-546's DescribeClientQuotas/AlterClientQuotas, KIP-13 and KIP-124's enforcement): quotas of
users, client ids, their combinations, defaults and IPs set, validated, described with every match type, and
removed; then a produce and a fetch quota throttling a client (throttle_time_ms) while another goes on."""

from __future__ import annotations

import time
from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import batch, create_topic, fetch_body, produce_body

DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 48, 49
EXACT, DEFAULT, ANY = 0, 1, 2
RELEASES = ("3.9", "4.1", "4.4")


def entity(**parts: str | None) -> list[dict[str, Any]]:
    """entity(user="alice", client_id=None): None is the default entity."""
    return [{"entity_type": kind.replace("_", "-"), "entity_name": name} for kind, name in parts.items()]


def alter(s: Session, step: str, *entries: tuple[list[dict[str, Any]], dict[str, float | None]],
          validate_only: bool = False, version: int = 1) -> dict[str, Any]:
    """Each entry: (entity, {key: value, or None to remove it})."""
    return s.request(step, ALTER_CLIENT_QUOTAS, version, {"validate_only": validate_only, "entries": [
        {"entity": ent, "ops": [{"key": k, "value": 0.0 if v is None else v, "remove": v is None}
                                for k, v in ops.items()]} for ent, ops in entries]}) or {}


def describe(s: Session, step: str, *components: tuple[str, int, str | None], strict: bool = False,
             version: int = 1) -> dict[str, Any]:
    return s.request(step, DESCRIBE_CLIENT_QUOTAS, version, {"strict": strict, "components": [
        {"entity_type": kind, "match_type": match, "match": name} for kind, match, name in components]}) or {}


def _canonical(step: str, answer: Any) -> Any:
    """Entities in one order (user, client-id, ip) and entries by entity: Kafka lists both (even AlterClientQuotas'
    answers) in the order of its hash maps."""
    if not isinstance(answer, dict) or not isinstance(answer.get("entries"), list):
        return answer

    def entity(value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        order = {"user": 0, "client-id": 1, "ip": 2}
        return sorted(value, key=lambda c: (order.get(c["entity_type"], 3), c["entity_type"]))

    entries = [{**e, "entity": entity(e["entity"])} for e in answer["entries"]]
    return {**answer, "entries": sorted(entries, key=lambda e: str([(c["entity_type"], c["entity_name"] or "")
                                                                  for c in e["entity"]]))}


def wait_entries(s: Session, components: list[tuple[str, int, str | None]], until: Any, strict: bool = False) -> None:
    """Unrecorded: until DescribeClientQuotas shows what was just altered (Kafka 4's brokers learn a change from
    the controller's metadata a moment after AlterClientQuotas answers)."""
    s.wait_for("wait", DESCRIBE_CLIENT_QUOTAS, 1, {"strict": strict, "components": [
        {"entity_type": kind, "match_type": match, "match": name} for kind, match, name in components]},
        until=lambda a: until(a.get("entries") or []), record=False)


@scenario(releases=RELEASES, fresh=True, both_view=_canonical)
def client_quotas(s: Session) -> None:
    """Quotas set on users, client ids, a user's client, the default user, the default client of a user and
    an IP; the values Kafka refuses (unknown keys, negative or fractional rates, keys of another entity type,
    unknown or repeated entity types, an IP with a user); validate-only; every kind of DescribeClientQuotas
    filter, strict or not; removals; v0 of both."""
    alice, app = s.name("alice"), s.name("app")
    alter(s, "set quotas", (entity(user=alice), {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}),
          (entity(client_id=app), {"request_percentage": 50.0}),
          (entity(user=alice, client_id=app), {"producer_byte_rate": 4096.0}),
          (entity(user=None), {"consumer_byte_rate": 100000.0}),
          (entity(user=alice, client_id=None), {"controller_mutation_rate": 10.0}),
          (entity(ip="127.0.0.2"), {"connection_creation_rate": 5.0}))
    wait_entries(s, [("user", EXACT, alice)], lambda entries: len(entries) == 1, strict=True)
    alter(s, "an unknown key", (entity(user=alice), {"no_such_quota": 1.0}))
    alter(s, "a negative rate", (entity(user=alice), {"producer_byte_rate": -1.0}))
    alter(s, "a fractional byte rate", (entity(user=alice), {"producer_byte_rate": 1.5}))
    alter(s, "a fractional request percentage", (entity(user=alice), {"request_percentage": 12.5}))
    alter(s, "a connection rate on a user", (entity(user=alice), {"connection_creation_rate": 5.0}))
    alter(s, "a byte rate on an IP", (entity(ip="127.0.0.3"), {"producer_byte_rate": 5.0}))
    alter(s, "an IP with a user", (entity(ip="127.0.0.3", user=alice), {"connection_creation_rate": 5.0}))
    alter(s, "an unknown entity type", ([{"entity_type": "group", "entity_name": "g"}], {"producer_byte_rate": 5.0}))
    alter(s, "an invalid IP", (entity(ip="not-an-ip"), {"connection_creation_rate": 5.0}))
    alter(s, "the same entity type twice", ([{"entity_type": "user", "entity_name": "a"},
                                             {"entity_type": "user", "entity_name": "b"}],
                                            {"producer_byte_rate": 5.0}))
    alter(s, "an empty entity", ([], {"producer_byte_rate": 5.0}))
    alter(s, "an empty user name", (entity(user=""), {"producer_byte_rate": 5.0}))
    alter(s, "no ops", (entity(user=s.name("nobody")), {}))
    alter(s, "one good and one bad entry", (entity(user=s.name("bob")), {"producer_byte_rate": 5.0}),
          (entity(user=alice), {"no_such_quota": 1.0}))
    alter(s, "validate only", (entity(user=s.name("carol")), {"producer_byte_rate": 7.0}), validate_only=True)
    describe(s, "alice exactly", ("user", EXACT, alice))
    describe(s, "alice exactly, strict", ("user", EXACT, alice), strict=True)
    describe(s, "the default user", ("user", DEFAULT, None))
    describe(s, "any user", ("user", ANY, None))
    describe(s, "any user, strict", ("user", ANY, None), strict=True)
    describe(s, "any client id", ("client-id", ANY, None))
    describe(s, "alice with any client id", ("user", EXACT, alice), ("client-id", ANY, None))
    describe(s, "alice and app exactly, strict", ("user", EXACT, alice), ("client-id", EXACT, app), strict=True)
    describe(s, "alice with the default client, strict", ("user", EXACT, alice), ("client-id", DEFAULT, None),
             strict=True)
    describe(s, "any ip", ("ip", ANY, None))
    describe(s, "no components", strict=False)
    describe(s, "an unknown entity type", ("group", ANY, None))
    describe(s, "the same entity type twice", ("user", ANY, None), ("user", EXACT, alice))
    describe(s, "an exact match without a name", ("user", EXACT, None))
    describe(s, "a default match with a name", ("user", DEFAULT, alice))
    describe(s, "an unknown match type", ("user", 7, None))
    describe(s, "an ip with a user", ("ip", ANY, None), ("user", ANY, None))
    describe(s, "carol after validating only", ("user", EXACT, s.name("carol")))
    alter(s, "remove quotas", (entity(user=alice), {"producer_byte_rate": None}),
          (entity(user=alice, client_id=app), {"producer_byte_rate": None}),
          (entity(user=s.name("nobody")), {"producer_byte_rate": None}))
    wait_entries(s, [("user", EXACT, alice)], lambda entries: len(entries) == 1 and "producer_byte_rate" not in {
        v["key"] for v in entries[0]["values"]}, strict=True)
    describe(s, "alice after the removals", ("user", EXACT, alice))
    alter(s, "v0: set", (entity(user=s.name("dave")), {"consumer_byte_rate": 3000.0}), version=0)
    wait_entries(s, [("user", EXACT, s.name("dave"))], lambda entries: len(entries) == 1)
    describe(s, "v0: describe", ("user", EXACT, s.name("dave")), version=0)


def _throttled(answer: dict[str, Any] | None) -> bool | None:
    return None if answer is None else answer.get("throttle_time_ms", 0) > 0


def wait_quota(s: Session, client: str, present: bool) -> None:
    """Unrecorded: until DescribeClientQuotas shows the client id's quota (or no quota): Kafka applies a change
    to its quota managers as it publishes the metadata."""
    s.wait_for("wait", DESCRIBE_CLIENT_QUOTAS, 1, {"strict": True, "components": [
        {"entity_type": "client-id", "match_type": EXACT, "match": client}]},
        until=lambda a: bool(a.get("entries")) == present, record=False)
    time.sleep(0.5)  # the broker's quota managers follow the controller's metadata a moment later


@scenario(releases=RELEASES, fresh=True)
def client_quota_throttling(s: Session) -> None:
    """Byte-rate quotas of a client id (produce and fetch) and a request-time quota: its requests beyond the
    rate are answered with a throttle time (Kafka measures a rate over at least 10 s of 1 s samples, so one
    request of 11 times the per-second rate is over it), another client's are not; the quotas removed, no
    more throttling. Each request on a connection of its own (a throttled connection is muted meanwhile)."""
    topic, slow, busy = s.name("t"), s.name("slow"), s.name("busy")
    create_topic(s, "create", topic)
    alter(s, "produce and fetch quotas of a client id", (entity(client_id=slow), {
        "producer_byte_rate": 2000.0, "consumer_byte_rate": 2000.0}),
          (entity(client_id=busy), {"request_percentage": 0.001}))
    wait_quota(s, slow, True)
    payload = [b"x" * 1000] * 22  # 22 KB: 2.2 KB/s over 10 s, beyond 2 KB/s
    throttled = s.request("produce", 0, 9, produce_body(topic, batch(payload)), conn="p1", record=False,
                          client_id=slow)
    other = s.request("produce", 0, 9, produce_body(topic, batch(payload)), conn="o1", record=False)
    fetched = s.request("fetch", 1, 12, fetch_body(topic, 0), conn="f1", record=False, client_id=slow)
    s.note("byte-rate quotas", {"produce of the client with the quota": _throttled(throttled),
                                "produce of another client": _throttled(other),
                                "fetch of the client with the quota": _throttled(fetched)})
    busy_answers = [s.request("metadata", 3, 12, {"topics": None, "allow_auto_topic_creation": False,
                                                  "include_topic_authorized_operations": False},
                              conn=f"b{i}", record=False, client_id=busy) for i in range(20)]
    s.note("request quota", {"throttled at last": any(_throttled(a) for a in busy_answers)})
    alter(s, "the quotas removed", (entity(client_id=slow), {"producer_byte_rate": None, "consumer_byte_rate": None}),
          (entity(client_id=busy), {"request_percentage": None}))
    wait_quota(s, slow, False)
    after = s.request("produce", 0, 9, produce_body(topic, batch([b"y"])), conn="p2", record=False, client_id=slow)
    s.note("once removed", {"throttled": _throttled(after)})
