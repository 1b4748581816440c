"""Server-sent events for the live pages (tail, trace): an answer that lasts until its client goes (an
`http.disconnect`) or the broker stops, with a comment every few seconds so that an idle stream stays open and
a client that went unnoticed is found out. Its route is a StreamingRoute: the request time bound does not
apply."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio
from starlette.responses import Response

from broker.http.stack import Receive, Scope, Send

KEEPALIVE_S = 10.0

Emit = Callable[[str, str], Awaitable[None]]  # (event name, data)
Producer = Callable[[Emit], Awaitable[None]]


def event_bytes(event: str, data: str) -> bytes:
    lines = "".join(f"data: {line}\n" for line in data.splitlines() or [""])
    return f"event: {event}\n{lines}\n".encode()


class EventStream(Response):
    media_type = "text/event-stream"

    def __init__(self, produce: Producer) -> None:
        super().__init__(headers={"cache-control": "no-cache", "x-accel-buffering": "no"})
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]  # a stream: no length
        self.produce = produce

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        lock = trio.Lock()

        async def emit(event: str, data: str) -> None:
            async with lock:
                await send({"type": "http.response.body", "body": event_bytes(event, data), "more_body": True})

        gone = False
        try:
            async with trio.open_nursery() as nursery:
                async def until_disconnect() -> None:
                    nonlocal gone
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    gone = True
                    nursery.cancel_scope.cancel()

                async def keepalive() -> None:
                    while True:
                        await trio.sleep(KEEPALIVE_S)
                        async with lock:
                            await send({"type": "http.response.body", "body": b": keepalive\n\n", "more_body": True})

                async def run() -> None:
                    await self.produce(emit)
                    nursery.cancel_scope.cancel()

                nursery.start_soon(until_disconnect)
                nursery.start_soon(keepalive)
                nursery.start_soon(run)
        finally:
            if not gone:  # the stream ended (or the broker stops): say so and end the answer properly
                with trio.move_on_after(1.0, shield=True):
                    try:
                        await send({"type": "http.response.body", "more_body": False,
                                    "body": event_bytes("failure", "The stream ended: the broker stopped.")})
                    except OSError:
                        pass
