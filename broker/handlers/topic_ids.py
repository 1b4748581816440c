"""Requests that name topics by id instead of by name (OffsetCommit/OffsetFetch v10, TxnOffsetCommit v6:
KIP-848's follow-ups): the name each id stands for, so the handlers go on by name as for older versions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from broker.handlers.context import RequestContext


def name_topics(ctx: RequestContext, topics: Iterable[Any] | None) -> None:
    """Each entry's `name` from its `topic_id`: the topic's name, or None for an id no topic has (answered
    UNKNOWN_TOPIC_ID, as the zero id is)."""
    for t in topics or ():
        found = ctx.broker.topics.get_by_id(t.topic_id)
        t.name = found.name if found is not None else None
