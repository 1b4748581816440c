"""What the handlers call: topics and their partitions, the group and transaction coordinators' shells
(their internal topics, timers, replay), transaction markers, producer ids, and the background tasks over
the logs (retention, producer-id expiry, the log cleaner)."""
