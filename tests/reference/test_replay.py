"""Kafka's recorded answers replayed against minibroker (no JVM): every scenario of tests/reference/scenarios/
on each release it was recorded from, answers compared field by field (harness.compare). Differences must be
explained in tests/reference/known.py, and an explained difference that is gone must leave that list."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.reference import known
from tests.reference.harness import Outcome, check, load_recording, load_scenarios, recordings, run_on_minibroker

CASES = list(recordings())
_OUTCOMES: dict[tuple[str, str], Outcome] = {}


def _replay(release: str, name: str) -> tuple[Outcome, dict]:
    if (release, name) not in _OUTCOMES:
        scenario = load_scenarios().get(name)
        assert scenario is not None, f"recorded/{release}/{name}.json belongs to no scenario: remove it"
        recording = load_recording(release, name)
        assert recording is not None
        with tempfile.TemporaryDirectory(prefix="replay-") as data_dir:
            mini = run_on_minibroker(scenario, release, Path(data_dir), recording.get("t0"))
        _OUTCOMES[(release, name)] = check(release, scenario, recording["exchanges"], mini)
    return _OUTCOMES[(release, name)], load_recording(release, name) or {}


@pytest.mark.parametrize(("release", "name"), CASES, ids=[f"{r}-{n}" for r, n in CASES])
def test_minibroker_answers_as_kafka_did(release: str, name: str) -> None:
    outcome, recording = _replay(release, name)
    unexplained = [d.line() for d in outcome.differences if not d.known]
    assert not unexplained, f"{len(unexplained)} differences from {recording['kafka']}:\n" + "\n".join(unexplained)
    assert outcome.compared == len(recording["exchanges"])


def test_every_known_difference_still_happens() -> None:
    outcomes = [_replay(release, name)[0] for release, name in CASES]
    stale = [k for k in known.KNOWN
             if not any(known.applies(k, o.release, o.scenario) and any(known.matches(k, d) for d in o.differences)
                        for o in outcomes)]
    assert not stale, f"known differences that are gone (remove them from known.py and the manual): {stale}"


def test_every_scenario_is_recorded_for_its_releases() -> None:
    recorded = set(CASES)
    missing = [(r, s.name) for s in load_scenarios().values() for r in s.releases if (r, s.name) not in recorded]
    assert not missing, f"not recorded (make reference-record REFERENCE_ARGS=--scenarios=...): {missing}"
