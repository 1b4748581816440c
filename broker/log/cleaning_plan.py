"""Which part of a compacted log a cleaning pass would rewrite now, if any (the first step of a pass: see
broker.log.cleaner). Runs on the event-loop thread, between appends."""

from __future__ import annotations

import os

from broker.log.cleaner import CleaningJob, SegmentView
from broker.log.partition_log import PartitionLog
from broker.log.producer_state import ProducerStateManager
from broker.log.segment import LogSegment


def plan_cleaning(plog: PartitionLog, producers: ProducerStateManager, *, now_ms: int, first_dirty: int,
                  horizon_due: bool, max_map_entries: int) -> CleaningJob | None:
    """The job a pass over this log would do now, or None when it is not due (see the module doc)."""
    config = plog.config
    closed, generation, cleanable_end = plog.cleanable_segments()
    first_unstable = producers.first_unstable_offset()
    young_after = now_ms - config.min_compaction_lag_ms
    chosen: list[LogSegment] = []
    ends: list[int] = []
    for i, segment in enumerate(closed):
        end = closed[i + 1].base_offset if i + 1 < len(closed) else cleanable_end
        if first_unstable is not None and end > first_unstable:
            break
        if config.min_compaction_lag_ms > 0 and segment.largest_timestamp() > young_after:
            break
        chosen.append(segment)
        ends.append(end)
    if not chosen:
        return None
    first_dirty = max(first_dirty, plog.log_start_offset)
    dirty = [(s, end) for s, end in zip(chosen, ends, strict=True) if end > first_dirty]
    dirty_bytes = sum(s.size for s, _ in dirty)
    total_bytes = sum(s.size for s in chosen)
    due = horizon_due
    if dirty_bytes > 0 and total_bytes > 0:
        due = due or dirty_bytes / total_bytes > config.min_cleanable_dirty_ratio
        first_timestamp = dirty[0][0].first_batch_timestamp()
        due = due or (first_timestamp >= 0 and now_ms - first_timestamp > config.max_compaction_lag_ms)
    if not due:
        return None
    views = [SegmentView(s.base_offset, end, s.size, os.dup(s.fd), len(s.offset_index), len(s.time_index),
                         os.fstat(s.fd).st_mtime_ns) for s, end in zip(chosen, ends, strict=True)]
    aborted = sorted(((a.producer_id, a.first_offset) for a in producers.aborted), key=lambda a: a[1])
    return CleaningJob(plog.directory, config, now_ms, views, first_dirty, aborted, producers.last_batches(),
                       max_map_entries, chosen, generation)
