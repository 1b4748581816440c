"""Background tasks over every partition: retention (delete old segments per the topic's settings) and
producer-id expiration with the producer-state snapshot (which bounds the replay after a crash)."""

from __future__ import annotations

import logging

from broker.clock import Clock
from broker.config.options import BrokerConfig
from broker.services.topics import TopicManager

log = logging.getLogger(__name__)


async def run_retention(topics: TopicManager, clock: Clock, config: BrokerConfig) -> None:
    interval = config.log_retention_check_interval_ms / 1000
    while True:
        await clock.sleep(interval)
        now = clock.now_ms()
        for partition in topics.hosted():
            try:
                deleted = partition.log.apply_retention(now)
            except OSError as exc:
                log.error("retention of %s-%d failed: %s", partition.topic, partition.index, exc)
                continue
            if deleted:
                log.info("retention deleted %d segment(s) of %s-%d", deleted, partition.topic, partition.index)


async def run_producer_expiration(topics: TopicManager, clock: Clock, config: BrokerConfig) -> None:
    interval = config.producer_id_expiration_check_interval_ms / 1000
    while True:
        await clock.sleep(interval)
        now = clock.now_ms()
        for partition in topics.hosted():
            # Dynamic broker config: read each round.
            partition.producers.expire(now, config.producer_id_expiration_ms)
            partition.producers.remove_before(partition.log.log_start_offset)
            try:
                partition.log.flush()  # the snapshot must not cover data that a crash could lose
                partition.save_producer_state()
            except OSError as exc:
                log.error("snapshot of %s-%d failed: %s", partition.topic, partition.index, exc)
