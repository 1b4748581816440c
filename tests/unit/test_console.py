"""The console's pure parts: records for display (formats, transaction markers, aborted and open transactions as a
read_committed consumer would see them), Kafka's partitioner, sessions and CSRF tokens, the trace's filters, the
forms' parsing (fault rules, headers, configs, timestamps), rates and sizes, and the refusal to serve the console
off loopback without a password."""

from __future__ import annotations

import base64

import pytest

from broker.config.options import BrokerConfig, is_loopback
from broker.http.console import auth
from broker.http.console.admin import AdminError, consumer_assignment
from broker.http.console.formats import Rates, duration_ms, size
from broker.http.console.pages.messages import parse_timestamp
from broker.http.console.pages.produce import parse_headers
from broker.http.console.pages.testkit import rule_spec
from broker.http.console.pages.topics import _configs
from broker.http.console.pages.trace import TraceFilter, mentions_topic
from broker.http.console.partitioner import murmur2, partition_for_key
from broker.http.console.records_view import hex_dump, next_offset, show, shown_records
from protocol import records as wire
from protocol.schema import message


def batch(base: int, values: list[bytes], *, pid: int = -1, transactional: bool = False, ts: int = 1_000) -> bytes:
    records = [wire.Record(i, i, b"k%d" % (base + i), v, [("h", b"1")]) for i, v in enumerate(values)]
    return wire.build_batch(records, base_offset=base, base_timestamp=ts, producer_id=pid, producer_epoch=0,
                            base_sequence=0 if pid >= 0 else -1, is_transactional=transactional)


def marker(base: int, pid: int, commit: bool) -> bytes:
    return wire.control_batch(commit, pid, 0, 0, 2_000, base_offset=base)


def test_records_of_aborted_committed_and_open_transactions_are_marked() -> None:
    data = b"".join([
        batch(0, [b"plain"]),
        batch(1, [b"t7-a", b"t7-b"], pid=7, transactional=True),  # aborted: its marker at 5
        batch(3, [b"t8"], pid=8, transactional=True),  # committed at 4
        marker(4, 8, commit=True),
        marker(5, 7, commit=False),
        batch(6, [b"t7-again"], pid=7, transactional=True),  # a new transaction of 7, not aborted: open
    ])
    rows = shown_records(data, [(7, 1)], last_stable_offset=6)
    assert [r.offset for r in rows] == [0, 1, 2, 3, 4, 5, 6]
    assert [r.aborted for r in rows] == [False, True, True, False, False, False, False]
    assert [r.marker for r in rows] == [None, None, None, None, "COMMIT", "ABORT", None]
    assert [r.open_transaction for r in rows] == [False] * 6 + [True]
    assert rows[0].key.text == "k0" and rows[0].headers == [("h", show(b"1"))]
    assert rows[1].timestamp == 1_000 and rows[2].timestamp == 1_001 and rows[0].timestamp_type == "CreateTime"


def test_records_from_an_offset_up_to_a_limit_and_a_cut_last_batch() -> None:
    data = batch(0, [b"a", b"b", b"c"]) + batch(3, [b"d", b"e"])
    assert [r.value.text for r in shown_records(data, [], -1, start=1, limit=3)] == ["b", "c", "d"]
    cut = data + batch(5, [b"f"])[:30]  # a Fetch answer ends inside a batch
    assert [r.offset for r in shown_records(cut, [], -1)] == [0, 1, 2, 3, 4]
    assert next_offset(cut) == 5 and next_offset(b"") is None


def test_values_shown_as_json_text_hex_or_null() -> None:
    assert show(b'{"b": [1, 2]}').text == '{\n  "b": [\n    1,\n    2\n  ]\n}'
    assert show(b'{"b": 1}').format == "json"
    assert show(b"hello").format == "text"
    assert show(b"\x00\x01\xff").format == "hex" and show(b"\x00\x01\xff").note == "not UTF-8"
    assert show(b"\x00\x01 ok").format == "hex"  # UTF-8, but control characters
    assert show(None).format == "null"
    assert show(b"hello", "hex").text == "00000000  " + "68 65 6c 6c 6f".ljust(47) + "  hello"
    assert show(b"not json", "json").note == "not JSON"
    assert show(b"x" * 70_000).note == "first 65536 of 70000 bytes"
    assert hex_dump(b"") == "(empty)"


class _Decoder:
    def decode(self, data: bytes):  # noqa: ANN201
        return show(b'{"decoded": true}') if data[:1] == b"\x00" else None


def test_schema_registry_decoding_comes_first_when_asked_for_auto() -> None:
    assert show(b"\x00\x00\x00\x00\x01xyz", "auto", _Decoder()).text == '{\n  "decoded": true\n}'
    assert show(b"\x00\x00\x00\x00\x01xyz", "hex", _Decoder()).format == "hex"
    assert show(b"plain", "auto", _Decoder()).text == "plain"


@pytest.mark.parametrize("key", [b"", b"a", b"ab", b"abc", b"abcd", b"hello", b"order-7", bytes(range(256))])
def test_murmur2_is_kafkas(key: bytes) -> None:
    from kafka.partitioner import murmur2 as kafka_python_murmur2  # kafka-python's port of Kafka's Utils.murmur2

    assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key)  # kafka-python's is unsigned, Java's signed
    assert partition_for_key(key, 7) == (kafka_python_murmur2(key) & 0x7FFFFFFF) % 7


def test_murmur2_of_kafkas_own_test() -> None:
    assert murmur2(b"21") == -973932308  # UtilsTest.testMurmur2 in Apache Kafka


def test_sessions_passwords_and_csrf_tokens() -> None:
    open_ = auth.Sessions(None)
    session, new = open_.resolve(None)
    assert new and open_.allowed(session, None)
    assert open_.resolve(session) == (session, False)
    assert open_.resolve("forged")[0] != "forged"  # an unknown id gets a new session
    token = open_.csrf_token(session)
    assert open_.csrf_ok(session, token) and not open_.csrf_ok(session, None)
    other, _ = open_.resolve(None)
    assert not open_.csrf_ok(other, token)  # a token is its session's only

    guarded = auth.Sessions("s3cret")
    session, _ = guarded.resolve(None)
    assert not guarded.allowed(session, None)
    assert not guarded.login(session, "wrong") and not guarded.allowed(session, None)
    basic = "Basic " + base64.b64encode(b"anyone:s3cret").decode()
    assert guarded.allowed(session, basic)
    assert not guarded.allowed(session, "Basic " + base64.b64encode(b"x:y").decode())
    assert not guarded.allowed(session, "Basic !!!") and not guarded.allowed(session, "Bearer s3cret")
    assert guarded.login(session, "s3cret") and guarded.allowed(session, None)
    guarded.logout(session)
    assert not guarded.allowed(session, None)
    old, _ = guarded.resolve(None, now=0.0)
    assert guarded.resolve(old, now=auth.SESSION_IDLE_S + 1)[0] != old  # an idle session expires


def test_password_file_first_line(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "pw"
    path.write_text("  secret  \nignored\n")
    assert auth.read_password(path) == "secret"
    path.write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        auth.read_password(path)


def test_trace_filters() -> None:
    produce = {"api": "PRODUCE", "client_id": "app-1", "fields": {"topic_data": [{"name": "orders"}]}}
    fetch = {"api": "FETCH", "client_id": "app-2", "fields": {"topics": [{"topic": "payments"}]}}
    console = {"api": "METADATA", "client_id": "minibroker-console", "fields": {}}
    assert TraceFilter().matches(produce) and not TraceFilter().matches(console)
    assert TraceFilter(mine=True).matches(console)
    assert TraceFilter(api="PRODUCE").matches(produce) and not TraceFilter(api="PRODUCE").matches(fetch)
    assert TraceFilter(client_id="app").matches(fetch) and not TraceFilter(client_id="other").matches(fetch)
    assert TraceFilter(topic="payments").matches(fetch) and not TraceFilter(topic="payments").matches(produce)
    assert TraceFilter.of({"api": "produce", "mine": "1"}) == TraceFilter(api="PRODUCE", mine=True)
    assert not mentions_topic({"name": "orders-archive"}, "orders")


def test_forms_parsing() -> None:
    assert rule_spec({"api": "produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": "all", "partition": "0"}) == \
        {"api": "produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": None, "partition": 0}
    assert rule_spec({"count": "3", "delay_ms": "250"}) == {"count": 3, "delay_ms": 250}
    for bad in ({"api": "NOPE"}, {"error": "NOPE"}, {"count": "x"}, {"partition": "-1"}):
        with pytest.raises(ValueError):
            rule_spec(bad)
    assert parse_headers("trace-id: 42\n\nsource=web\nurl: http://x") == \
        [("trace-id", b"42"), ("source", b"web"), ("url", b"http://x")]
    with pytest.raises(AdminError):
        parse_headers(": no name")
    assert _configs("# a comment\ncleanup.policy = compact\n\nretention.ms=1000") == \
        {"cleanup.policy": "compact", "retention.ms": "1000"}
    with pytest.raises(AdminError):
        _configs("no equals sign")
    assert parse_timestamp("1700000000000") == 1_700_000_000_000
    assert parse_timestamp("2023-11-14 22:13:20") == 1_700_000_000_000  # UTC
    assert parse_timestamp("2023-11-14T23:13:20+01:00") == 1_700_000_000_000
    with pytest.raises(AdminError):
        parse_timestamp("yesterday")


def test_a_classic_members_assignment_is_read_from_kafkas_consumer_protocol() -> None:
    spec = message("ConsumerProtocolAssignment")
    data = b"\x00\x01" + spec.encode(1, {"assigned_partitions": [{"topic": "orders", "partitions": [2, 0]}],
                                         "user_data": None})
    assert consumer_assignment(data) == [("orders", 0), ("orders", 2)]
    assert consumer_assignment(b"") == [] and consumer_assignment(b"\x00\x01garbage") == []


def test_rates_sizes_and_durations() -> None:
    rates = Rates()
    assert rates.update(100, 50, now=10.0) == (0.0, 0.0)
    assert rates.update(200, 50, now=10.5) == (0.0, 0.0)  # under a second: the last rates
    assert rates.update(2100, 1050, now=12.0) == (1000.0, 500.0)
    assert (size(512), size(2048), size(None)) == ("512 B", "2.0 KiB", "-")
    assert (duration_ms(12), duration_ms(3400), duration_ms(302_000), duration_ms(7_380_000)) == \
        ("12 ms", "3.4 s", "5 min 02 s", "2 h 03 min")


def test_the_console_off_loopback_needs_a_password() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("") and not is_loopback("example.org")
    BrokerConfig(console="127.0.0.1:0").validate()
    with pytest.raises(ValueError, match="--console-password-file"):
        BrokerConfig(console="0.0.0.0:8080").validate()
    BrokerConfig(console="0.0.0.0:8080", console_password_file="pw").validate()
    with pytest.raises(ValueError, match="one of its own"):
        BrokerConfig(console="127.0.0.1:9644", admin_listen="127.0.0.1:9644").validate()
    with pytest.raises(ValueError, match="one of its own"):
        BrokerConfig(console="127.0.0.1:8081", schema_registry="127.0.0.1").validate()
    BrokerConfig(console="127.0.0.1:0", admin_listen="127.0.0.1:0").validate()  # port 0: a port of its own each


def test_the_shipped_htmx_is_the_pinned_release_with_its_licence() -> None:
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pinned = re.search(r"^HTMX_VERSION=(\S+)$", (root / "scripts/update-htmx.sh").read_text(), re.M).group(1)
    static = root / "broker/http/console/static"
    assert f'version:"{pinned}"' in (static / "htmx.min.js").read_text()
    assert (static / "htmx-LICENSE.txt").read_text().startswith("Zero-Clause BSD")


def test_the_trace_keeps_the_newest_events_and_never_waits_for_a_watcher() -> None:
    import trio

    from broker.observability.trace import Tracer

    tracer = Tracer(keep=3)
    for n in range(5):
        tracer.write({"n": n})
    assert [e["n"] for e in tracer.recent] == [2, 3, 4]

    async def main() -> None:
        slow = tracer.watch(buffer=2)
        for n in range(5, 10):
            tracer.write({"n": n})  # the third on is dropped for this watcher: write never blocks
        assert [slow.receive_nowait()["n"] for _ in range(2)] == [5, 6]
        with pytest.raises(trio.WouldBlock):
            slow.receive_nowait()
        tracer.unwatch(slow)
        tracer.write({"n": 10})
        assert [e["n"] for e in tracer.recent] == [8, 9, 10]

    trio.run(main)
    tracer.close()
