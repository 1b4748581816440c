"""Version profiles (`--kafka-version`): the ApiVersions answer of a given Apache Kafka release.

A client decides what it may do from the broker's ApiVersions answer (the highest version of each API both
sides know, and for kafka-python even which Kafka release it talks to), so advertising a release's ranges
makes minibroker look like that release. Each range is cut to the versions minibroker serves:
- the 3.x profiles serve every version from v0, with the message formats v0 and v1 (Produce v0-2 up-converts
  them, Fetch v0-3 down-converts to them); the 4.x tables start at Kafka 4's floors (KIP-896), except that
  Kafka 4 still advertises Produce v0-2 (KAFKA-18659) and closes the connection on them (its Produce
  schema starts at v3), and so do the 4.x profiles;
- APIs minibroker does not serve are left out (delegation tokens, client quotas, the controllers'
  and replication APIs);
- the KIP-848 consumer group protocol (and the KIP-932 share groups of 4.1) is offered by the 4.x profiles
  only, with the features that enable it (group.version, share.version): the 3.x tables list
  ConsumerGroupHeartbeat because Kafka 3.7-3.9 had it as early access behind a flag, off by default;
- EndTxn v5 (transaction.version 2, KIP-890 part 2) and the transaction.version feature are offered by the
  4.x profiles, as a freshly formatted Kafka 4 cluster finalizes them.
Requests outside the profile's ranges are refused as the release would refuse them (the connection is
closed; ApiVersions answers UNSUPPORTED_VERSION with the ranges).

The tables are what each release's broker answers: recorded from the live release (the newest patch level
tests/reference pins: 3.x in ZooKeeper mode, 4.x in KRaft mode) into tests/reference/recorded/<release>/
api_versions.json, which tests/unit/test_kafka_versions.py compares them with (`make reference-record`
refreshes them, `make reference-diff` checks them live). 4.0 is 4.0.1 and later, which serve JoinGroup v0-1
again after 4.0.0 had removed them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from protocol.errors import KAFKA_LIMITS, DecodeLimits

# {release: {api_key: (min_version, max_version)}}: the broker's ApiVersions answer of that release.
RELEASE_API_VERSIONS: dict[str, dict[int, tuple[int, int]]] = {
    "3.7": {
        0: (0, 10), 1: (0, 16), 2: (0, 8), 3: (0, 12), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3), 8: (0, 9),
        9: (0, 9), 10: (0, 4), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1),
        18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 4), 23: (0, 4), 24: (0, 4), 25: (0, 3), 26: (0, 3),
        27: (0, 1), 28: (0, 3), 29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
        36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1),
        45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 56: (0, 3), 57: (0, 1),
        58: (0, 0), 60: (0, 1), 61: (0, 0), 65: (0, 0), 66: (0, 0), 67: (0, 0), 68: (0, 0)
    },
    "3.8": {
        0: (0, 11), 1: (0, 16), 2: (0, 8), 3: (0, 12), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3), 8: (0, 9),
        9: (0, 9), 10: (0, 5), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1),
        18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 5), 23: (0, 4), 24: (0, 5), 25: (0, 4), 26: (0, 4),
        27: (0, 1), 28: (0, 4), 29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
        36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1),
        45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 56: (0, 3), 57: (0, 1),
        58: (0, 0), 60: (0, 1), 61: (0, 0), 65: (0, 0), 66: (0, 1), 67: (0, 0), 68: (0, 0), 69: (0, 0)
    },
    "3.9": {
        0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3), 8: (0, 9),
        9: (0, 9), 10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1),
        18: (0, 4), 19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 5), 23: (0, 4), 24: (0, 5), 25: (0, 4), 26: (0, 4),
        27: (0, 1), 28: (0, 4), 29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
        36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1),
        45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 56: (0, 3), 57: (0, 1),
        58: (0, 0), 60: (0, 1), 61: (0, 0), 65: (0, 0), 66: (0, 1), 67: (0, 0), 68: (0, 0), 69: (0, 0)
    },
    "4.0": {
        0: (0, 12), 1: (4, 17), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6), 11: (0, 9), 12: (0, 4),
        13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2),
        22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 1), 28: (0, 5), 29: (1, 3), 30: (1, 3),
        31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4), 36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2),
        40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1),
        49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0),
        66: (0, 1), 68: (0, 1), 69: (0, 1), 74: (0, 0), 75: (0, 0), 80: (0, 0), 81: (0, 0)
    },
    "4.1": {
        0: (0, 13), 1: (4, 18), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6), 11: (0, 9), 12: (0, 4),
        13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2),
        22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 1), 28: (0, 5), 29: (1, 3), 30: (1, 3),
        31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4), 36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2),
        40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1),
        49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0),
        66: (0, 2), 68: (0, 1), 69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 1), 79: (1, 1),
        80: (0, 0), 81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 0), 86: (0, 0), 87: (0, 0), 90: (0, 0), 91: (0, 0),
        92: (0, 0)
    },
    "4.2": {
        0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4),
        13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2),
        22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 5), 29: (1, 3), 30: (1, 3),
        31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4), 36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2),
        40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1),
        49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0),
        66: (0, 2), 68: (0, 1), 69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),
        80: (0, 1), 81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1), 88: (0, 0), 89: (0, 0),
        90: (0, 1), 91: (0, 0), 92: (0, 0)
    },
    "4.3": {
        0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4),
        13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2),
        22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 5), 29: (1, 3), 30: (1, 3),
        31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 5), 36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2),
        40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1),
        49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0),
        66: (0, 2), 68: (0, 1), 69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),
        80: (0, 1), 81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1), 88: (0, 0), 89: (0, 0),
        90: (0, 1), 91: (0, 0), 92: (0, 0)
    },
    "4.4": {
        0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4),
        13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 5), 19: (2, 7), 20: (1, 6), 21: (0, 2),
        22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 6), 29: (1, 3), 30: (1, 3),
        31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 5), 36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2),
        40: (1, 2), 41: (1, 3), 42: (0, 3), 43: (0, 2), 44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1),
        49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0),
        66: (0, 2), 68: (0, 1), 69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),
        80: (0, 1), 81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1), 88: (0, 1), 89: (0, 1),
        90: (0, 1), 91: (0, 0), 92: (0, 0), 93: (0, 0), 94: (0, 0)
    },
}

# metadata.version (KIP-778) a freshly formatted KRaft cluster of each 4.x release finalizes: its latest
# production level (MetadataVersion.LATEST_PRODUCTION), and the lowest level its brokers support. The 3.x
# profiles are ZooKeeper-mode brokers, which advertise and finalize no features at all (recorded from Kafka
# 3.9 in ZooKeeper mode: tests/reference/recorded/3.9/api_versions.json).
METADATA_VERSION: dict[str, tuple[int, int]] = {
    "4.0": (7, 25),  # 3.3-IV3 .. 4.0-IV3 (4.0 dropped the levels below 3.3-IV3)
    "4.1": (7, 27),  # .. 4.1-IV1
    "4.2": (7, 29),
    "4.3": (7, 30),
    "4.4": (7, 33),
}
# kraft.version (KIP-853): 0..1 on every 4.x broker; a single-node cluster stays at level 0 (not finalized).
KRAFT_VERSION = (0, 1)

# Versions a release advertises but refuses: {api_key: lowest accepted}. Kafka 4 keeps Produce v0 in its
# ApiVersions answer (old librdkafka stops compressing otherwise, KAFKA-18659) but cannot parse v0-2 (its
# ProduceRequest schema is 3-13): the connection is closed, as for any version below a floor.
_ADVERTISED_NOT_ACCEPTED_SINCE = "4.0"
_ACCEPTED_FROM = {0: 3}

# Served under a 4.x profile only: Kafka 4's group coordinator protocols (KIP-848 consumer groups, KIP-932
# share groups with their admin and state APIs, KIP-1071 streams groups: 4.2 on, with KIP-1331's topology
# description update in 4.4). The release tables say which of them each 4.x release serves.
KAFKA4_APIS = frozenset({68, 69, 76, 77, 78, 79, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93})
KAFKA4 = "4.0"

# The feature levels a freshly formatted cluster of each release finalizes, for what minibroker implements of
# them: {release: {feature: (min supported, max supported, finalized level)}}. A real Kafka 4.1 answers
# group.version 0-1 (1), transaction.version 0-2 (2) and share.version 0-1 (0: share groups are a preview a
# cluster turns on with kafka-features); minibroker's 4.1 profile finalizes share.version 1 so that share
# consumers work without that step. Kafka 4.2 and 4.3 support and finalize share.version 1 (with ShareFetch
# and ShareAcknowledge v2 served at that level), 4.4 supports and finalizes 2 (recorded from the live
# releases: tests/reference/recorded/<release>/api_versions.json); level 2 enables share groups' dead-letter
# queues in Kafka 4.4 (ShareVersion.supportsShareGroupDLQ), which minibroker does not write (see README).
FEATURES: dict[str, dict[str, tuple[int, int, int]]] = {
    "4.0": {"group.version": (0, 1, 1), "transaction.version": (0, 2, 2)},
    "4.1": {"group.version": (0, 1, 1), "transaction.version": (0, 2, 2), "share.version": (0, 1, 1)},
    # 4.2 on also finalize streams.version 1 (KIP-1071 streams groups).
    "4.2": {"group.version": (0, 1, 1), "transaction.version": (0, 2, 2), "share.version": (0, 1, 1),
            "streams.version": (0, 1, 1)},
    "4.3": {"group.version": (0, 1, 1), "transaction.version": (0, 2, 2), "share.version": (0, 1, 1),
            "streams.version": (0, 1, 1)},
    "4.4": {"group.version": (0, 1, 1), "transaction.version": (0, 2, 2), "share.version": (0, 2, 2),
            "streams.version": (0, 1, 1)},
}

# Releases whose request decoders refuse collections of more than 1,000,000 elements and tagged-field sections of
# more than 10,000 fields (protocol.errors.KAFKA_LIMITS): the generated message classes of 4.2.2 and 4.4.0 have
# the checks, 4.3.1's and 4.1.2's do not (recorded: tests/reference/recorded/*/request_decoder_limits.json).
DECODE_LIMITED = frozenset({"4.2", "4.4"})

# LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown, AlterPartition.
INTER_BROKER_APIS = (4, 5, 6, 7, 56)

# The default: the last release that runs with ZooKeeper, as minibroker does (Kafka 4 removed it), and
# what the client suites assume unless told otherwise.
DEFAULT = "3.9"


@dataclass(frozen=True, slots=True)
class VersionProfile:
    """What this broker advertises and accepts: {api_key: (min, max)} of each."""

    release: str
    advertised: dict[int, tuple[int, int]]
    accepted: dict[int, tuple[int, int]]
    features: dict[str, Any]  # the ApiVersions v3+ feature fields

    def with_inter_broker(self, served: Mapping[int, tuple[int, int, int]]) -> VersionProfile:
        """This profile, also accepting (not advertising) the requests brokers of a cluster send each other:
        a Kafka 4 release has no ZooKeeper mode, yet a minibroker cluster that looks like one needs them."""
        accepted = dict(self.accepted)
        for key in INTER_BROKER_APIS:
            if key in served:
                lo, hi, _ = served[key]
                accepted.setdefault(key, (lo, hi))
        return VersionProfile(self.release, self.advertised, accepted, self.features)

    @property
    def decode_limits(self) -> DecodeLimits | None:
        """The request decoder's caps of this release (None: only the bytes available limit a count)."""
        return KAFKA_LIMITS if self.release in DECODE_LIMITED else None

    def accepts(self, api_key: int, version: int) -> bool:
        lo_hi = self.accepted.get(api_key)
        return lo_hi is not None and lo_hi[0] <= version <= lo_hi[1]

    def since(self, release: str) -> bool:
        """Whether the profile's release is `release` or newer: for answers that changed in a release."""
        return release_key(self.release) >= release_key(release)


def _features(release: str) -> dict[str, Any]:
    if release not in METADATA_VERSION:  # a ZooKeeper-mode (3.x) broker
        return {"supported_features": [], "finalized_features_epoch": 0, "finalized_features": []}
    lo, hi = METADATA_VERSION[release]
    supported = [{"name": "metadata.version", "min_version": lo, "max_version": hi},
                 {"name": "kraft.version", "min_version": KRAFT_VERSION[0], "max_version": KRAFT_VERSION[1]}]
    finalized = [{"name": "metadata.version", "max_version_level": hi, "min_version_level": hi}]
    for name, (lo_v, hi_v, level) in FEATURES.get(release, {}).items():
        supported.append({"name": name, "min_version": lo_v, "max_version": hi_v})
        if level > 0:
            finalized.append({"name": name, "max_version_level": level, "min_version_level": level})
    return {"supported_features": supported, "finalized_features_epoch": 1, "finalized_features": finalized}


def feature_level(release: str, name: str) -> int:
    """The finalized level of a feature under a profile (0: off)."""
    return FEATURES.get(release, {}).get(name, (0, 0, 0))[2]


def release_key(release: str) -> tuple[int, ...]:
    """"4.1" -> (4, 1): releases in order."""
    return tuple(int(part) for part in release.split("."))


def releases() -> list[str]:
    return sorted(RELEASE_API_VERSIONS, key=release_key)


def check_release(kafka_version: str) -> str:
    """The release ("4.0") of a version given as "4.0" or "4.0.1"; ValueError when it has no profile."""
    release = ".".join(kafka_version.strip().split(".")[:2])
    if release not in RELEASE_API_VERSIONS:
        raise ValueError(f"no version profile for Kafka {kafka_version!r}; known: {', '.join(releases())}")
    return release


def accepted_from(release: str) -> dict[int, int]:
    """{api_key: lowest version accepted} where `release` advertises lower versions it refuses."""
    return dict(_ACCEPTED_FROM) if release_key(release) >= release_key(_ADVERTISED_NOT_ACCEPTED_SINCE) else {}


def resolve(served: Mapping[int, tuple[int, int, int]], kafka_version: str = DEFAULT) -> VersionProfile:
    """The profile of `kafka_version` ("3.9", "4.0.1": the patch level does not change the ranges), cut to
    `served` ({api_key: (min accepted, max, min advertised)}: the server's dispatch table says what it
    serves). Raises ValueError for a release without a table."""
    release = check_release(kafka_version)
    refuses = accepted_from(release)
    advertised, accepted = {}, {}
    kafka4 = release_key(release) >= release_key(KAFKA4)
    for key, (lo, hi) in RELEASE_API_VERSIONS[release].items():
        ours = served.get(key)
        if ours is None or hi < ours[0] or (key in KAFKA4_APIS and not kafka4):
            continue
        hi = min(hi, ours[1])
        advertised[key] = (max(lo, ours[2]), hi)
        accepted[key] = (max(lo, ours[0], refuses.get(key, 0)), hi)
    return VersionProfile(release, advertised, accepted, _features(release))
