"""Finalized feature levels and UpdateFeatures' rules (broker/services/features.py), as Kafka 4's controller and
Kafka 3.9 in ZooKeeper mode answer them (the recorded answers: tests/reference/recorded/*/update_features.json)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.server.dispatch import version_profile
from broker.services.features import FeatureLevels, FeatureUpdate, UpgradeType
from protocol.header import ErrorCode

UP, SAFE, UNSAFE = UpgradeType.UPGRADE, UpgradeType.SAFE_DOWNGRADE, UpgradeType.UNSAFE_DOWNGRADE


def levels(tmp_path: Path, release: str = "4.4") -> FeatureLevels:
    return FeatureLevels(version_profile(release), tmp_path / "meta" / "features.json", 0)


def test_a_fresh_profile_finalizes_what_the_release_does(tmp_path: Path) -> None:
    features = levels(tmp_path)
    assert features.level("group.version") == 1 and features.level("transaction.version") == 2
    assert features.level("metadata.version") == 33 and features.level("kraft.version") == 0
    fields = features.api_versions_fields()
    assert {f["name"] for f in fields["finalized_features"]} >= {"metadata.version", "group.version"}
    assert "kraft.version" not in {f["name"] for f in fields["finalized_features"]}  # level 0: not listed
    assert levels(tmp_path / "zk", "3.9").api_versions_fields() == {
        "supported_features": [], "finalized_features_epoch": 0, "finalized_features": []}


@pytest.mark.parametrize(("update", "reason"), [
    (("group.version", 0, UP), "Can't downgrade the version of this feature without setting the upgrade type"),
    (("group.version", 2, UP), "Local controller 0 only supports versions 0-1"),
    (("kraft.version", 1, SAFE), "Can't downgrade to a newer version."),
    (("group.version", 1, 4), "The controller does not support the given upgrade type."),
    (("no.such.feature", 0, SAFE), "Feature no.such.feature not found."),
    (("no.such.feature", 1, UP), "Local controller 0 does not support this feature."),
    (("metadata.version", 3, UP), "Local controller 0 only supports versions 7-33"),
    (("metadata.version", 32, SAFE), "Unsupported metadata.version downgrade from 33 to 32. Refusing"),
    (("metadata.version", 32, UNSAFE), "Unsafe metadata downgrade is not supported in this version."),
])
def test_refused_updates_refuse_the_whole_request(tmp_path: Path, update: tuple[str, int, int], reason: str) -> None:
    features = levels(tmp_path)
    outcome = features.update([FeatureUpdate("transaction.version", 1, SAFE), FeatureUpdate(*update)], False)
    assert outcome.error == ErrorCode.INVALID_UPDATE_VERSION and outcome.results == []
    assert outcome.message is not None and reason in outcome.message
    assert outcome.message.startswith("The update failed for all features since the following feature had an error")
    assert features.level("transaction.version") == 2  # the valid update went neither


def test_a_metadata_downgrade_that_changes_nothing_is_allowed(tmp_path: Path) -> None:
    features = levels(tmp_path, "4.1")  # 27 -> 26: no level in between changed the metadata
    assert features.update([FeatureUpdate("metadata.version", 26, SAFE)], True).error == ErrorCode.NONE
    assert features.update([FeatureUpdate("metadata.version", 7, SAFE)], True).error == ErrorCode.INVALID_UPDATE_VERSION


def test_changes_apply_persist_and_move_the_epoch(tmp_path: Path) -> None:
    features = levels(tmp_path)
    epoch = features.epoch
    assert features.update([FeatureUpdate("group.version", 0, SAFE)], validate_only=True).error == ErrorCode.NONE
    assert features.level("group.version") == 1 and features.epoch == epoch
    outcome = features.update([FeatureUpdate("group.version", 0, SAFE), FeatureUpdate("transaction.version", 1,
                                                                                        UNSAFE)], False)
    assert outcome.results == [("group.version", ErrorCode.NONE, None), ("transaction.version", ErrorCode.NONE, None)]
    assert features.level("group.version") == 0 and features.level("transaction.version") == 1
    assert features.epoch > epoch
    again = levels(tmp_path)  # a restart
    assert again.level("group.version") == 0 and again.level("transaction.version") == 1
    assert again.epoch == features.epoch
    assert levels(tmp_path, "4.1").level("group.version") == 1  # another release starts from its own levels


def test_a_zookeeper_mode_profile_refuses_each_update(tmp_path: Path) -> None:
    features = levels(tmp_path, "3.9")
    outcome = features.update([FeatureUpdate("group.version", 1, UP), FeatureUpdate("group.version", 0, SAFE),
                               FeatureUpdate("x", 0, UP), FeatureUpdate("y", 1, 7)], False)
    assert outcome.error == ErrorCode.NONE
    assert [(name, message) for name, _, message in outcome.results] == [
        ("group.version", "Can not delete non-existing finalized feature."),
        ("x", "Can not provide versionLevel: 0 less than 1 without setting the SAFE downgradeType in the request."),
        ("y", "Received unknown upgrade type.")]
    assert {error for _, error, _ in outcome.results} == {ErrorCode.INVALID_REQUEST}
