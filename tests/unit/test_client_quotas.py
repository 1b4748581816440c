"""Client quotas (broker/services/client_quotas.py): entities and their ZooKeeper paths, validation, describe
filters, persistence, and the throttle times of Kafka's ClientQuotaManager (rates over sampled windows, the
precedence of user and client-id quotas). What Kafka answers: tests/reference/recorded/*/client_quota*.json."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from broker.services.client_quotas import (
    ANY,
    DEFAULT,
    EXACT,
    AlterEntry,
    ClientQuotas,
    FileQuotaStore,
    Rate,
    entity_from_path,
    znode_of,
)
from protocol.header import ErrorCode


def quotas(tmp_path: Path, kraft: bool = True) -> ClientQuotas:
    return ClientQuotas(FileQuotaStore(tmp_path / "meta" / "client-quotas.json"), kraft)


def alter(q: ClientQuotas, *entries: AlterEntry, validate_only: bool = False) -> list:
    return trio.run(q.alter, list(entries), validate_only)


def test_entities_live_where_kafka_keeps_them() -> None:
    cases = {(("user", "alice"),): ("users", "alice"), (("user", None),): ("users", "<default>"),
             (("client-id", "app 1"),): ("clients", "app%201"),
             (("user", "alice"), ("client-id", None)): ("users", "alice/clients/<default>"),
             (("ip", "127.0.0.1"),): ("ips", "127.0.0.1")}
    for entity, path in cases.items():
        assert znode_of(entity) == path
        assert entity_from_path(*path) == entity


def test_alter_validates_each_entry_and_persists(tmp_path: Path) -> None:
    q = quotas(tmp_path)
    outcomes = alter(q, AlterEntry([("user", "alice")], [("producer_byte_rate", 1024.0, False)]),
                     AlterEntry([("user", "alice")], [("nope", 1.0, False)]),
                     AlterEntry([("ip", "127.0.0.1"), ("user", "a")], [("connection_creation_rate", 1.0, False)]),
                     AlterEntry([("user", "a"), ("user", "b")], [("consumer_byte_rate", 5.0, False)]),
                     AlterEntry([("user", "bob")], [("producer_byte_rate", 1.5, False)]),
                     AlterEntry([], [("producer_byte_rate", 1.0, False)]))
    assert [(e, m) for e, m, _ in outcomes] == [
        (ErrorCode.NONE, None), (ErrorCode.INVALID_REQUEST, "Invalid configuration key nope"),
        (ErrorCode.INVALID_REQUEST, "Invalid quota entity combination, IP entity shouldnot be combined with User "
                                    "or ClientId"),
        (ErrorCode.NONE, None),
        (ErrorCode.INVALID_REQUEST, "producer_byte_rate cannot be a fractional value."),
        (ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")]
    assert outcomes[3][2] == [("user", "b")]  # a type named twice: the last name counts
    again = quotas(tmp_path)
    assert again.quotas == {(("user", "alice"),): {"producer_byte_rate": 1024.0},
                            (("user", "b"),): {"consumer_byte_rate": 5.0}}
    alter(again, AlterEntry([("user", "alice")], [("producer_byte_rate", 0.0, True)]))
    assert (("user", "alice"),) not in quotas(tmp_path).quotas
    alter(again, AlterEntry([("user", "carol")], [("producer_byte_rate", 7.0, False)]), validate_only=True)
    assert (("user", "carol"),) not in again.quotas


def test_3x_checks_are_zookeeper_modes(tmp_path: Path) -> None:
    q = quotas(tmp_path, kraft=False)
    [(error, message, _)] = alter(q, AlterEntry([("user", "a")], [("producer_byte_rate", -1.0, False)]))
    assert (error, message) == (ErrorCode.INVALID_REQUEST, "Configuration producer_byte_rate must be a LONG value")
    assert q.describe([("user", EXACT, None)], False)[:2] == (ErrorCode.UNKNOWN_SERVER_ERROR, None)


def test_describe_filters(tmp_path: Path) -> None:
    q = quotas(tmp_path)
    alter(q, AlterEntry([("user", "alice")], [("producer_byte_rate", 1.0, False)]),
          AlterEntry([("user", "alice"), ("client-id", "app")], [("producer_byte_rate", 2.0, False)]),
          AlterEntry([("user", None)], [("consumer_byte_rate", 3.0, False)]),
          AlterEntry([("client-id", "app")], [("request_percentage", 4.0, False)]))

    def found(components: list, strict: bool = False) -> set:
        error, _, entries = q.describe(components, strict)
        assert error == ErrorCode.NONE
        return {entity for entity, _ in entries}

    assert found([("user", EXACT, "alice")]) == {(("user", "alice"),), (("user", "alice"), ("client-id", "app"))}
    assert found([("user", EXACT, "alice")], strict=True) == {(("user", "alice"),)}
    assert found([("user", DEFAULT, None)]) == {(("user", None),)}
    assert found([("client-id", ANY, None)]) == {(("client-id", "app"),), (("user", "alice"), ("client-id", "app"))}
    assert len(found([])) == 4
    assert q.describe([("group", ANY, None)], False)[0] == ErrorCode.UNSUPPORTED_VERSION
    assert q.describe([("user", ANY, None), ("user", ANY, None)], False)[0] == ErrorCode.INVALID_REQUEST
    assert q.describe([("ip", ANY, None), ("user", ANY, None)], False)[0] == ErrorCode.INVALID_REQUEST


def test_rate_covers_at_least_the_window_but_one() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(20_000, now_ms=0)
    assert rate.measure(0) == pytest.approx(2000)  # 20 KB over 10 s
    rate.record(30_000, now_ms=12_000)  # the first sample has expired
    assert rate.measure(12_000) == pytest.approx(3000)


def test_throttle_time_and_precedence(tmp_path: Path) -> None:
    q = quotas(tmp_path)
    alter(q, AlterEntry([("client-id", "app")], [("producer_byte_rate", 2000.0, False)]),
          AlterEntry([("user", "alice"), ("client-id", "app")], [("producer_byte_rate", 1_000_000.0, False)]))
    # 22 KB over at least 10 s: 2.2 KB/s against 2 KB/s, throttled (2200 - 2000) / 2000 * 10 s.
    assert q.throttle(0, "bob", "app", 22_000, 0, 0.0, 0) == 1000
    assert q.throttle(0, "bob", "other", 22_000, 0, 0.0, 0) == 0  # no quota for that client id
    assert q.throttle(0, "alice", "app", 22_000, 0, 0.0, 0) == 0  # alice's own quota for app is higher
    assert q.throttle(1, "bob", "app", 0, 10**9, 0.0, 0) == 0  # a fetch counts against the consumer rate
    alter(q, AlterEntry([("user", None)], [("request_percentage", 0.001, False)]))
    assert q.throttle(3, "carol", "any", 0, 0, 0.01, 0) > 0  # 1% of a second over 10 s, beyond 0.001%
