"""Finalized feature levels (KIP-584): what ApiVersions reports, what UpdateFeatures changes, and what turns a
protocol on or off (group.version 0: no consumer group protocol).

A release's profile says which features its broker supports and at which levels a fresh cluster finalizes
them (broker/config/kafka_versions.py); UpdateFeatures changes the finalized levels as that release's
controller does (Kafka 4's FeatureControlManager, recorded: tests/reference/recorded/*/update_features.json):
each update is checked against the supported range and the current level and the upgrade type (UPGRADE,
SAFE_DOWNGRADE, UNSAFE_DOWNGRADE); the first refused update refuses all (INVALID_UPDATE_VERSION); a
metadata.version downgrade is refused when it crosses a level that changed the metadata format. A 3.x profile
is a ZooKeeper-mode broker that supports no feature: every update is refused, each in its own result (Kafka 3.9's
ZooKeeper-mode answers). The levels persist in the data dir (`meta/features.json`) with an epoch that grows with
every change (Kafka's is the offset of the metadata record).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

from broker.config.kafka_versions import METADATA_VERSION, VersionProfile
from broker.log.durable_file import write_atomically
from protocol.header import ErrorCode

log = logging.getLogger(__name__)

METADATA = "metadata.version"
KRAFT = "kraft.version"
# Features Kafka's code knows by name besides those a profile offers (a level-0 update of an unknown name is
# "not found", of a known one merely unsupported at a level above 0).
KNOWN = frozenset({METADATA, KRAFT, "group.version", "transaction.version", "share.version", "streams.version",
                   "eligible.leader.replicas.version"})
# metadata.version levels that changed the metadata's format (MetadataVersion.didMetadataChange): a
# downgrade across one could lose metadata and is refused.
METADATA_CHANGED = frozenset({7, 8, 11, 13, 14, 15, 17, 23, 30, 32, 33})
_FAILED_ALL = "The update failed for all features since the following feature had an error: "


class UpgradeType(IntEnum):
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    """One feature of an UpdateFeatures request: its name, the level asked for and how."""

    name: str
    level: int
    upgrade_type: int  # UpgradeType's value, or anything a client sent


@dataclass(frozen=True, slots=True)
class UpdateOutcome:
    """The answer to an UpdateFeatures request: its error and each update's."""

    error: ErrorCode
    message: str | None
    results: list[tuple[str, ErrorCode, str | None]]  # per update (v0-1 answers list them)


class FeatureLevels:
    """The broker's finalized feature levels, as its profile's release would have them."""

    def __init__(self, profile: VersionProfile, path: Path, node_id: int) -> None:
        self.release = profile.release
        self.path = path
        self.node_id = node_id
        # The profile's ApiVersions features: what a fresh cluster of the release supports and finalizes (a
        # profile without some protocols leaves their features out too).
        self.supported: dict[str, tuple[int, int]] = {
            f["name"]: (f["min_version"], f["max_version"]) for f in profile.features["supported_features"]}
        self.finalized: dict[str, int] = {
            f["name"]: f["max_version_level"] for f in profile.features["finalized_features"]}
        self.epoch = profile.features["finalized_features_epoch"]
        self._load()

    @property
    def kraft(self) -> bool:
        """A 4.x profile: a KRaft broker, whose controller finalizes features; 3.x: ZooKeeper mode."""
        return self.release in METADATA_VERSION

    def level(self, name: str) -> int:
        """The finalized level of a feature (0: not finalized, its protocol off)."""
        return self.finalized.get(name, 0)

    def api_versions_fields(self) -> dict[str, Any]:
        """ApiVersions v3+'s feature fields: supported ranges, finalized levels (those above 0) and their epoch."""
        if not self.kraft:
            return {"supported_features": [], "finalized_features_epoch": 0, "finalized_features": []}
        supported = [{"name": name, "min_version": lo, "max_version": hi} for name, (lo, hi) in self.supported.items()]
        finalized = [{"name": name, "max_version_level": level, "min_version_level": level}
                     for name, level in self.finalized.items() if level > 0]
        return {"supported_features": supported, "finalized_features_epoch": self.epoch,
                "finalized_features": finalized}

    # -- UpdateFeatures -------------------------------------------------------------------------------------
    def update(self, updates: Iterable[FeatureUpdate], validate_only: bool) -> UpdateOutcome:
        updates = list(updates)
        if not self.kraft:
            return UpdateOutcome(ErrorCode.NONE, None, [(u.name, ErrorCode.INVALID_REQUEST, self._zk_refusal(u))
                                                        for u in dict((u.name, u) for u in updates).values()])
        levels = dict(self.finalized)
        for u in updates:
            reason = self._refusal(u, levels)
            if reason is not None:
                return UpdateOutcome(ErrorCode.INVALID_UPDATE_VERSION, _FAILED_ALL + reason, [])
            levels[u.name] = u.level
        if not validate_only and levels != self.finalized:
            self.finalized = {name: level for name, level in levels.items() if name in self.supported}
            self.epoch += 1
            self._save()
            log.info("finalized features now %s (epoch %d)", self.finalized, self.epoch)
        return UpdateOutcome(ErrorCode.NONE, None, [(u.name, ErrorCode.NONE, None) for u in updates])

    def _refusal(self, u: FeatureUpdate, levels: dict[str, int]) -> str | None:
        """Why Kafka 4's controller refuses one update (FeatureControlManager.updateFeature), or None."""
        def invalid(reason: str) -> str:
            return f"Invalid update version {u.level} for feature {u.name}. {reason}"

        if u.upgrade_type not in tuple(UpgradeType):
            return invalid("The controller does not support the given upgrade type.")
        if u.level < 0:
            return invalid("A feature version cannot be less than 0.")
        supported = self.supported.get(u.name)
        if supported is None:
            if u.level == 0 and u.name in KNOWN:
                return None  # an unsupported feature stays off
            if u.level == 0:
                return invalid(f"Feature {u.name} not found.")
            return invalid(f"Local controller {self.node_id} does not support this feature.")
        lo, hi = supported
        if not lo <= u.level <= hi:
            return invalid(f"Local controller {self.node_id} only supports versions {lo}-{hi}")
        current = levels.get(u.name, 0)
        if u.level < current and u.upgrade_type == UpgradeType.UPGRADE:
            return invalid("Can't downgrade the version of this feature without setting the upgrade type to "
                           "either safe or unsafe downgrade.")
        if u.level > current and u.upgrade_type != UpgradeType.UPGRADE:
            return invalid("Can't downgrade to a newer version.")
        if u.name == METADATA and u.level < current and METADATA_CHANGED & set(range(u.level + 1, current + 1)):
            if u.upgrade_type == UpgradeType.UNSAFE_DOWNGRADE:
                return (f"Unsupported metadata.version downgrade from {current} to {u.level}. Unsafe metadata "
                        "downgrade is not supported in this version.")
            return (f"Unsupported metadata.version downgrade from {current} to {u.level}. Refusing to perform the "
                    "requested downgrade because it might delete metadata information.")
        return None

    @staticmethod
    def _zk_refusal(u: FeatureUpdate) -> str:
        """Kafka 3.9 in ZooKeeper mode (no feature supported): why it refuses an update."""
        if u.upgrade_type not in tuple(UpgradeType):
            return "Received unknown upgrade type."
        if u.level < 1 and u.upgrade_type == UpgradeType.UPGRADE:
            return (f"Can not provide versionLevel: {u.level} less than 1 without setting the SAFE downgradeType "
                    "in the request.")
        if u.level < 1:
            return "Can not delete non-existing finalized feature."
        return "Could not apply finalized feature update because the provided feature is not supported."

    # -- persistence ----------------------------------------------------------------------------------------
    def _load(self) -> None:
        if not self.path.exists():
            return
        data = json.loads(self.path.read_text())
        if data.get("release") != self.release:  # another profile than the levels were finalized under
            log.info("finalized features of Kafka %s in %s: starting from Kafka %s's", data.get("release"),
                     self.path, self.release)
            return
        self.finalized = {name: int(level) for name, level in data["finalized"].items() if name in self.supported}
        self.epoch = int(data["epoch"])

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps({"release": self.release, "epoch": self.epoch,
                                                "finalized": self.finalized}, sort_keys=True).encode())
