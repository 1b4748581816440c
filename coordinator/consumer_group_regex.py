"""Regular expression subscriptions of a KIP-848 consumer group (Kafka 4.1's GroupMetadataManager:
maybeUpdateRegularExpressions, then the resolution its executor runs and handleRegularExpressionsResult): when
a member's regex changes, when the group's resolved regexes are stale, and what they resolve to. Pure: the
coordinator writes the records. Matching itself (RE2's syntax in Python's `re`) is coordinator/topic_regex.py.
"""

from __future__ import annotations

from coordinator.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    ResolvedRegex,
    SubscriptionCount,
    regex_record,
)
from coordinator.group_interfaces import GroupError, GroupRecord, tombstone
from coordinator.topic_regex import InvalidRegex, compile_regex, matching_topics
from protocol.header import ErrorCode
from protocol.kafka4_group_records import GroupRecordType

REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000


def regex_update(group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                 records: list[GroupRecord], now_ms: int, *, refresh_interval_ms: int,
                 version_with_new_topics: int) -> tuple[bool, bool]:
    """Kafka's maybeUpdateRegularExpressions: (bump the group epoch, refresh the regexes after this)."""
    old, new = member.subscribed_topic_regex or None, updated.subscribed_topic_regex or None
    bump = refresh = False
    if old != new:
        if old is not None and group.num_subscribed_members(old) == 1:
            records.append(tombstone(GroupRecordType.CONSUMER_GROUP_REGULAR_EXPRESSION, group.group_id,
                                     regular_expression=old))
        if new is not None:
            if group.num_subscribed_members(new) == 0:
                try:
                    compile_regex(new)
                except InvalidRegex as exc:
                    raise GroupError(ErrorCode.INVALID_REGULAR_EXPRESSION, str(exc)) from None
                refresh = True
            else:
                bump = new in group.resolved_regexes
        elif old is not None:
            bump = True
    if not refresh and not group.subscribed_regexes:
        return bump, False
    last = max((r.timestamp_ms for r in group.resolved_regexes.values()), default=-(2**63))
    if now_ms <= last + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
        return bump, False
    regexes = group.subscribed_regexes_after(member, updated)
    refresh |= len(regexes) != len(group.resolved_regexes)
    version = max((r.version for r in group.resolved_regexes.values()), default=0)
    refresh |= version < version_with_new_topics
    refresh |= now_ms > last + refresh_interval_ms
    return bump, refresh and bool(regexes)


def resolve_regexes(group: ConsumerGroup, topic_names: list[str], topics_version: int,
                    now_ms: int) -> tuple[list[GroupRecord], bool, dict[str, SubscriptionCount]]:
    """The group's regexes resolved against the topics: their records, whether the topics they match changed,
    and the topics the group subscribes to then (by name or by regex)."""
    records: list[GroupRecord] = []
    changed = False
    subscribed = group.subscribed_topics_after(None, None)
    for regex in list(group.subscribed_regexes):
        resolved = ResolvedRegex(matching_topics(regex, topic_names), topics_version, now_ms)
        old = group.resolved_regexes.get(regex)
        old_topics = old.topics if old is not None else frozenset()
        if old_topics != resolved.topics:
            changed = True
            for name in old_topics:
                subscribed[name].by_regex -= 1
            for name in resolved.topics:
                subscribed.setdefault(name, SubscriptionCount()).by_regex += 1
        records.append(regex_record(group.group_id, regex, resolved))
    return records, changed, {n: c for n, c in subscribed.items() if c.by_name > 0 or c.by_regex > 0}
