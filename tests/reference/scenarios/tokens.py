"""Delegation tokens on a PLAINTEXT listener (every token request refused: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
whatever else is wrong with it), and what a 4.4 broker answers to the KRaft controller APIs minibroker does not
serve (DescribeQuorum, UnregisterBroker, Add/RemoveRaftVoter, UnregisterController)."""

from __future__ import annotations

import uuid

from tests.reference.harness import Session, scenario

CREATE, RENEW, EXPIRE, DESCRIBE = 38, 39, 40, 41
DIRECTORY = uuid.UUID(int=1)
DESCRIBE_QUORUM, UNREGISTER_BROKER, ADD_RAFT_VOTER, REMOVE_RAFT_VOTER, UNREGISTER_CONTROLLER = 55, 64, 80, 81, 94


def _versions(release: str) -> tuple[int, int]:
    """(lowest, highest) CreateDelegationToken version of the release (Kafka 4 removed v0)."""
    return (0, 3) if release.startswith("3.") else (1, 3)


@scenario(releases=("3.9", "4.1", "4.4"), config={"delegation.token.secret.key": "reference-secret"})
def delegation_tokens_plaintext(s: Session) -> None:
    """Create (each version, for oneself and for another owner, with a renewer that is not a user), renew,
    expire and describe delegation tokens over PLAINTEXT."""
    lo, hi = _versions(s.release)
    for version in range(lo, hi + 1):
        s.request(f"create v{version}", CREATE, version, {
            "owner_principal_type": "User", "owner_principal_name": "someone-else",
            "renewers": [{"principal_type": "Group", "principal_name": "g"}], "max_lifetime_ms": -1})
    s.request("renew", RENEW, 2, {"hmac": b"\x01" * 64, "renew_period_ms": -1})
    s.request("expire", EXPIRE, 2, {"hmac": b"\x01" * 64, "expiry_time_period_ms": -1})
    s.request("describe all", DESCRIBE, 3, {"owners": None})
    s.request("describe none", DESCRIBE, 3, {"owners": []})


@scenario(releases=("4.4",))
def kraft_controller_apis(s: Session) -> None:
    """The KRaft quorum and controller APIs asked of a broker: DescribeQuorum (the admin client's
    describeMetadataQuorum), UnregisterBroker, AddRaftVoter, RemoveRaftVoter and UnregisterController."""
    s.request("describe quorum", DESCRIBE_QUORUM, 2, {"topics": [{"topic_name": "__cluster_metadata", "partitions": [
        {"partition_index": 0}]}]}, conn="quorum")
    s.request("unregister broker", UNREGISTER_BROKER, 0, {"broker_id": 7}, conn="unregister")
    s.request("add raft voter", ADD_RAFT_VOTER, 1, {"cluster_id": None, "timeout_ms": 5000, "voter_id": 7,
                                                    "voter_directory_id": DIRECTORY,
                                                    "listeners": [], "ack_when_committed": True}, conn="add")
    s.request("remove raft voter", REMOVE_RAFT_VOTER, 0, {"cluster_id": None, "voter_id": 7,
                                                          "voter_directory_id": DIRECTORY},
              conn="remove")
    s.request("unregister controller", UNREGISTER_CONTROLLER, 0, {"controller_id": 7}, conn="unregister-controller")
