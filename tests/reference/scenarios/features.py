"""UpdateFeatures (KIP-584, KIP-778's upgrade types): what a broker answers for every feature it knows, at the
levels it supports and beyond, upgrades, safe and unsafe downgrades, validate-only and real changes, and what a
finalized level changes (ApiVersions' finalized features, the protocols a feature turns on or off)."""

from __future__ import annotations

from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.consumer_groups import find_coordinator, join

UPDATE_FEATURES, API_VERSIONS = 57, 18
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
RELEASES = ("3.9", "4.1", "4.2", "4.3", "4.4")


def update(s: Session, step: str, *updates: tuple[str, int, int], validate_only: bool = False,
           version: int = 1) -> dict[str, Any]:
    """(feature, level, upgrade type) each; v0 sends the type as allow_downgrade (any downgrade type)."""
    return s.request(step, UPDATE_FEATURES, version, {
        "timeout_ms": 30000, "validate_only": validate_only,
        "feature_updates": [{"feature": f, "max_version_level": level, "upgrade_type": kind,
                             "allow_downgrade": kind != UPGRADE} for f, level, kind in updates]}) or {}


def features(s: Session, step: str) -> dict[str, Any]:
    return s.request(step, API_VERSIONS, 4, {"client_software_name": "reference-harness",
                                             "client_software_version": "1.0"}) or {}


def features_once(s: Session, step: str, name: str, level: int) -> dict[str, Any]:
    """ApiVersions once the broker finalizes `name` at `level` (0: not at all): Kafka's brokers learn a change
    from the controller's metadata a moment after UpdateFeatures answers."""
    def settled(answer: dict[str, Any]) -> bool:
        found = {f["name"]: f["max_version_level"] for f in answer.get("finalized_features") or []}
        return s.release.startswith("3.") or found.get(name, 0) == level

    return s.wait_for(step, API_VERSIONS, 4, {"client_software_name": "reference-harness",
                                              "client_software_version": "1.0"}, until=settled, timeout=30)


def _features_view(release: str, step: str, answer: Any) -> Any:
    """ApiVersions answers: only the features minibroker offers (the version ranges are api_versions' subject)."""
    from tests.reference.scenarios.versions import served_view

    if isinstance(answer, dict) and "api_keys" in answer:
        return {k: v for k, v in served_view(release, step, answer).items() if k != "api_keys"}
    return answer


def _without_api_keys(step: str, answer: Any) -> Any:
    return {k: v for k, v in answer.items() if k != "api_keys"} if isinstance(answer, dict) else answer


@scenario(releases=RELEASES, fresh=True, kafka_view=_features_view, both_view=_without_api_keys)
def update_features(s: Session) -> None:
    """Every feature at its levels: validate-only upgrades and downgrades (safe, unsafe, without the flag), an
    unknown feature, levels beyond the supported range, the same feature twice, no update at all, a bad upgrade
    type; then real changes of group.version, transaction.version and share.version with what they turn off,
    and v0 and v2 of the request."""
    before = features(s, "features before")
    metadata = {f["name"]: f["max_version"] for f in before.get("supported_features") or []}.get("metadata.version")
    for name in ("metadata.version", "kraft.version", "group.version", "transaction.version", "share.version",
                 "streams.version", "eligible.leader.replicas.version", "no.such.feature"):
        levels = [0, 1, 2, 3, 40]
        if name == "metadata.version" and metadata:
            levels += [7, metadata - 1, metadata]  # the lowest a 4.x broker supports, below the current, current
        for level in levels:
            for kind, kind_name in ((UPGRADE, "upgrade"), (SAFE_DOWNGRADE, "safe downgrade"),
                                    (UNSAFE_DOWNGRADE, "unsafe downgrade")):
                if level == 40 and kind != UPGRADE:
                    continue
                label = level if level in (0, 1, 2, 3, 7, 40) else ("current" if level == metadata else "current-1")
                update(s, f"validate {name} {label} {kind_name}", (name, level, kind), validate_only=True)
    update(s, "validate the same feature twice", ("group.version", 1, UPGRADE), ("group.version", 1, UPGRADE),
           validate_only=True)
    update(s, "validate no update", validate_only=True)
    update(s, "validate upgrade type 4", ("group.version", 1, 4), validate_only=True)
    update(s, "validate two features", ("group.version", 1, UPGRADE), ("transaction.version", 2, UPGRADE),
           validate_only=True)
    features(s, "features after validating")
    topic, group = s.name("t"), s.name("g")
    kraft = not s.release.startswith("3.")
    if kraft:
        from tests.reference.scenarios.common import create_topic

        create_topic(s, "create", topic)
    # group.version 0 turns the consumer group protocol off (KIP-848): a consumer-protocol join is refused before
    # it reaches a coordinator. (The coordinator is looked up once the protocol is back on: Kafka 4.1 and 4.4
    # stopped publishing feature changes to their brokers when __consumer_offsets was created and heartbeats
    # came meanwhile.)
    update(s, "group.version 0", ("group.version", 0, SAFE_DOWNGRADE))
    features_once(s, "features without group.version", "group.version", 0)
    if kraft:
        join(s, "consumer-protocol join without group.version", group, "member-a-0000000000000", [topic])
    update(s, "group.version 1 again", ("group.version", 1, UPGRADE))
    features_once(s, "features with group.version again", "group.version", 1)
    if kraft:
        find_coordinator(s, group)
        join(s, "consumer-protocol join with group.version", group, "member-a-0000000000000", [topic])
    update(s, "transaction.version 1", ("transaction.version", 1, SAFE_DOWNGRADE))
    update(s, "transaction.version 0", ("transaction.version", 0, UNSAFE_DOWNGRADE))
    features_once(s, "features without transaction.version", "transaction.version", 0)
    update(s, "transaction.version 2 again", ("transaction.version", 2, UPGRADE))
    update(s, "share.version 0", ("share.version", 0, SAFE_DOWNGRADE))
    features_once(s, "features without share.version", "share.version", 0)
    update(s, "share.version 1", ("share.version", 1, UPGRADE))
    features_once(s, "features with share.version 1", "share.version", 1)
    update(s, "v0: group.version 0 with allow_downgrade", ("group.version", 0, SAFE_DOWNGRADE), version=0)
    update(s, "v0: group.version 1", ("group.version", 1, UPGRADE), version=0)
    update(s, "v2: an unknown feature", ("no.such.feature", 1, UPGRADE), version=2)
    update(s, "v2: group.version 1", ("group.version", 1, UPGRADE), version=2)
    features_once(s, "features at the end", "group.version", 1)
