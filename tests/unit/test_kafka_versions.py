"""Version profiles: each release's table, what a profile advertises and accepts, and what a client
concludes from it (kafka-python infers the broker's release from the ranges)."""

from __future__ import annotations

import pytest
from kafka.protocol.broker_version_data import BROKER_API_VERSIONS, infer_broker_version_from_api_versions

from broker.config.kafka_versions import (
    METADATA_VERSION,
    RELEASE_API_VERSIONS,
    accepted_from,
    check_release,
    releases,
)
from broker.config.options import BrokerConfig
from broker.server.dispatch import table
from broker.server.dispatch import version_profile as resolve

RELEASES = releases()


def _as_tuple(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


@pytest.mark.parametrize("release", RELEASES)
def test_release_table_is_what_that_release_answers(release: str) -> None:
    # kafka-python records each release's ApiVersions answer from a real broker.
    assert RELEASE_API_VERSIONS[release] == BROKER_API_VERSIONS[_as_tuple(release)]
    assert release in METADATA_VERSION


def test_every_served_version_is_in_some_profile() -> None:
    reachable = {(key, v) for release in RELEASES for key, (lo, hi) in resolve(release).accepted.items()
                 for v in range(lo, hi + 1)}
    served = {(key, v) for key, api in table().items() for v in range(api.min_version, api.max_version + 1)}
    # WriteTxnMarkers v2 (KIP-1228, Kafka 4.2) is spoken by brokers only.
    assert served - reachable == {(27, 2)}


@pytest.mark.parametrize("release", RELEASES)
def test_profile_is_the_release_cut_to_what_is_served(release: str) -> None:
    profile = resolve(release)
    served = table()
    for key, (lo, hi) in profile.advertised.items():
        release_lo, release_hi = RELEASE_API_VERSIONS[release][key]
        api = served[key]
        assert hi == min(release_hi, api.max_version)
        assert lo == max(release_lo, api.min_version)
        assert profile.accepted[key] == (max(release_lo, api.min_version, accepted_from(release).get(key, 0)), hi)
    # Left out only what is not served at all.
    left_out = set(RELEASE_API_VERSIONS[release]) - set(profile.advertised)
    assert not left_out & set(served)


@pytest.mark.parametrize("release", RELEASES)
def test_kafka_python_takes_the_profile_for_that_release(release: str) -> None:
    assert infer_broker_version_from_api_versions(resolve(release).advertised) == _as_tuple(release)


@pytest.mark.parametrize("release", [r for r in RELEASES if r.startswith("3.")])
def test_3x_profiles_serve_every_version_from_v0(release: str) -> None:
    # Kafka 3.x serves every API from v0 (message formats v0/v1 included): so does the profile, low ends too.
    profile = resolve(release)
    for key, (lo, hi) in RELEASE_API_VERSIONS[release].items():
        if key in profile.accepted:
            assert profile.accepted[key] == profile.advertised[key] == (lo, min(hi, table()[key].max_version))
    # Produce, Fetch, ListOffsets; OffsetCommit, OffsetFetch, CreateTopics
    assert profile.accepted[0][0] == profile.accepted[1][0] == profile.accepted[2][0] == 0
    assert profile.accepts(8, 0) and profile.accepts(9, 0) and profile.accepts(19, 0)


@pytest.mark.parametrize("release", [r for r in RELEASES if r.startswith("4.")])
def test_4x_profiles_keep_kip_896_floors(release: str) -> None:
    profile = resolve(release)
    for key, (lo, _hi) in RELEASE_API_VERSIONS[release].items():
        if key in profile.accepted:
            assert profile.accepted[key][0] == (3 if key == 0 else lo)
            assert profile.advertised[key][0] == lo
    assert not profile.accepts(1, 3) and not profile.accepts(19, 1) and not profile.accepts(8, 1)
    assert not profile.accepts(2, 0) and not profile.accepts(29, 0)


def test_default_is_3_9() -> None:
    assert BrokerConfig().kafka_version == "3.9"
    assert resolve() == resolve("3.9")
    assert infer_broker_version_from_api_versions(resolve().advertised) == (3, 9)


def test_release_quirks() -> None:
    # 4.0 dropped JoinGroup v0-1 (KIP-896); 4.1 brought them back.
    assert resolve("4.0").accepted[11] == (2, 9)
    assert not resolve("4.0").accepts(11, 1)
    assert resolve("4.1").accepts(11, 0)
    # Produce v0-2 stay advertised (KAFKA-18659) and are answered with UNSUPPORTED_VERSION.
    assert resolve("4.0").advertised[0] == (0, 12)
    assert resolve("4.0").accepted[0] == (3, 12)
    # 3.7's ApiVersions stops at v3: a v4 request gets the v0 UNSUPPORTED_VERSION answer.
    assert not resolve("3.7").accepts(18, 4)


def test_features_follow_the_release() -> None:
    features = resolve("3.9").features
    assert features["finalized_features"] == [
        {"name": "metadata.version", "max_version_level": 21, "min_version_level": 21}]
    assert {f["name"] for f in features["supported_features"]} == {"metadata.version", "kraft.version"}
    assert {f["name"] for f in resolve("3.8").features["supported_features"]} == {"metadata.version"}
    # Not offered: the protocols behind them are not implemented.
    names = {f["name"] for f in resolve("4.1").features["supported_features"]}
    assert not names & {"transaction.version", "group.version", "share.version"}


def test_patch_level_and_unknown_releases() -> None:
    assert check_release("4.0.1") == "4.0"
    assert resolve("3.9.1").release == "3.9"
    with pytest.raises(ValueError, match="no version profile"):
        check_release("2.8")
    with pytest.raises(ValueError, match="known: 3.7, 3.8, 3.9, 4.0, 4.1"):
        BrokerConfig(kafka_version="9.9").validate()
