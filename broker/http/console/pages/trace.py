"""The live protocol trace of this broker (broker/observability/trace.py): decoded requests and answers, filtered
by API, client id or topic; the newest first, then live (server-sent events). The console's own requests (client
id minibroker-console) are left out unless asked for."""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute

from broker.http.console.admin import CLIENT_ID
from broker.http.console.app import Console, Ctx
from broker.http.console.sse import Emit, EventStream
from broker.http.stack import HttpError

SHOWN = 300  # events the page starts with
MAX_DETAIL = 20_000  # characters of an event's decoded fields shown
_TOPIC_KEYS = ("topic", "name", "topic_name")


@dataclass(frozen=True)
class TraceFilter:
    api: str = ""
    client_id: str = ""
    topic: str = ""
    mine: bool = False  # the console's own requests too

    @classmethod
    def of(cls, args: Mapping[str, str]) -> TraceFilter:
        return cls(args.get("api", "").strip().upper(), args.get("client_id", "").strip(),
                   args.get("topic", "").strip(), args.get("mine") == "1")

    def matches(self, event: Mapping[str, Any]) -> bool:
        if not self.mine and event.get("client_id") == CLIENT_ID:
            return False
        if self.api and event.get("api") != self.api:
            return False
        if self.client_id and self.client_id not in (event.get("client_id") or ""):
            return False
        return not self.topic or mentions_topic(event.get("fields"), self.topic)


def mentions_topic(fields: Any, topic: str, depth: int = 0) -> bool:
    """Whether decoded request or response fields name the topic (a topic's `name` or `topic` field)."""
    if depth > 6:
        return False
    if isinstance(fields, dict):
        return any((key in _TOPIC_KEYS and value == topic) or mentions_topic(value, topic, depth + 1)
                   for key, value in fields.items())
    if isinstance(fields, list):
        return any(mentions_topic(item, topic, depth + 1) for item in fields)
    return False


def shown_event(event: Mapping[str, Any]) -> dict[str, Any]:
    detail = json.dumps(event.get("fields"), indent=1, default=str)
    if len(detail) > MAX_DETAIL:
        detail = detail[:MAX_DETAIL] + f"\n... ({len(detail) - MAX_DETAIL} more characters)"
    moment = datetime.datetime.fromtimestamp(event.get("ts", 0), datetime.UTC)
    return {**event, "time": moment.strftime("%H:%M:%S.%f")[:-3], "detail": detail}


def routes(console: Console) -> list[BaseRoute]:
    def tracer() -> Any:
        found = console.instruments.tracer
        if found is None:
            raise HttpError(503, "The protocol trace is off.")
        return found

    async def trace(ctx: Ctx) -> Response:
        wanted = TraceFilter.of(ctx.request.query_params)
        events = [shown_event(e) for e in reversed(tracer().recent) if wanted.matches(e)][:SHOWN]
        return console.render(ctx, "trace.html", events=events, filter=wanted, query=ctx.request.url.query,
                              kept=tracer().recent.maxlen)

    async def stream(ctx: Ctx) -> Response:
        wanted = TraceFilter.of(ctx.request.query_params)
        source = tracer()
        row = console.templates.get_template("trace_row.html")

        async def produce(emit: Emit) -> None:
            events = source.watch()
            try:
                async for event in events:
                    if wanted.matches(event):
                        await emit("row", row.render(e=shown_event(event)))
            finally:
                source.unwatch(events)

        return EventStream(produce)

    return [console.page("/trace", trace), console.page("/trace/stream", stream, streaming=True)]
