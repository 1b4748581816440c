"""The HTTP stack's time bound and its one exemption, over a real socket with hypercorn on trio: a route that
overruns REQUEST_TIMEOUT_S is cut with the service's error body, a StreamingRoute (server-sent events) is not and
goes on until its client goes, and then its handler is stopped."""

from __future__ import annotations

import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from broker.http.console.sse import EventStream, event_bytes
from broker.http.stack import HttpService, StreamingRoute, build_app, serve

TIMEOUT_S = 0.3


async def _get(host: str, port: int, path: str, until: bytes) -> tuple[trio.SocketStream, bytes]:
    stream = await trio.open_tcp_stream(host, port)
    await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    received = b""
    while until not in received:
        chunk = await stream.receive_some()
        assert chunk, received
        received += chunk
    return stream, received


def test_a_stream_outlives_the_request_bound_and_stops_when_its_client_goes() -> None:
    stopped = trio.Event()

    async def slow(request: Request) -> Response:
        await trio.sleep(TIMEOUT_S * 10)
        return JSONResponse("late")

    async def events(request: Request) -> Response:
        async def produce(emit) -> None:  # noqa: ANN001
            try:
                for n in range(1000):
                    await emit("tick", str(n))
                    await trio.sleep(TIMEOUT_S / 3)
            finally:
                stopped.set()

        return EventStream(produce)

    service = HttpService("test", [Route("/slow", slow), StreamingRoute("/events", events)],
                          lambda error: JSONResponse({"error": error.message}, status_code=error.status))
    app = build_app([service], timeout_s=TIMEOUT_S)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            host, port = await nursery.start(serve, app, "127.0.0.1", 0)
            with trio.fail_after(10):
                _, cut = await _get(host, port, "/slow", b"}")
                assert b" 500 " in cut.split(b"\r\n")[0] and b"Operation timed out" in cut
                stream, received = await _get(host, port, "/events", event_bytes("tick", "6"))  # past the bound
                assert b"text/event-stream" in received and not stopped.is_set()
                await stream.aclose()
                await stopped.wait()  # the client went: the stream's handler is stopped
            nursery.cancel_scope.cancel()

    trio.run(main)

