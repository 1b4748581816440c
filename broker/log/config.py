"""The topic configs a partition log obeys, named after Kafka's topic configs (snake_cased)."""

from __future__ import annotations

from dataclasses import dataclass

DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class LogConfig:
    """A partition log's settings: the topic's configs over the broker's defaults."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * DAY_MS
    segment_index_bytes: int = 10 * 1024 * 1024  # a segment rolls when either index would outgrow this
    retention_ms: int = 7 * DAY_MS  # -1: no time limit
    retention_bytes: int = -1  # -1: no size limit
    max_message_bytes: int = 1048588
    index_interval_bytes: int = 4096
    message_timestamp_type: str = "CreateTime"  # or "LogAppendTime"
    # What the old message formats need (Produce v0-2 up-conversion, Fetch v0-3 down-conversion).
    compression_type: str = "producer"  # the codec an up-converted batch gets ("producer": the producer's)
    # CreateTime records further than these from the broker's clock are refused (INVALID_TIMESTAMP).
    message_timestamp_before_max_ms: int = 2**63 - 1
    message_timestamp_after_max_ms: int = 2**63 - 1
    message_downconversion_enable: bool = True
    cleanup_policy: str = "delete"  # "delete", "compact" or "compact,delete"
    # Compaction (Kafka's LogCleaner), for the compact policy.
    min_cleanable_dirty_ratio: float = 0.5
    delete_retention_ms: int = DAY_MS  # tombstones and markers stay this long after their first cleaning
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 2**63 - 1

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def compacted(self) -> bool:
        return "compact" in (p.strip() for p in self.cleanup_policy.split(","))

    @property
    def delete_enabled(self) -> bool:
        """retention.ms/bytes apply only with the delete policy (UnifiedLog.deleteOldSegments)."""
        return "delete" in (p.strip() for p in self.cleanup_policy.split(","))
