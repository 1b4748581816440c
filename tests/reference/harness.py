"""The differential harness: one scenario, two brokers, answers compared field by field.

A scenario is a function of a `Session`: it sends raw requests (`s.request`, encoded by minibroker's
`protocol/`, the same bytes to both brokers) and drives real clients (`s.note` records what they saw). Every
answer is recorded, in order, under the step name the scenario gives it. Run against Apache Kafka, the
recording is stored in `recorded/<release>/<scenario>.json`; run against minibroker (with that release's
version profile), each answer is compared with Kafka's after `normalize` has removed what legitimately
differs between two brokers: the one list of such fields is below (LEGITIMATE, IGNORED, IDENTITIES). What
minibroker answers differently on purpose, or has not fixed yet, is explained in known.py.

Answers steer the scenarios (a member id, a producer id, whether a topic exists yet), so a scenario that
takes another path on minibroker shows up as a difference of steps, not as a crash.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocol.header import ApiKey
from tests.reference.wire import ConnectionClosed, WireConnection

RECORDED = Path(__file__).parent / "recorded"

# ---- what legitimately differs between two brokers ---------------------------------------------------
# Fields compared for presence only (None or not), never for their value:
LEGITIMATE = {
    "throttle_time_ms": "quota throttling: 0 on both unless a quota throttles",
    "cluster_id": "random per cluster",
    "host": "each broker listens on its own address",
    "port": "each broker listens on its own port",
    "finalized_features_epoch": "Kafka: the offset of the metadata log record; minibroker has no such log",
    "session_id": "Fetch sessions (KIP-227) get random ids (0, no session, is compared as it is)",
    # broker clock readings: only whether one was given (-1 or a time) is compared
    "log_append_time_ms": "the broker's clock",
    "transaction_start_time_ms": "the broker's clock",
    "current_txn_start_time_ms": "the broker's clock",
    "marker_time": "the broker's clock (timestamp of a transaction marker batch)",
    "last_timestamp": "DescribeProducers: a producer's last write may be a marker, stamped by the broker",
}
# Not compared at all: free text that clients show at most (an error's code is what they act on; tools print
# the text, whatever it says). Whether there is a message at all varies as much.
IGNORED = {"error_message", "batch_index_error_message", "status_detail"}  # status_detail: StreamsGroupHeartbeat
COMPARE_MESSAGES = False  # `python -m tests.reference diff --messages`: compare them too, to read them
# Ids a broker makes up: compared by identity within a scenario (the first node id seen is node#0, the same
# value later is node#0 again), so that "the leader is the broker listed above" is still checked.
IDENTITIES = {
    "node_id": "node", "leader_id": "node", "broker_id": "node", "controller_id": "node",
    "replica_nodes": "node", "isr_nodes": "node", "offline_replicas": "node",
    "eligible_leader_replicas": "node", "last_known_elr": "node",
    "topic_id": "topic", "producer_id": "producer", "member_id": "member", "leader": "member-or-node",
}
# Lists whose order carries no meaning: sorted by the first of these fields their elements have. Synonyms
# are in precedence order: compared as they come.
ORDERED = {"synonyms"}
SORT_KEYS = ("api_key", "name", "topic", "topic_name", "partition_index", "partition", "index", "resource_name",
             "group_id", "transactional_id", "member_id", "broker_id", "node_id", "key")
NONE = {-1, None, "", "00000000-0000-0000-0000-000000000000"}


# ---- scenarios ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[Session], None]
    releases: tuple[str, ...]
    config: dict[str, str]  # broker settings (Kafka's names) both brokers get
    fresh: bool  # needs a broker of its own (it looks at every topic or group, or breaks the broker)
    brokers: int
    doc: str
    # Kafka's answer as minibroker should give it, where minibroker deliberately leaves something out
    # (APIs and features it does not serve yet: docs/compatibility/kafka4.md): (release, step, answer) -> answer.
    kafka_view: Callable[[str, str, Any], Any] | None = None
    # Applied to both answers: for values that legitimately differ inside a scenario's answers (addresses and
    # paths given as config values, say): (step, answer) -> answer.
    both_view: Callable[[str, Any], Any] | None = None


SCENARIOS: dict[str, Scenario] = {}


def scenario(*, releases: tuple[str, ...] | None = None, config: dict[str, str] | None = None, fresh: bool = False,
             brokers: int = 1, kafka_view: Callable[[str, str, Any], Any] | None = None,
             both_view: Callable[[str, Any], Any] | None = None,
             ) -> Callable[[Callable[[Session], None]], Callable[[Session], None]]:
    """Register a scenario; `releases` defaults to releases.DIFF_RELEASES."""
    from tests.reference.releases import DIFF_RELEASES

    def register(fn: Callable[[Session], None]) -> Callable[[Session], None]:
        name = fn.__name__
        doc = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        SCENARIOS[name] = Scenario(name, fn, tuple(releases or DIFF_RELEASES), dict(config or {}), fresh, brokers,
                                   doc, kafka_view, both_view)
        return fn

    return register


def load_scenarios() -> dict[str, Scenario]:
    import tests.reference.scenarios  # noqa: F401 - registers them

    return SCENARIOS


# ---- a scenario's view of one broker -----------------------------------------------------------------
@dataclass
class Exchange:
    step: str
    api: str  # "METADATA v12", or "client" for what a real client reported
    request: Any
    response: Any


_T0: list[int] = []


def current_t0() -> int:
    """The running session's base time for record timestamps."""
    return _T0[-1] if _T0 else int(time.time()) * 1000


def new_t0() -> int:
    """A base time for a run: now, to the second (a recording keeps it, so a replay writes the same)."""
    return int(time.time()) * 1000


class Session:
    """One run of one scenario against one broker: connections, requests, the recording."""

    def __init__(self, scenario: Scenario, bootstrap: str, release: str, kind: str, handle: Any = None,
                 t0: int | None = None) -> None:
        self.t0 = new_t0() if t0 is None else t0
        self.scenario = scenario
        self.bootstrap = bootstrap
        self.release = release
        self.kind = kind  # "kafka" or "minibroker"
        self.handle = handle  # the KafkaReference / BrokerThread, for scenarios that stop brokers
        self.exchanges: list[Exchange] = []
        self._conns: dict[str, WireConnection] = {}
        self._pending: dict[str, list[tuple[str, int, int, Any]]] = {}

    # names: the same on both brokers, unique per scenario on a shared broker
    def name(self, suffix: str = "") -> str:
        base = self.scenario.name.replace("_", "-")
        return f"{base}-{suffix}" if suffix else base

    def conn(self, name: str = "main", client_id: str | None = None) -> WireConnection:
        """The named connection, opened on first use (with `client_id` instead of the harness's own)."""
        if name not in self._conns:
            self._conns[name] = WireConnection(self.bootstrap, **({"client_id": client_id} if client_id else {}))
        return self._conns[name]

    def reconnect(self, name: str = "main") -> None:
        old = self._conns.pop(name, None)
        if old is not None:
            old.close()

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def request(self, step: str, api_key: int, version: int, body: dict[str, Any], conn: str = "main",
                record: bool = True, client_id: str | None = None) -> dict[str, Any] | None:
        """Send and wait for the answer; None (recorded as a closed connection) when the broker closes it."""
        self.send(step, api_key, version, body, conn, client_id)
        return self.receive(conn, record=record)

    def send(self, step: str, api_key: int, version: int, body: dict[str, Any], conn: str = "main",
             client_id: str | None = None) -> None:
        self.conn(conn, client_id).send(api_key, version, body)
        self._pending.setdefault(conn, []).append((step, api_key, version, body))

    def send_raw(self, step: str, api_key: int, version: int, encoded: bytes, conn: str = "main",
                 header_tags: bytes | None = None) -> None:
        self.conn(conn).send_raw(api_key, version, encoded, header_tags)
        summary: dict[str, Any] = {"raw_bytes": len(encoded)}
        if header_tags is not None:
            summary["header_tag_bytes"] = len(header_tags)
        self._pending.setdefault(conn, []).append((step, api_key, version, summary))

    def receive(self, conn: str = "main", record: bool = True) -> dict[str, Any] | None:
        step, api_key, version, body = self._pending[conn].pop(0)
        try:
            answer: dict[str, Any] | None = self.conn(conn).receive()
        except (ConnectionClosed, TimeoutError, OSError):
            answer = None
            self._pending.pop(conn, None)
            self.reconnect(conn)
        if record:
            self.exchanges.append(Exchange(step, f"{ApiKey(api_key).name} v{version}", summarize_request(body),
                                           {"connection_closed": True} if answer is None else answer))
        return answer

    def wait_for(self, step: str, api_key: int, version: int, body: dict[str, Any],
                 until: Callable[[dict[str, Any]], bool], timeout: float = 30.0, conn: str = "main",
                 record: bool = True) -> dict[str, Any]:
        """Repeat a request until `until(answer)`; only the last answer is recorded (the number of tries
        depends on timing, the final answer does not), or none with record=False (a wait for readiness)."""
        deadline = time.monotonic() + timeout
        while True:
            answer = self.request(step, api_key, version, body, conn, record=False)
            if answer is not None and until(answer):
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if record:
            self.exchanges.append(Exchange(step, f"{ApiKey(api_key).name} v{version}", summarize_request(body),
                                           {"connection_closed": True} if answer is None else answer))
        return answer or {}

    def note(self, step: str, outcome: Any, request: Any = None) -> None:
        """Record what a real client did or saw (JSON-ready)."""
        self.exchanges.append(Exchange(step, "client", request, outcome))

    def sleep_until(self, check: Callable[[], Any], timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                return value
            time.sleep(0.05)


def summarize_request(body: Any) -> Any:
    """A request body for the recording: bytes (record batches) as their size and digest."""
    if isinstance(body, bytes | bytearray | memoryview):
        data = bytes(body)
        return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()[:16]}
    if isinstance(body, dict):
        return {k: summarize_request(v) for k, v in body.items()}
    if isinstance(body, list | tuple):
        return [summarize_request(v) for v in body]
    if hasattr(body, "hex") and not isinstance(body, int | float | str):  # uuid.UUID
        return str(body)
    return body


# ---- records in answers: batches summarised --------------------------------------------------------
def summarize_records(hex_bytes: str) -> Any:
    """Fetch answers carry stored batches; compare what they hold, not their bytes (the CRC covers the
    producer's fields, the base offset and leader epoch do not, timestamps of markers are the broker's).
    A cut-off batch at the end (Kafka cuts a fetch at its byte limit; clients drop the tail) is noted."""
    from protocol.records import (
        BATCH_HEADER_SIZE,
        CONTROL_MASK,
        TIMESTAMP_TYPE_MASK,
        CorruptRecordError,
        decode_records,
        parse_batch_header,
    )

    data = bytes.fromhex(hex_bytes)
    from protocol.legacy_records import entry_magic

    if entry_magic(data) in (0, 1):
        return summarize_message_set(data)
    batches: list[dict[str, Any]] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < BATCH_HEADER_SIZE:
            break
        header = parse_batch_header(data, pos)
        end = pos + header.size
        if end > len(data):
            break
        control = bool(header.attributes & CONTROL_MASK)
        try:
            records: Any = [
                {"offset_delta": r.offset_delta, "timestamp_delta": r.timestamp_delta,
                 "key": None if r.key is None else r.key.hex(),
                 "value": None if r.value is None else r.value.hex(),
                 "headers": [[k, None if v is None else v.hex()] for k, v in r.headers]}
                for r in decode_records(data[pos:end])]
        except CorruptRecordError as exc:
            records = f"undecodable: {exc}"
        if control and isinstance(records, list):
            for r in records:  # the marker's value: version and coordinator epoch (the broker's)
                r["value"] = r["value"][:4] if r["value"] else r["value"]
        batches.append({
            "base_offset": header.base_offset, "partition_leader_epoch": header.partition_leader_epoch,
            "magic": header.magic, "attributes": header.attributes, "last_offset_delta": header.last_offset_delta,
            "base_timestamp": {"marker_time": header.base_timestamp} if control else header.base_timestamp,
            "max_timestamp": {"marker_time": header.max_timestamp} if control else
            {"log_append_time_ms": header.max_timestamp} if header.attributes & TIMESTAMP_TYPE_MASK else
            header.max_timestamp,
            "producer_id": header.producer_id, "producer_epoch": header.producer_epoch,
            "base_sequence": header.base_sequence, "records": records})
        pos = end
    return {"batches": batches, "cut_off_tail": pos < len(data)}


def summarize_message_set(data: bytes) -> Any:
    """A message set of format v0/v1 (Fetch v0-3, down-converted): each message's offset, magic,
    attributes, timestamp, key, value and CRC. A compressed wrapper's own CRC covers the compressed bytes
    (two gzip implementations write different ones): its inner messages are listed with theirs instead."""
    from protocol.legacy_records import (
        TIMESTAMP_TYPE_MASK,
        CorruptRecordError,
        inner_messages,
        iter_entries,
        parse_entry,
        stored_crc,
    )

    def plain_message(m: Any, crc: Any) -> dict[str, Any]:
        lat = m.magic == 1 and bool(m.attributes & TIMESTAMP_TYPE_MASK)
        return {"offset": m.offset, "magic": m.magic, "attributes": m.attributes,
                "timestamp": {"log_append_time_ms": m.timestamp} if lat else m.timestamp,
                "key": None if m.key is None else m.key.hex(), "value": None if m.value is None else m.value.hex(),
                "crc": crc}

    messages: list[dict[str, Any]] = []
    pos = 0
    try:
        for _offset, start, end in iter_entries(data):
            m = parse_entry(data, start, end)
            if m.compression:
                wrapper = plain_message(m, "<covers compressed bytes>")
                wrapper["value"] = None if m.value is None else "<compressed>"
                try:
                    wrapper["inner"] = [plain_message(i, "valid" if i.crc_valid else "invalid")
                                        for i in inner_messages(m)]
                except CorruptRecordError as exc:
                    wrapper["inner"] = f"undecodable: {exc}"
                messages.append(wrapper)
            else:
                messages.append(plain_message(m, stored_crc(data, start)))
            pos = end
    except CorruptRecordError as exc:
        messages.append({"undecodable": str(exc)})
        pos = len(data)
    return {"message_set": messages, "cut_off_tail": pos < len(data)}


def _prepare(value: Any, key: str | None = None) -> Any:
    """Answers as they are recorded: record sets summarised."""
    if isinstance(value, dict):
        return {k: _prepare(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_prepare(v) for v in value]
    if key == "records" and isinstance(value, str):
        return summarize_records(value)
    return value


def exchanges_as_json(exchanges: list[Exchange]) -> list[dict[str, Any]]:
    return [{"step": e.step, "api": e.api, "request": e.request, "response": _prepare(e.response)}
            for e in exchanges]


# ---- normalizing and comparing ----------------------------------------------------------------------
class _Identities:
    def __init__(self) -> None:
        self.seen: dict[tuple[str, Any], str] = {}
        self.counts: dict[str, int] = {}

    def name(self, kind: str, value: Any) -> Any:
        if value in NONE or isinstance(value, bool):
            return value
        key = (kind, value)
        if key not in self.seen:
            n = self.counts.get(kind, 0)
            self.counts[kind] = n + 1
            self.seen[key] = f"<{kind}#{n}>"
        return self.seen[key]


def _sort_key(items: list[Any]) -> str | None:
    """The field unordered lists are sorted by: the first of SORT_KEYS that every element has, with no two
    elements sharing a value (a list with repeats, such as synonyms in precedence order, keeps its order)."""
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    for key in SORT_KEYS:
        if all(key in i and isinstance(i[key], int | str) for i in items):
            return key if len({i[key] for i in items}) == len(items) else None
    return None


def normalize(value: Any, ids: _Identities | None = None, key: str | None = None) -> Any:
    """What is compared: LEGITIMATE fields as present/absent, IDENTITIES as first-seen names, unordered
    lists sorted."""
    ids = ids or _Identities()
    if key in IGNORED and not COMPARE_MESSAGES:
        return "<not compared>"
    if key in LEGITIMATE:
        if isinstance(value, int) and not isinstance(value, bool) and key not in ("port", "throttle_time_ms"):
            return value if value < 0 or (value == 0 and key == "session_id") else "<set>"
        return None if value is None else "<set>"
    if key in IDENTITIES:
        kind = IDENTITIES[key]
        if kind == "member-or-node":
            kind = "member" if isinstance(value, str) else "node"
        if isinstance(value, list):
            return [ids.name(kind, v) for v in value]
        if not isinstance(value, dict | list):
            return ids.name(kind, value)
    if isinstance(value, dict):
        return {k: normalize(v, ids, k) for k, v in value.items()}
    if isinstance(value, list):
        # Elements are normalized first and sorted by their normalized key: made-up ids sort by the
        # identity they were first seen as (member#0 before member#1), not by their random values.
        items = [normalize(v, ids, None) for v in value]
        sort_by = None if key in ORDERED else _sort_key(items)
        return sorted(items, key=lambda i: (str(type(i[sort_by])), i[sort_by])) if sort_by else items
    return value


@dataclass
class Difference:
    step: str
    path: str
    kafka: Any
    minibroker: Any
    known: str | None = None  # why, when the difference is explained (known.py)

    def line(self) -> str:
        why = f"   [{self.known}]" if self.known else ""
        return f"{self.step}: {self.path}: Kafka {_short(self.kafka)}, minibroker {_short(self.minibroker)}{why}"


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


def _diff(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                out.append((f"{path}.{k}", a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                _diff(a[k], b[k], f"{path}.{k}", out)
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            key = _sort_key(a) or _sort_key(b)
            if key and all(key in i for i in a + b):
                # keyed elements: one difference naming the missing and extra keys, then the common ones
                amap, bmap = {i[key]: i for i in a}, {i[key]: i for i in b}
                only_a = sorted((k for k in amap if k not in bmap), key=lambda k: (str(type(k)), k))
                only_b = sorted((k for k in bmap if k not in amap), key=lambda k: (str(type(k)), k))
                out.append((f"{path}[{key}s]", {"only": only_a} if only_a else "-",
                            {"only": only_b} if only_b else "-"))
                for k in amap:
                    if k in bmap:
                        _diff(amap[k], bmap[k], f"{path}[{key}={k}]", out)
            else:
                out.append((f"{path}[len]", len(a), len(b)))
            return
        key = _sort_key(a)
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            label = f"[{key}={x[key]}]" if key and isinstance(x, dict) and key in x else f"[{i}]"
            _diff(x, y, path + label, out)
        return
    if a != b:
        out.append((path, a, b))


def compare(kafka: list[dict[str, Any]], mini: list[dict[str, Any]],
            view: Callable[[str, Any], Any] | None = None,
            both: Callable[[str, Any], Any] | None = None) -> tuple[int, list[Difference]]:
    """(answers compared, differences) between Kafka's recorded exchanges and minibroker's; `view(step,
    answer)` turns Kafka's answer into what minibroker is meant to answer, `both` is applied to both."""
    kafka_ids, mini_ids = _Identities(), _Identities()
    differences: list[Difference] = []
    compared = 0
    for i in range(max(len(kafka), len(mini))):
        k = kafka[i] if i < len(kafka) else None
        m = mini[i] if i < len(mini) else None
        if k is None or m is None or k["step"] != m["step"] or k["api"] != m["api"]:
            differences.append(Difference(
                (k or m)["step"], "<steps>", None if k is None else f"{k['step']} ({k['api']})",
                None if m is None else f"{m['step']} ({m['api']})"))
            break  # the scenario took another path: what follows is not comparable
        compared += 1
        raw: list[tuple[str, Any, Any]] = []
        expected = view(k["step"], k["response"]) if view else k["response"]
        got = m["response"]
        if both is not None:
            expected, got = both(k["step"], expected), both(m["step"], got)
        _diff(normalize(expected, kafka_ids), normalize(got, mini_ids), "", raw)
        differences += [Difference(k["step"], path.lstrip(".") or "<answer>", a, b) for path, a, b in raw]
    return compared, differences


# ---- recordings -----------------------------------------------------------------------------------
def recording_path(release: str, name: str) -> Path:
    return RECORDED / release / f"{name}.json"


def save_recording(release: str, scenario: Scenario, reference: str, exchanges: list[Exchange], t0: int) -> Path:
    path = recording_path(release, scenario.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"scenario": scenario.name, "release": release, "kafka": reference, "config": scenario.config,
            "t0": t0, "exchanges": exchanges_as_json(exchanges)}
    path.write_text(dumps(data) + "\n")
    return path


def dumps(value: Any, indent: int = 0, width: int = 110) -> str:
    """JSON with one line for every object or list that fits in `width`: recordings stay readable in a diff."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(flat) + indent <= width or not isinstance(value, dict | list) or not value:
        return flat
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {dumps(v, indent + 1, width).lstrip()}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + dumps(v, indent + 1, width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def load_recording(release: str, name: str) -> dict[str, Any] | None:
    path = recording_path(release, name)
    return json.loads(path.read_text()) if path.exists() else None


def recordings() -> Iterator[tuple[str, str]]:
    """(release, scenario name) of every recording in the repo."""
    for path in sorted(RECORDED.glob("*/*.json")):
        yield path.parent.name, path.stem


# ---- running a scenario on either broker -----------------------------------------------------------
def run(scenario: Scenario, bootstrap: str, release: str, kind: str, handle: Any = None,
        t0: int | None = None) -> tuple[list[Exchange], int]:
    """Run the scenario; (its exchanges, the base time its records were written with)."""
    session = Session(scenario, bootstrap, release, kind, handle, t0)
    _T0.append(session.t0)
    try:
        scenario.run(session)
    finally:
        _T0.pop()
        session.close()
    return session.exchanges, session.t0


def minibroker_settings(release: str, config: dict[str, str]) -> dict[str, Any]:
    """BrokerThread keyword arguments for a scenario: the release's version profile and the scenario's
    broker settings by Kafka's names (every one must be a minibroker option: both brokers get it)."""
    from broker.config.options import OPTIONS_BY_NAME, convert_option, is_security_setting
    from tests.reference.kafka import SHARED_CONFIG

    settings: dict[str, Any] = {"kafka_version": release, "fsync": "none"}
    for name, value in {**SHARED_CONFIG, **config}.items():
        if is_security_setting(name):  # kept by name (delegation.token.*, sasl.*...)
            settings.setdefault("security_settings", {})[name] = value
            continue
        option = OPTIONS_BY_NAME.get(name)
        if option is None:
            raise ValueError(f"scenario setting {name} is not a minibroker option")
        settings[option.attr] = convert_option(option, value)
    return settings


def run_on_minibroker(scenario: Scenario, release: str, data_dir: Path, t0: int | None = None) -> list[Exchange]:
    """The scenario against a fresh minibroker with the release's profile; `t0`: the base time of the run it
    is compared with (its records carry the same timestamps)."""
    from broker.testkit import BrokerThread

    broker = BrokerThread(data_dir, **minibroker_settings(release, scenario.config)).start()
    try:
        return run(scenario, broker.bootstrap, release, "minibroker", broker, t0)[0]
    finally:
        broker.stop()


@dataclass
class Outcome:
    release: str
    scenario: str
    compared: int
    differences: list[Difference] = field(default_factory=list)


def check(release: str, scenario: Scenario, kafka_exchanges: list[dict[str, Any]],
          mini_exchanges: list[Exchange]) -> Outcome:
    from tests.reference.known import explain

    view = None
    if scenario.kafka_view is not None:
        kafka_view = scenario.kafka_view

        def view(step: str, answer: Any) -> Any:
            return kafka_view(release, step, answer)

    compared, differences = compare(kafka_exchanges, exchanges_as_json(mini_exchanges), view, scenario.both_view)
    for d in differences:
        d.known = explain(release, scenario.name, d)
    return Outcome(release, scenario.name, compared, differences)
