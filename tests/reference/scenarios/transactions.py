"""The transaction coordinator's error paths (invalid transitions, CONCURRENT_TRANSACTIONS, PRODUCER_FENCED,
INVALID_PRODUCER_EPOCH, timeouts) and what read_committed consumers see of open and aborted transactions.
Transaction version 1 requests (AddPartitionsToTxn v3, EndTxn v3), as clients send them."""

from __future__ import annotations

from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    DESCRIBE_PRODUCERS,
    DESCRIBE_TRANSACTIONS,
    END_TXN,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    LIST_TRANSACTIONS,
    TXN_OFFSET_COMMIT,
    batch,
    create_topic,
    fetch,
    list_offsets,
    produce,
)


def find_txn_coordinator(s: Session, txn: str) -> None:
    """Until the transaction coordinator is ready: Kafka creates __transaction_state on the first lookup and
    loads its partition a moment after FindCoordinator names the coordinator."""
    s.wait_for("find coordinator", FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [txn]},
               until=lambda a: a["coordinators"][0]["error_code"] == 0, timeout=60)
    s.wait_for("coordinator loaded", DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [txn]},
               until=lambda a: a["transaction_states"][0]["error_code"] not in (14, 15, 16), timeout=60,
               record=False)


def init(s: Session, step: str, txn: str | None, timeout_ms: int = 60000, pid: int = -1, epoch: int = -1,
         version: int = 4) -> dict[str, Any]:
    return s.request(step, INIT_PRODUCER_ID, version, {"transactional_id": txn, "transaction_timeout_ms": timeout_ms,
                                                       "producer_id": pid, "producer_epoch": epoch}) or {}


def first_init(s: Session, step: str, txn: str, timeout_ms: int = 60000) -> dict[str, Any]:
    """The first InitProducerId of an id: retried while the coordinator is still loading its partition
    (Kafka 3.9 answers COORDINATOR_LOAD_IN_PROGRESS a while after FindCoordinator)."""
    body = {"transactional_id": txn, "transaction_timeout_ms": timeout_ms, "producer_id": -1, "producer_epoch": -1}
    return s.wait_for(step, INIT_PRODUCER_ID, 4, body, until=lambda a: a["error_code"] not in (14, 15, 16),
                      timeout=60)


def init_until_ready(s: Session, step: str, txn: str, timeout_ms: int = 60000) -> dict[str, Any]:
    """InitProducerId retried while the coordinator answers CONCURRENT_TRANSACTIONS (an abort it started
    is being completed) or is loading: only the final answer is recorded."""
    body = {"transactional_id": txn, "transaction_timeout_ms": timeout_ms, "producer_id": -1, "producer_epoch": -1}
    return s.wait_for(step, INIT_PRODUCER_ID, 4, body, until=lambda a: a["error_code"] not in (51, 14, 15),
                      timeout=60)


def add_partitions(s: Session, step: str, txn: str, pid: int, epoch: int, topic: str,
                   partitions: tuple[int, ...] = (0,)) -> dict[str, Any]:
    return s.request(step, ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": txn, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": topic, "partitions": list(partitions)}]}) or {}


def end(s: Session, step: str, txn: str, pid: int, epoch: int, commit: bool) -> dict[str, Any]:
    return s.request(step, END_TXN, 3, {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch,
                                        "committed": commit}) or {}


def txn_batch(values: list[bytes], pid: int, epoch: int, sequence: int) -> bytes:
    return batch(values, producer_id=pid, producer_epoch=epoch, base_sequence=sequence, is_transactional=True)


def describe_txn(s: Session, step: str, txn: str) -> dict[str, Any]:
    return s.request(step, DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [txn]}) or {}


def wait_state(s: Session, step: str, txn: str, states: set[str], timeout: float = 60) -> dict[str, Any]:
    return s.wait_for(step, DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [txn]},
                      until=lambda a: a["transaction_states"][0]["transaction_state"] in states, timeout=timeout)


@scenario()
def txn_errors(s: Session) -> None:
    """InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit with bad ids, epochs
    and states; an open transaction fenced by a new instance."""
    topic, txn, group = s.name("t"), s.name("txn"), s.name("g")
    create_topic(s, "create", topic, partitions=2)
    find_txn_coordinator(s, txn)
    first_init(s, "timeout above transaction.max.timeout.ms", txn, timeout_ms=3_600_000)
    init(s, "timeout 0", txn, timeout_ms=0)
    first = first_init(s, "init", txn)
    pid, epoch = first.get("producer_id", -1), first.get("producer_epoch", -1)
    end(s, "commit with nothing added", txn, pid, epoch, True)
    end(s, "abort with nothing added", txn, pid, epoch, False)
    add_partitions(s, "add: unknown transactional id", s.name("other"), pid, epoch, topic)
    add_partitions(s, "add: wrong producer id", txn, pid + 1000, epoch, topic)
    add_partitions(s, "add: newer epoch", txn, pid, epoch + 1, topic)
    add_partitions(s, "add: unknown partition", txn, pid, epoch, topic, (0, 9))
    add_partitions(s, "add: unknown topic", txn, pid, epoch, s.name("nope"))
    produce(s, "transactional produce before adding", topic, txn_batch([b"early"], pid, epoch, 0), transactional_id=txn)
    add_partitions(s, "add partition 0", txn, pid, epoch, topic)
    add_partitions(s, "add partition 0 again", txn, pid, epoch, topic)
    produce(s, "transactional produce", topic, txn_batch([b"t0"], pid, epoch, 0), transactional_id=txn)
    produce(s, "non-transactional batch of the same producer", topic,
            batch([b"plain"], producer_id=pid, producer_epoch=epoch, base_sequence=1))
    produce(s, "transactional produce to a partition not added", topic, txn_batch([b"t1"], pid, epoch, 0),
            partition=1, transactional_id=txn)
    s.request("add offsets", ADD_OFFSETS_TO_TXN, 3, {"transactional_id": txn, "producer_id": pid,
                                                     "producer_epoch": epoch, "group_id": group})
    s.request("txn offset commit", TXN_OFFSET_COMMIT, 3, {
        "transactional_id": txn, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
        "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                                            "committed_metadata": ""}]}]})
    # (A TxnOffsetCommit with a newer epoch is accepted by Kafka 3.9 and then fences the transaction's own
    # marker on __consumer_offsets: the abort below would never complete. Not a scenario for a shared broker.)
    describe_txn(s, "describe ongoing", txn)
    s.request("list ongoing", LIST_TRANSACTIONS, 1, {"state_filters": ["Ongoing"], "producer_id_filters": [pid],
                                                     "duration_filter": -1})
    s.request("describe producers", DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0, 1]}]})
    end(s, "commit with a newer epoch", txn, pid, epoch + 1, True)
    init(s, "a new instance while the transaction is open", txn)
    fenced = init_until_ready(s, "the new instance, once the abort is done", txn)
    new_epoch = fenced.get("producer_epoch", -1)
    s.note("epoch after fencing", {"bumped_by": new_epoch - epoch,
                                   "same_producer_id": fenced.get("producer_id") == pid})
    add_partitions(s, "old instance adds a partition", txn, pid, epoch, topic)
    produce(s, "old instance produces", topic, txn_batch([b"zombie"], pid, epoch, 1), transactional_id=txn)
    end(s, "old instance commits", txn, pid, epoch, True)
    s.request("old instance adds offsets", ADD_OFFSETS_TO_TXN, 3, {
        "transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "group_id": group})
    add_partitions(s, "new instance adds partition 1", txn, pid, new_epoch, topic, (1,))
    end(s, "new instance commits", txn, pid, new_epoch, True)
    wait_state(s, "commit completed", txn, {"CompleteCommit"})
    end(s, "commit again (a retry)", txn, pid, new_epoch, True)
    end(s, "abort after commit", txn, pid, new_epoch, False)
    s.request("list complete", LIST_TRANSACTIONS, 1, {"state_filters": ["CompleteCommit"],
                                                      "producer_id_filters": [pid], "duration_filter": -1})
    init(s, "idempotent init (no transactional id) v4", None)
    describe_txn(s, "describe an unknown id", s.name("unknown"))


@scenario()
def txn_verification_order(s: Session) -> None:
    """KIP-890: a transaction's first batch on a partition fails its verification (the partition was not added
    yet); a later sequence, verified since, is refused (OUT_OF_ORDER_SEQUENCE_NUMBER) until the first one is
    written, so that it can never get ahead of it. Both then go in order."""
    topic, txn = s.name("t"), s.name("txn")
    create_topic(s, "create", topic)
    find_txn_coordinator(s, txn)
    first = first_init(s, "init", txn)
    pid, epoch = first.get("producer_id", -1), first.get("producer_epoch", -1)
    produce(s, "sequence 0 before adding: not verified", topic, txn_batch([b"s0"], pid, epoch, 0),
            transactional_id=txn)
    add_partitions(s, "add partition 0", txn, pid, epoch, topic)
    produce(s, "sequence 1 ahead of sequence 0", topic, txn_batch([b"s1"], pid, epoch, 1), transactional_id=txn)
    produce(s, "sequence 0 again", topic, txn_batch([b"s0"], pid, epoch, 0), transactional_id=txn)
    produce(s, "sequence 1 again", topic, txn_batch([b"s1"], pid, epoch, 1), transactional_id=txn)
    end(s, "commit", txn, pid, epoch, True)
    wait_state(s, "commit completed", txn, {"CompleteCommit"})
    fetch(s, "read_committed sees both in order", topic, 0, isolation_level=1)


@scenario(config={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"})
def txn_timeout(s: Session) -> None:
    """A transaction open for longer than its timeout is aborted by the broker with the epoch bumped: the
    producer is fenced."""
    topic, txn = s.name("t"), s.name("txn")
    create_topic(s, "create", topic)
    find_txn_coordinator(s, txn)
    first = first_init(s, "init with a 1 s timeout", txn, timeout_ms=1000)
    pid, epoch = first.get("producer_id", -1), first.get("producer_epoch", -1)
    add_partitions(s, "add", txn, pid, epoch, topic)
    produce(s, "produce", topic, txn_batch([b"doomed"], pid, epoch, 0), transactional_id=txn)
    answer = wait_state(s, "aborted by the broker", txn, {"CompleteAbort"})
    states = answer.get("transaction_states") or [{}]
    s.note("epoch bumped by the abort", {"bumped_by": states[0].get("producer_epoch", -1) - epoch})
    add_partitions(s, "producer adds after the timeout", txn, pid, epoch, topic)
    end(s, "producer commits after the timeout", txn, pid, epoch, True)
    produce(s, "producer produces after the timeout", topic, txn_batch([b"late"], pid, epoch, 1),
            transactional_id=txn)
    fetch(s, "read_committed sees nothing", topic, 0, isolation_level=1)
    fetch(s, "read_uncommitted sees the aborted batch and the marker", topic, 0)
    again = init(s, "init again", txn, timeout_ms=1000)
    s.note("epoch after init", {"bumped_by": again.get("producer_epoch", -1) - epoch})


@scenario()
def read_committed(s: Session) -> None:
    """Fetch and ListOffsets under read_committed with an open, an aborted and a committed transaction
    between plain records."""
    topic, txn = s.name("t"), s.name("txn")
    create_topic(s, "create", topic)
    find_txn_coordinator(s, txn)
    first = first_init(s, "init", txn)
    pid, epoch = first.get("producer_id", -1), first.get("producer_epoch", -1)
    produce(s, "plain 0", topic, batch([b"p0"]))
    add_partitions(s, "add", txn, pid, epoch, topic)
    produce(s, "txn 1 (to abort)", topic, txn_batch([b"a1", b"a2"], pid, epoch, 0), transactional_id=txn)
    produce(s, "plain 3", topic, batch([b"p3"]))
    fetch(s, "read_committed while open", topic, 0, isolation_level=1)
    fetch(s, "read_uncommitted while open", topic, 0)
    list_offsets(s, "latest, read_committed, while open", topic, -1, isolation_level=1)
    list_offsets(s, "latest, read_uncommitted, while open", topic, -1)
    end(s, "abort", txn, pid, epoch, False)
    wait_state(s, "abort completed", txn, {"CompleteAbort"})
    s.wait_for("lso after the abort", 2, 7, {"replica_id": -1, "isolation_level": 1, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}]},
               until=lambda a: a["topics"][0]["partitions"][0]["offset"] == 5)
    fetch(s, "read_committed after the abort", topic, 0, isolation_level=1)
    fetch(s, "read_committed from inside the aborted transaction", topic, 2, isolation_level=1)
    add_partitions(s, "add again", txn, pid, epoch, topic)
    produce(s, "txn 2 (to commit)", topic, txn_batch([b"c1"], pid, epoch, 2), transactional_id=txn)
    end(s, "commit", txn, pid, epoch, True)
    wait_state(s, "commit completed", txn, {"CompleteCommit"})
    s.wait_for("lso after the commit", 2, 7, {"replica_id": -1, "isolation_level": 1, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}]},
               until=lambda a: a["topics"][0]["partitions"][0]["offset"] == 7)
    fetch(s, "read_committed after the commit", topic, 0, isolation_level=1)
    fetch(s, "read_committed, first batch only", topic, 0, isolation_level=1, partition_max_bytes=10)
    s.request("describe producers", DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]})
