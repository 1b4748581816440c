"""The short crash loop of `make test` (`make soak` runs 20 kills): SIGKILL under load from an idempotent
producer, a transactional producer and a consumer group; after every restart nothing acknowledged is lost
or duplicated, committed transactions are complete, aborted ones invisible, group offsets intact, and no
producer sees OUT_OF_ORDER_SEQUENCE_NUMBER (see tests/soak/crash_loop.py)."""

from __future__ import annotations

from tests.soak.crash_loop import run


def test_crash_loop(tmp_path):
    lines: list[str] = []
    counts = run(3, seed=7, data_dir=tmp_path / "data", log=lines.append)
    assert counts["kills"] == 3 and len(lines) == 3
    assert counts["acknowledged"] > 0 and counts["committed_txns"] > 0 and counts["aborted_txns"] > 0
    assert counts["group_partitions_committed"] > 0
