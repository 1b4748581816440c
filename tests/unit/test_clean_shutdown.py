"""The data dir's clean-shutdown marker: a restart after a clean stop scans no log, one after a crash (or a
stop that failed to close a log) recovers them."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config.options import BrokerConfig
from broker.log.clean_shutdown import MARKER
from broker.log.partition_log import PartitionLog
from broker.services.topics import TopicManager
from protocol.records import Record, build_batch

T0 = 1_700_000_000_000
PARTITIONS = 3


def started(data_dir: Path) -> TopicManager:
    return TopicManager(BrokerConfig(data_dir=data_dir), T0)


def with_data(data_dir: Path) -> TopicManager:
    topics = started(data_dir)
    topics.create("t", PARTITIONS, now_ms=T0)
    for i in range(PARTITIONS):
        plog = topics.partition("t", i).log
        for n in range(i + 1):
            plog.append_as_leader(build_batch([Record(0, 0, b"k", b"v%d" % n)], base_timestamp=T0), now_ms=T0)
    return topics


def end_offsets(topics: TopicManager) -> list[int]:
    return [topics.partition("t", i).log.log_end_offset for i in range(PARTITIONS)]


def test_a_restart_after_a_clean_stop_scans_no_log(tmp_path, scanned):
    topics = with_data(tmp_path)
    topics.close()
    assert (tmp_path / MARKER).exists()
    scanned.clear()
    topics = started(tmp_path)
    assert scanned == []
    assert end_offsets(topics) == [1, 2, 3]
    # Gone once the logs are loaded: a crash from now on is recovered.
    assert not (tmp_path / MARKER).exists()
    topics.close()


def test_a_restart_after_a_crash_recovers_every_log(tmp_path, scanned):
    with_data(tmp_path)  # never closed
    assert not (tmp_path / MARKER).exists()
    scanned.clear()
    topics = started(tmp_path)
    assert sorted(scanned) == [f"t-{i}" for i in range(PARTITIONS)]
    assert end_offsets(topics) == [1, 2, 3]


def test_a_crash_after_a_clean_restart_is_recovered(tmp_path, scanned):
    topics = with_data(tmp_path)
    topics.close()
    topics = started(tmp_path)
    topics.partition("t", 0).log.append_as_leader(build_batch([Record(0, 0, b"k", b"after")], base_timestamp=T0),
                                                  now_ms=T0)
    scanned.clear()
    topics = started(tmp_path)  # the first one crashed
    assert sorted(scanned) == [f"t-{i}" for i in range(PARTITIONS)]
    assert end_offsets(topics) == [2, 2, 3]


def test_a_log_that_fails_to_close_leaves_no_marker(tmp_path, monkeypatch):
    topics = with_data(tmp_path)
    close = PartitionLog.close

    def failing(plog: PartitionLog) -> None:
        if plog.directory.name == "t-1":
            raise OSError(5, "Input/output error")
        close(plog)

    monkeypatch.setattr(PartitionLog, "close", failing)
    with pytest.raises(OSError):
        topics.close()
    assert not (tmp_path / MARKER).exists()
