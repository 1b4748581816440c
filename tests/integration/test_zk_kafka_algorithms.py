"""zk/replica_assignment.py and zk/leader_election.py against Kafka 3.9's own code (AdminUtils,
AdminZkClient.createNewPartitionsAssignment, PartitionLeaderElectionAlgorithms), called by a small Java
program on a few thousand generated cases: same answers, same refusals."""

from __future__ import annotations

import json
import random

import pytest

from tests import kafka_jars, zk_oracle
from zk import errors
from zk.leader_election import (
    controlled_shutdown_partition_leader_election,
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)
from zk.replica_assignment import BrokerMetadata, assign_replicas_to_brokers, new_partitions_assignment

KAFKA_ERRORS = {
    "InvalidPartitionsException": errors.InvalidPartitionsError,
    "InvalidReplicationFactorException": errors.InvalidReplicationFactorError,
    "InvalidReplicaAssignmentException": errors.InvalidReplicaAssignmentError,
    "BrokerNotAvailableException": errors.BrokerNotAvailableError,
    "AdminOperationException": errors.AdminOperationError,
}


def _brokers(rng: random.Random) -> list[list]:
    ids = rng.sample(range(0, 30), rng.randint(1, 8))
    if rng.random() < 0.5:
        ids.sort()  # Kafka's callers sort by id; the functions take any order
    style = rng.choice(["none", "all", "all", "some"])
    racks = [f"rack{rng.randint(1, 3)}" for _ in ids]
    if style == "none":
        racks = [None] * len(ids)
    elif style == "some":
        racks[rng.randrange(len(ids))] = None
    return [[i, r] for i, r in zip(ids, racks, strict=True)]


def _cases(seed: int = 20241025) -> list[dict]:
    rng = random.Random(seed)
    cases = []
    for _ in range(1500):
        brokers = _brokers(rng)
        case = {"op": "assign", "brokers": brokers, "n": rng.choice([0, *range(1, 25)]),
                "rf": rng.randint(0, len(brokers) + 1), "startPartition": rng.randint(-1, 12)}
        if rng.random() < 0.4:
            case.update(fixed=-1, seed=rng.randrange(2**40))
        else:
            case.update(fixed=rng.randrange(len(brokers)), seed=None)
        cases.append(case)
    for _ in range(500):
        brokers = sorted(_brokers(rng))
        if any(r is None for _, r in brokers) and any(r is not None for _, r in brokers):
            brokers = [[i, None] for i, _ in brokers]
        rf = rng.randint(1, len(brokers))
        existing_n = rng.randint(1, 10)
        existing = {str(p): rng.sample([b for b, _ in brokers], rf) for p in range(existing_n)}
        given = None
        num = existing_n + rng.randint(-1, 8)
        if rng.random() < 0.3 and num > existing_n:
            pool = [b for b, _ in brokers] + [99]
            given = {str(p): rng.sample(pool, rng.choice([rf, rf, rf - 1 if rf > 1 else rf + 1]))
                     for p in range(existing_n, num)}
        cases.append({"op": "grow", "topic": "t", "existing": existing, "brokers": brokers, "num": num,
                      "given": given})
    for _ in range(2000):
        replicas = rng.sample(range(1, 7), rng.randint(1, 5))
        isr = [r for r in replicas if rng.random() < 0.6] + ([9] if rng.random() < 0.1 else [])
        live = [b for b in range(1, 8) if rng.random() < 0.6]
        op = rng.choice(["offline", "reassign", "preferred", "shutdown"])
        case = {"op": op, "assignment": replicas, "isr": isr, "live": live}
        if op == "offline":
            case["unclean"] = rng.random() < 0.5
        if op == "shutdown":
            case["shuttingDown"] = [b for b in live if rng.random() < 0.4]
        cases.append(case)
    return cases


def _ours(case: dict):
    op = case["op"]
    if op == "assign":
        brokers = [BrokerMetadata(i, r) for i, r in case["brokers"]]
        if case["seed"] is not None:
            start, shift = case["draws"]
        else:
            start = shift = case["fixed"]
        result = assign_replicas_to_brokers(brokers, case["n"], case["rf"], start_index=start, replica_shift=shift,
                                            start_partition_id=case["startPartition"])
        return {str(p): r for p, r in result.items()}
    if op == "grow":
        brokers = [BrokerMetadata(i, r) for i, r in case["brokers"]]
        existing = {int(p): r for p, r in case["existing"].items()}
        given = {int(p): r for p, r in case["given"].items()} if case["given"] is not None else None
        result = new_partitions_assignment(case["topic"], existing, brokers, case["num"], given)
        return {str(p): r for p, r in result.items()}
    assignment, isr, live = case["assignment"], set(case["isr"]), set(case["live"])
    if op == "offline":
        return offline_partition_leader_election(assignment, isr, live, case["unclean"])
    if op == "reassign":
        return reassign_partition_leader_election(assignment, isr, live)
    if op == "preferred":
        return preferred_replica_partition_leader_election(assignment, isr, live)
    return controlled_shutdown_partition_leader_election(assignment, isr, live, set(case["shuttingDown"]))


@pytest.fixture(scope="module")
def kafka_answers():
    cases = _cases()
    try:
        out = zk_oracle.run("AssignmentOracle", "".join(json.dumps(c) + "\n" for c in cases))
    except kafka_jars.Unavailable as exc:
        pytest.skip(f"Kafka 3.9's jars are not available: {exc}")
    answers = [json.loads(line) for line in out.splitlines()]
    assert len(answers) == len(cases)
    return list(zip(cases, answers, strict=True))


@pytest.mark.parametrize("op", ["assign", "grow", "offline", "reassign", "preferred", "shutdown"])
def test_same_answers_as_kafka(kafka_answers, op):
    checked = refused = 0
    for case, answer in kafka_answers:
        if case["op"] != op:
            continue
        if "draws" in answer:
            case = {**case, "draws": answer["draws"]}
        if "error" in answer:
            expected = KAFKA_ERRORS[answer["error"]]
            with pytest.raises(expected):
                _ours(case)
            refused += 1
        else:
            assert _ours(case) == answer["result"], case
        checked += 1
    assert checked > 100
    if op in ("assign", "grow"):
        assert refused > 10  # the refusals were exercised too
