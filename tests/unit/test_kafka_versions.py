"""Version profiles: each release's table, what a profile advertises and accepts, and what a client
concludes from it (kafka-python infers the broker's release from the ranges)."""

from __future__ import annotations

import pytest
from kafka.protocol.broker_version_data import BROKER_API_VERSIONS, infer_broker_version_from_api_versions

from broker.config.kafka_versions import (
    KAFKA4_APIS,
    KRAFT_VERSION,
    METADATA_VERSION,
    RELEASE_API_VERSIONS,
    accepted_from,
    check_release,
    releases,
)
from broker.config.options import BrokerConfig
from broker.server.dispatch import table
from broker.server.dispatch import version_profile as resolve
from tests.reference.harness import load_recording
from tests.reference.scenarios.versions import api_versions_table

RELEASES = releases()


def _as_tuple(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


def _live_answer(release: str) -> dict | None:
    """The release's own ApiVersions v3+ answer, recorded from Apache Kafka by tests/reference
    (`make reference-record`): 3.x in ZooKeeper mode, 4.x in KRaft mode."""
    recording = load_recording(release, "api_versions")
    if recording is None:
        return None
    return next(e["response"] for e in recording["exchanges"] if e["step"] in ("v3", "v4"))


@pytest.mark.parametrize("release", RELEASES)
def test_release_table_is_what_that_release_answers(release: str) -> None:
    live = _live_answer(release)
    assert live is not None, f"no recording of Kafka {release}: make reference-record " \
        f"REFERENCE_ARGS='--scenarios api_versions --releases {release}'"
    assert RELEASE_API_VERSIONS[release] == api_versions_table(live)
    # kafka-python's tables (it tests its inference against real brokers) agree, but for 4.0: kafka-python
    # has 4.0.0's, which had dropped JoinGroup v0-1; 4.0.1 brought them back.
    if _as_tuple(release) in BROKER_API_VERSIONS:
        theirs = dict(BROKER_API_VERSIONS[_as_tuple(release)])
        if release == "4.0":
            assert theirs[11] == (2, 9)
            theirs[11] = (0, 9)
        assert RELEASE_API_VERSIONS[release] == theirs


@pytest.mark.parametrize("release", RELEASES)
def test_features_are_what_that_release_answers(release: str) -> None:
    live = _live_answer(release)
    assert live is not None
    supported = {f["name"]: (f["min_version"], f["max_version"]) for f in live["supported_features"]}
    finalized = {f["name"]: f["max_version_level"] for f in live["finalized_features"]}
    if release not in METADATA_VERSION:  # a ZooKeeper-mode broker
        assert supported == finalized == {}
        return
    assert supported["metadata.version"] == METADATA_VERSION[release]
    assert finalized["metadata.version"] == METADATA_VERSION[release][1]
    assert supported["kraft.version"] == KRAFT_VERSION
    # The group coordinator's features at that release's levels, but for a deliberate difference (FEATURES).
    ours = {f["name"]: f["max_version_level"] for f in resolve(release).features["finalized_features"]}
    for name, level in ours.items():
        if (release, name) != ("4.1", "share.version"):
            assert finalized.get(name, 0) == level, name


def test_every_served_version_is_in_some_profile() -> None:
    reachable = {(key, v) for release in RELEASES for key, (lo, hi) in resolve(release).accepted.items()
                 for v in range(lo, hi + 1)}
    served = {(key, v) for key, api in table().items() for v in range(api.min_version, api.max_version + 1)}
    # With the 4.2-4.4 profiles, every version served is some profile's (WriteTxnMarkers v2 came with 4.2).
    assert served - reachable == set()


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
    # Left out only what is not served at all, and under 3.x the protocols of Kafka 4's group coordinator
    # (3.7-3.9 list ConsumerGroupHeartbeat as an early access feature, off by default).
    left_out = set(RELEASE_API_VERSIONS[release]) - set(profile.advertised)
    kafka4_only = KAFKA4_APIS if release.startswith("3.") else frozenset()
    assert not (left_out - kafka4_only) & set(served)
    if release.startswith("3."):
        assert not KAFKA4_APIS & set(profile.advertised)
    else:
        assert {68, 69} <= set(profile.advertised)


@pytest.mark.parametrize("release", RELEASES)
def test_kafka_python_takes_the_profile_for_that_release(release: str) -> None:
    inferred = infer_broker_version_from_api_versions(resolve(release).advertised)
    # kafka-python knows releases up to the newest in its table (4.3 in 3.x): a newer profile looks like that.
    assert inferred == min(_as_tuple(release), max(BROKER_API_VERSIONS))


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
    # 4.0.0 dropped JoinGroup v0-1 (KIP-896); 4.0.1 brought them back, and the 4.0 profile is 4.0.2's.
    assert resolve("4.0").accepted[11] == (0, 9)
    assert resolve("4.1").accepts(11, 0)
    # 3.8's ApiVersions stops at v3 too; 4.4 has v5 (KIP-1242), 4.3 not.
    assert not resolve("3.8").accepts(18, 4)
    assert resolve("4.4").advertised[18] == (0, 5) and resolve("4.3").advertised[18] == (0, 4)
    # Produce v0-2 stay advertised (KAFKA-18659) and close the connection (Kafka 4 cannot parse them).
    assert resolve("4.0").advertised[0] == (0, 12)
    assert resolve("4.0").accepted[0] == (3, 12)
    # 3.7's ApiVersions stops at v3: a v4 request gets the v0 UNSUPPORTED_VERSION answer.
    assert not resolve("3.7").accepts(18, 4)


def test_features_follow_the_release() -> None:
    assert resolve("3.9").features == {"supported_features": [], "finalized_features_epoch": 0,
                                       "finalized_features": []}
    features = resolve("4.1").features
    assert features["finalized_features"][0] == {
        "name": "metadata.version", "max_version_level": 27, "min_version_level": 27}
    assert {f["name"] for f in features["supported_features"]} == {
        "metadata.version", "kraft.version", "group.version", "transaction.version", "share.version"}
    # 4.x: the features of Kafka 4's group coordinator, finalized as a fresh 4.1 cluster does (share.version
    # too, see FEATURES); never under 3.x.
    supported = {f["name"]: (f["min_version"], f["max_version"]) for f in features["supported_features"]}
    assert supported["group.version"] == (0, 1) and supported["share.version"] == (0, 1)
    finalized = {f["name"]: f["max_version_level"] for f in features["finalized_features"]}
    assert finalized["group.version"] == 1 and finalized["share.version"] == 1
    assert "share.version" not in {f["name"] for f in resolve("4.0").features["supported_features"]}


def test_patch_level_and_unknown_releases() -> None:
    assert check_release("4.0.1") == "4.0"
    assert resolve("3.9.1").release == "3.9"
    with pytest.raises(ValueError, match="no version profile"):
        check_release("2.8")
    with pytest.raises(ValueError, match="known: 3.7, 3.8, 3.9, 4.0, 4.1, 4.2, 4.3, 4.4"):
        BrokerConfig(kafka_version="9.9").validate()
