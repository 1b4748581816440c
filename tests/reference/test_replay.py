"""Kafka's recorded answers replayed against minibroker (no JVM): every scenario of tests/reference/scenarios
on the release it was recorded from, answers compared field by field (harness.compare). Differences must be
explained in tests/reference/known.py, and an explained difference that is gone must leave that list."""

from __future__ import annotations

import pytest

from tests.reference import known
from tests.reference.harness import check, load_recording, load_scenarios, recordings, run_on_minibroker

CASES = list(recordings())


@pytest.mark.parametrize(("release", "name"), CASES, ids=[f"{r}-{n}" for r, n in CASES])
def test_minibroker_answers_as_kafka_did(release: str, name: str, tmp_path) -> None:
    scenario = load_scenarios().get(name)
    assert scenario is not None, f"recorded/{release}/{name}.json belongs to no scenario: remove it"
    recording = load_recording(release, name)
    assert recording is not None
    mini = run_on_minibroker(scenario, release, tmp_path, recording.get("t0"))
    outcome = check(release, scenario, recording["exchanges"], mini)
    unexplained = [d.line() for d in outcome.differences if not d.known]
    assert not unexplained, f"{len(unexplained)} differences from {recording['kafka']}:\n" + "\n".join(unexplained)
    assert outcome.compared == len(recording["exchanges"])
    stale = [k for k in known.KNOWN if known.applies(k, release, name)
             and not any(known.matches(k, d) for d in outcome.differences)]
    assert not stale, f"known differences that are gone (remove them from known.py and the README): {stale}"


def test_every_scenario_is_recorded_for_its_releases() -> None:
    recorded = set(CASES)
    missing = [(r, s.name) for s in load_scenarios().values() for r in s.releases if (r, s.name) not in recorded]
    assert not missing, f"not recorded (make reference-record REFERENCE_ARGS=--scenarios=...): {missing}"
