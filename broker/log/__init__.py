"""Partition logs on disk: segments and their indexes, recovery, the grouped fdatasync, compaction, and each
partition's producer state with its snapshots."""
