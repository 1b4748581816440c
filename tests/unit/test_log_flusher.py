"""GroupFlusher: group commit of fdatasyncs under trio."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import trio
import trio.testing

from broker.log.config import LogConfig
from broker.log.flusher import GroupFlusher
from broker.log.partition_log import PartitionLog
from protocol.records import Record, build_batch

T0 = 1_700_000_000_000


class GatedLog:
    """A log whose flush blocks until the test opens the gate, to order events without sleeping."""

    def __init__(self) -> None:
        self.log_end_offset = 0
        self.flushed_offset = 0
        self.closed = False
        self.flush_calls = 0
        self.started = threading.Semaphore(0)
        self.gate = threading.Event()

    def flush(self) -> None:
        self.flush_calls += 1
        target = self.log_end_offset  # captured first, as PartitionLog.flush does
        self.started.release()
        self.gate.wait()
        self.flushed_offset = max(self.flushed_offset, target)


def test_waiters_queued_behind_a_running_flush_share_the_next_one():
    async def main() -> None:
        log = GatedLog()
        flusher = GroupFlusher("grouped")
        done: list[int] = []

        async def wait(offset: int) -> None:
            await flusher.wait_durable(log, offset)
            assert log.flushed_offset > offset
            done.append(offset)

        async with trio.open_nursery() as nursery:
            log.log_end_offset = 1
            nursery.start_soon(wait, 0)
            await trio.to_thread.run_sync(log.started.acquire)  # flush 1 runs, covering offset 0 only
            log.log_end_offset = 10
            for offset in range(1, 10):
                nursery.start_soon(wait, offset)
            await trio.testing.wait_all_tasks_blocked()
            assert log.flush_calls == 1
            log.gate.set()
        assert sorted(done) == list(range(10))
        assert log.flush_calls == flusher.flushes == 2
        assert flusher._pending == {} and flusher._running is None

    trio.run(main)


def test_already_durable_offsets_do_not_flush():
    async def main() -> None:
        log = GatedLog()
        log.flushed_offset = 5
        flusher = GroupFlusher("grouped")
        await flusher.wait_durable(log, 4)
        assert log.flush_calls == 0

    trio.run(main)


def test_policy_always_flushes_once_per_waiter_one_at_a_time():
    async def main() -> None:
        log = GatedLog()
        log.gate.set()
        log.log_end_offset = 5
        flusher = GroupFlusher("always")
        async with trio.open_nursery() as nursery:
            for offset in range(5):
                nursery.start_soon(flusher.wait_durable, log, offset)
        assert log.flush_calls == 5 and log.flushed_offset == 5

    trio.run(main)


def test_policy_none_never_flushes():
    async def main() -> None:
        log = GatedLog()
        await GroupFlusher("none").wait_durable(log, 100)
        assert log.flush_calls == 0

    trio.run(main)


def test_unknown_policy():
    with pytest.raises(ValueError):
        GroupFlusher("sometimes")


def test_a_failed_flush_reaches_the_waiter():
    class FailingLog(GatedLog):
        def flush(self) -> None:
            raise OSError(5, "I/O error")

    async def main() -> None:
        flusher = GroupFlusher("grouped")
        with pytest.raises(OSError):
            await flusher.wait_durable(FailingLog(), 0)
        assert flusher._pending == {} and flusher._running is None

    trio.run(main)


def test_a_closed_log_releases_its_waiters():
    async def main() -> None:
        log = GatedLog()
        log.closed = True
        await GroupFlusher("grouped").wait_durable(log, 3)

    trio.run(main)


def test_concurrent_producers_on_a_real_log(tmp_path: Path):
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=4000), now_ms=T0)
    flusher = GroupFlusher("grouped")
    acked: list[int] = []

    async def producer(i: int) -> None:
        for _ in range(5):
            result = log.append_as_leader(build_batch([Record(0, 0, None, b"x" * 100)]), now_ms=T0)
            await flusher.wait_durable(log, result.last_offset)
            assert log.flushed_offset > result.last_offset
            acked.append(result.last_offset)
            await trio.sleep(0)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            for i in range(20):
                nursery.start_soon(producer, i)

    trio.run(main)
    assert sorted(acked) == list(range(100))
    assert flusher.flushes < len(acked)
    assert log.flushed_offset == log.log_end_offset == 100
    assert log.segment_count > 1


def test_fast_fdatasyncs_run_inline_and_a_slow_one_sends_them_back_to_a_thread():
    class TimedLog:
        def __init__(self) -> None:
            self.log_end_offset = 0
            self.flushed_offset = 0
            self.closed = False
            self.delay = 0.0
            self.threads: list[bool] = []  # per flush: did it run in the event loop's thread?

        def flush(self) -> None:
            self.threads.append(threading.current_thread() is threading.main_thread())
            if self.delay:
                threading.Event().wait(self.delay)
            self.flushed_offset = self.log_end_offset

    async def main() -> None:
        log = TimedLog()
        flusher = GroupFlusher("grouped", inline_below_s=0.01)
        for offset in range(3):
            log.log_end_offset = offset + 1
            await flusher.wait_durable(log, offset)
        assert log.threads == [False, True, True]  # the first is measured in a thread, then inline
        log.delay = 0.2  # a slow disk: the average passes the bound...
        log.log_end_offset = 4
        await flusher.wait_durable(log, 3)
        log.log_end_offset = 5
        await flusher.wait_durable(log, 4)
        assert log.threads[-1] is False  # ...and the next fdatasync goes to a worker thread again

    trio.run(main)


def _append(log: PartitionLog) -> int:
    return log.append_as_leader(build_batch([Record(0, 0, None, b"x" * 100)]), now_ms=T0).last_offset


def test_the_waiters_of_many_partitions_share_one_filesystem_sync(tmp_path: Path, monkeypatch):
    from broker.log import syncfs

    if not syncfs.available():
        pytest.skip("syncfs(2) is Linux only")
    calls: list[int] = []
    real = syncfs.syncfs
    monkeypatch.setattr(syncfs, "syncfs", lambda fd: (calls.append(fd), real(fd)))
    logs = [PartitionLog.open(tmp_path / f"t-{i}", LogConfig(segment_bytes=4000), now_ms=T0) for i in range(20)]
    flusher = GroupFlusher("grouped", root=tmp_path)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            for log in logs:  # one produce request's partitions: appended, then all wait
                nursery.start_soon(flusher.wait_durable, log, _append(log))

    trio.run(main)
    assert all(log.flushed_offset == log.log_end_offset == 1 for log in logs)
    # The first waiter's round covers its own log; the other 19 queue behind it and share the next.
    assert flusher.flushes == 2
    assert len(calls) == 1
    for log in logs:
        log.close()


def test_a_failed_filesystem_sync_publishes_nothing(tmp_path: Path, monkeypatch):
    from broker.log import syncfs

    if not syncfs.available():
        pytest.skip("syncfs(2) is Linux only")

    def failing(fd: int) -> None:
        raise OSError(5, "I/O error")

    logs = [PartitionLog.open(tmp_path / f"t-{i}", LogConfig(segment_bytes=4000), now_ms=T0) for i in range(3)]
    flusher = GroupFlusher("grouped", root=tmp_path)
    offsets = [_append(log) for log in logs]
    monkeypatch.setattr(syncfs, "syncfs", failing)
    with pytest.raises(OSError):
        trio.run(flusher._round, logs)
    assert [log.flushed_offset for log in logs] == [0, 0, 0]
    monkeypatch.undo()
    trio.run(flusher._round, logs)  # the flush locks were released: the next round goes through
    assert [log.flushed_offset for log in logs] == [o + 1 for o in offsets]
    for log in logs:
        log.close()


def test_a_request_flushes_its_logs_itself_while_rounds_run_inline(tmp_path: Path):
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=4000), now_ms=T0)
    flusher = GroupFlusher("grouped", inline_below_s=10.0, root=tmp_path)
    assert not flusher.flushes_inline  # nothing measured yet: the first round goes to a thread
    trio.run(flusher.wait_durable, log, _append(log))
    assert flusher.flushes_inline
    offset = _append(log)
    assert log.flushed_offset <= offset
    flusher.flush_now([log])
    assert log.flushed_offset == offset + 1
    assert not GroupFlusher("none").flushes_inline and not GroupFlusher("always").flushes_inline
    log.close()
