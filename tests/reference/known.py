"""Differences between Kafka's answers and minibroker's that are understood: deliberate ones (also in
docs/compatibility/differences.md, with the reason) and open ones that need work outside a handler or config
table. `make reference-diff` prints them with their reason; the replay test fails on any other difference and on a
known one that is gone (so this list stays true)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any


@dataclass(frozen=True)
class Known:
    scenario: str  # patterns: "*" matches anything, every other character itself
    step: str
    path: str
    reason: str
    releases: tuple[str, ...] | None = None  # None: every release
    deliberate: bool = False  # listed in docs/compatibility/differences.md (a choice), else open work


_AUTO_CREATE = ("minibroker creates an auto-created topic at once and describes it in the same Metadata "
                "answer; Kafka answers LEADER_NOT_AVAILABLE (3.x) or UNKNOWN_TOPIC_OR_PARTITION (4.x) first")
_WHOLE_BATCHES = ("Fetch returns whole batches only; Kafka cuts a fetch inside a batch at its byte limit "
                  "(clients drop that part) and lists the aborted transactions of the cut batch")

KNOWN: list[Known] = [
    Known("metadata_auto_create", "first ask creates", "*", _AUTO_CREATE, deliberate=True),
    Known("metadata_auto_create", "v4 created as asked", "*", _AUTO_CREATE, deliberate=True),
    Known("legacy_apis", "metadata v0: unknown topic", "*", _AUTO_CREATE + " (Metadata v0-3 always auto-create)",
          releases=("3.9",), deliberate=True),
    Known("*", "*", "*.records.cut_off_tail", _WHOLE_BATCHES, deliberate=True),
    Known("read_committed", "read_committed, first batch only", "*aborted_transactions*", _WHOLE_BATCHES,
          deliberate=True),
    Known("produce_errors", "null records", "*", "a null record set gets INVALID_RECORD; Kafka fails the "
          "request and closes the connection", deliberate=True),
    Known("describe_all_broker_configs", "all", "results[resource_name=0].configs[names]",
          "minibroker describes its own settings and those of Kafka's it has, not Kafka's others (SASL, SSL, "
          "quotas, replication, KRaft, tiered storage...)", deliberate=True),
    Known("describe_all_broker_configs", "all", "*listeners].read_only", "advertised.listeners changes at run "
          "time and listeners does not, as on a 3.x broker (Kafka 4: the other way round)", deliberate=True),
    Known("describe_all_broker_configs", "all", "*listener.security.protocol.map].read_only", "listeners and "
          "their security protocols are set at start (Kafka can change them at run time)", deliberate=True),
    Known("describe_broker_configs", "broker loggers", "*].value", "logger levels are each broker's logging "
          "configuration", deliberate=True),
    Known("create_topics", "assignment to an unknown broker", "*", "Kafka 3.9 in ZooKeeper mode creates a topic "
          "assigned to an unregistered broker and times out; minibroker refuses it as Kafka 4 does",
          releases=("3.9",), deliberate=True),
    Known("api_versions", "*", "finalized_features[names]", "minibroker's 4.1 profile finalizes share.version 1 "
          "so that share consumers work at once; a fresh Kafka 4.1 cluster leaves it at 0 until kafka-features "
          "turns it on", releases=("4.1",), deliberate=True),
    Known("update_features", "features *", "finalized_features[names]", "minibroker's 4.1 profile finalizes "
          "share.version 1 so that share consumers work at once; a fresh Kafka 4.1 cluster leaves it at 0",
          releases=("4.1",), deliberate=True),
    Known("update_features", "*share.version*", "*", "minibroker's 4.1 profile finalizes share.version 1 so that "
          "share consumers work at once; a fresh Kafka 4.1 cluster leaves it at 0", releases=("4.1",),
          deliberate=True),
    Known("update_features", "validate eligible.leader.replicas.version *", "*", "eligible.leader.replicas.version "
          "(KIP-966) is not offered: a ZooKeeper-mode cluster keeps no eligible leader replicas",
          releases=("4.1", "4.2", "4.3", "4.4"), deliberate=True),
    Known("kraft_controller_apis", "*", "*", "the KRaft quorum and controller APIs (DescribeQuorum, UnregisterBroker, "
          "Add/RemoveRaftVoter, UnregisterController) are not served: minibroker runs no KRaft quorum (a ZooKeeper-"
          "mode cluster, as Kafka 3.9's, whose brokers do not offer them either); the connection is closed, as for "
          "any API a broker does not offer", releases=("4.4",), deliberate=True),
    # Not minibroker's: Kafka 3.9 in ZooKeeper mode kept applying deleted dynamic broker configs (a per-broker
    # and a cluster-default one, 30 s after the deletion was answered) in one of the two recordings made.
    Known("alter_broker_configs", "after delete", "*", "Kafka 3.9 (ZooKeeper mode) did not apply the deletion "
          "of a dynamic broker config in this recording; minibroker applies it at once", releases=("3.9",)),
    Known("alter_broker_configs", "back to static", "*", "Kafka 3.9 (ZooKeeper mode) did not apply the deletion "
          "of a dynamic broker config in this recording; minibroker applies it at once", releases=("3.9",)),
]


@cache
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in text.split("*")) + r"\Z", re.S)


def applies(known: Known, release: str, scenario: str) -> bool:
    return (known.releases is None or release in known.releases) and bool(_pattern(known.scenario).match(scenario))


def matches(known: Known, difference: Any) -> bool:
    return bool(_pattern(known.step).match(difference.step)) and bool(_pattern(known.path).match(difference.path))


def explain(release: str, scenario: str, difference: Any) -> str | None:
    for known in KNOWN:
        if applies(known, release, scenario) and matches(known, difference):
            return ("deliberate: " if known.deliberate else "open: ") + known.reason
    return None
