"""Fetch sessions (KIP-227): opening one, incremental fetches (what is answered, what is not), forgetting and
adding partitions, long polls, the session errors, closing; the cache's size (its 8 shards)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import (
    FETCH,
    METADATA,
    PRODUCE,
    batch,
    create_topic,
    metadata_body,
    produce,
    produce_body,
)

SESSION_ID_RANGE = 0x7FFFFFFF // 8  # Kafka's ids: shard n draws from [n * range, (n + 1) * range)


def _partitions(items: list[tuple[int, int]]) -> list[dict[str, Any]]:
    return [{"partition": p, "current_leader_epoch": -1, "fetch_offset": offset, "last_fetched_epoch": -1,
             "log_start_offset": -1, "partition_max_bytes": 1 << 20} for p, offset in items]


def _body(topic: str | uuid.UUID, session_id: int, epoch: int, items: Sequence[tuple[int, int]] = (),
          forgotten: Sequence[int] = (), max_wait_ms: int = 0, min_bytes: int = 0) -> dict[str, Any]:
    """A Fetch body of one topic (by name, or by id for v13+) in session `session_id` at `epoch`."""
    by_id = isinstance(topic, uuid.UUID)
    name_or_id = {"topic_id": topic} if by_id else {"topic": topic}
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": 50 << 20,
            "isolation_level": 0, "session_id": session_id, "session_epoch": epoch,
            "topics": [name_or_id | {"partitions": _partitions(list(items))}] if items else [],
            "forgotten_topics_data": [name_or_id | {"partitions": list(forgotten)}] if forgotten else [],
            "rack_id": ""}


class _Session:
    """A client's side of one fetch session: the id it was given and the epoch of its next fetch."""

    def __init__(self, s: Session, topic: str | uuid.UUID, version: int = 12) -> None:
        self.s, self.topic, self.version = s, topic, version
        self.id, self.epoch = 0, 0

    def open(self, step: str, items: list[tuple[int, int]]) -> dict[str, Any] | None:
        answer = self.s.request(step, FETCH, self.version, _body(self.topic, self.id, 0, items))
        self.id = answer["session_id"] if answer else 0
        self.epoch = 1
        return answer

    def fetch(self, step: str, items: Sequence[tuple[int, int]] = (), forgotten: Sequence[int] = (), *,
              epoch: int | None = None, version: int | None = None, **kwargs: Any) -> dict[str, Any] | None:
        """An incremental fetch; the epoch moves on only when the broker accepted it."""
        answer = self.s.request(step, FETCH, version or self.version,
                                _body(self.topic, self.id, self.epoch if epoch is None else epoch, items, forgotten,
                                      **kwargs))
        if epoch is None and answer and answer["error_code"] == 0:
            self.epoch += 1
        return answer


@scenario()
def fetch_sessions(s: Session) -> None:
    """Fetch v12 sessions over three partitions: only what changed is answered; forgetting and adding
    partitions; an error partition answered on every fetch; a long poll woken by a produce; the wrong epoch, an
    unknown session, a session of topic names fetched by v13; a full fetch closing and reopening; closing with
    the final epoch; a session closed by forgetting all its partitions."""
    name = s.name("data")
    create_topic(s, "create", name, partitions=3)
    produce(s, "p0: three records", name, batch([b"a0", b"a1", b"a2"]))
    session = _Session(s, name)
    session.open("open: every partition from 0", [(0, 0), (1, 0), (2, 0)])
    s.note("a session was opened", session.id != 0)
    session.fetch("p0 read to its end: nothing to answer", [(0, 3)])
    produce(s, "p1: one record", name, batch([b"b0"]), partition=1)
    session.fetch("p1 has a record, no partition named")
    session.fetch("p1 read to its end", [(1, 1)])
    session.fetch("the same epoch again", epoch=session.epoch - 1)
    session.fetch("the next epoch after the error: the session is still there")
    session.fetch("forget p2", forgotten=[2])
    produce(s, "p2: two records", name, batch([b"c0", b"c1"]), partition=2)
    session.fetch("p2 forgotten: not read")
    session.fetch("p2 added again from 0", [(2, 0)])
    session.fetch("p2 read to its end, an unknown partition added", [(2, 2), (9, 0)])
    session.fetch("the unknown partition again")
    session.fetch("forget the unknown partition", forgotten=[9])
    session.fetch("a long poll with nothing new", max_wait_ms=100, min_bytes=1)
    s.send("a long poll woken by a produce", FETCH, 12,
           _body(name, session.id, session.epoch, max_wait_ms=20_000, min_bytes=1))
    s.request("p0: a record while the fetch waits", PRODUCE, 9, produce_body(name, batch([b"a3"])), conn="other")
    if (s.receive() or {}).get("error_code") == 0:
        session.epoch += 1
    session.fetch("v13 on a session of topic names", version=13)
    session.fetch("the session after the v13 error", [(0, 4)])
    old = session.id
    session.open("a full fetch naming the session: a new session", [(0, 4), (1, 1)])
    s.note("the new session has another id", session.id not in (0, old))
    s.request("the replaced session is gone", FETCH, 12, _body(name, old, session.epoch))
    produce(s, "p1: a record", name, batch([b"b1"]), partition=1)
    closed = s.request("the final epoch: the session closes, the fetch is answered", FETCH, 12,
                       _body(name, session.id, -1, [(0, 4), (1, 1)]))
    s.note("no session after the final epoch", (closed or {}).get("session_id") == 0)
    s.request("the closed session", FETCH, 12, _body(name, session.id, session.epoch))
    emptied = _Session(s, name)
    emptied.open("open on p0", [(0, 4)])
    emptied.fetch("forget every partition: the session closes", forgotten=[0])
    s.request("the session that had no partitions left", FETCH, 12, _body(name, emptied.id, emptied.epoch))
    s.request("an incremental fetch of session 0", FETCH, 12, _body(name, 0, 1))


@scenario()
def fetch_sessions_by_topic_id(s: Session) -> None:
    """Fetch v13 sessions name topics by id: open, incremental fetches, forgetting by id; a v12 fetch of the
    session is refused."""
    name = s.name("data")
    create_topic(s, "create", name, partitions=2)
    answer = s.request("metadata", METADATA, 12, metadata_body(name)) or {}
    topic_id = uuid.UUID(str(answer["topics"][0]["topic_id"]))
    produce(s, "p0: two records", name, batch([b"a0", b"a1"]))
    session = _Session(s, topic_id, version=13)
    session.open("open v13", [(0, 0), (1, 0)])
    s.note("a session was opened", session.id != 0)
    session.fetch("p0 read to its end", [(0, 2)])
    produce(s, "p1: a record", name, batch([b"b0"]), partition=1)
    session.fetch("p1 has a record")
    session.fetch("v12 on a session of topic ids", version=12)
    session.fetch("forget p1 by topic id", forgotten=[1])
    produce(s, "p1: another record", name, batch([b"b1"]), partition=1)
    session.fetch("p1 forgotten: not read")


def _open_many(s: Session, name: str, count: int, first: int = 1) -> list[int]:
    """`count` sessions opened one after another (new sessions go to the 8 shards in turn); each one's shard
    is recorded, -1 for none given."""
    ids = []
    for n in range(first, first + count):
        answer = s.request(f"open session {n}", FETCH, 12, _body(name, 0, 0, [(0, 0)])) or {}
        ids.append(answer.get("session_id", 0))
        s.note(f"session {n}: its shard", ids[-1] // SESSION_ID_RANGE if ids[-1] else -1)
    return ids


@scenario(config={"max.incremental.fetch.session.cache.slots": "8"}, fresh=True)
def fetch_session_cache_full(s: Session) -> None:
    """max.incremental.fetch.session.cache.slots=8: one session per shard. The ninth consumer gets none (a
    consumer's session younger than 2 minutes is not evicted); a closed session frees its shard's slot."""
    name = s.name("data")
    create_topic(s, "create", name)
    produce(s, "one record", name, batch([b"a"]))
    ids = _open_many(s, name, 9)
    if ids[1]:
        s.request("close session 2 (shard 1)", FETCH, 12, _body(name, ids[1], -1, [(0, 0)]))
    _open_many(s, name, 1, first=10)
    s.request("session 1 still fetches", FETCH, 12, _body(name, ids[0], 1))


@scenario(config={"max.incremental.fetch.session.cache.slots": "7"}, fresh=True)
def fetch_session_cache_below_shards(s: Session) -> None:
    """max.incremental.fetch.session.cache.slots=7: fewer slots than shards, no session is ever opened."""
    name = s.name("data")
    create_topic(s, "create", name)
    produce(s, "one record", name, batch([b"a"]))
    _open_many(s, name, 2)
