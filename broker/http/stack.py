"""The HTTP stack: each service (the admin endpoint, the schema registry, later the console) is a set of
Starlette routes with its own error body; the services asked for on one address are one Starlette app, bounded
(body size, request time) and served by hypercorn inside the broker's trio run.

    app = build_app([admin_service(...), registry_service(...)])
    address = await nursery.start(serve, app, "127.0.0.1", 0)

A `StreamingRoute` (server-sent events: the console's live tail and trace) is not cut at the
request time; it runs until its client goes or the broker stops.

A request never takes the broker down: a body over the bound, a request over its time, a failing handler and
an unknown path are each answered with the service's error body (and a handler's exception is logged).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import trio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 8 * 1024 * 1024  # Confluent's schema-registry refuses schemas over its own bound too
REQUEST_TIMEOUT_S = 30.0

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class HttpError(Exception):
    """An answer other than success: the HTTP status, a message and (for services that have them) a finer
    error code, rendered by the service's `error`."""

    def __init__(self, status: int, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code if code is not None else status


@dataclass(frozen=True)
class HttpService:
    name: str
    routes: Sequence[BaseRoute]
    error: Callable[[HttpError], Response]  # the service's error body

    def owns(self, scope: Scope) -> bool:
        return any(route.matches(scope)[0] != Match.NONE for route in self.routes)

    def streams(self, scope: Scope) -> bool:
        """Whether the request goes to a streaming route (exempt from the request time bound)."""
        return any(isinstance(route, StreamingRoute) and route.matches(scope)[0] == Match.FULL
                   for route in self.routes)


class StreamingRoute(Route):
    """A route whose answer is a stream that lasts (server-sent events): the request time bound does not apply
    to it; it ends when the client goes or the broker stops."""


def build_app(services: Sequence[HttpService], *, max_body: int = MAX_BODY_BYTES,
              timeout_s: float = REQUEST_TIMEOUT_S) -> Bounded:
    """One app for the services served on one address (their paths must not overlap)."""
    def owner(scope: Scope) -> HttpService:
        return next((s for s in services if s.owns(scope)), services[0])

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return owner(request.scope).error(HttpError(exc.status_code, str(exc.detail)))

    async def own_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HttpError)
        return owner(request.scope).error(exc)

    async def failure(request: Request, exc: Exception) -> Response:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return owner(request.scope).error(HttpError(500, f"Internal Server Error: {type(exc).__name__}: {exc}"))

    routes = [route for service in services for route in service.routes]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error, HttpError: own_error,
                                                       Exception: failure})
    return Bounded(app, owner, max_body, timeout_s)


class _BodyTooLarge(Exception):
    pass


class Bounded:
    """ASGI middleware: the request body at most `max_body` bytes (413), the answer within `timeout_s` (500,
    code 50002: Confluent's operation timeout)."""

    def __init__(self, app: Starlette, owner: Callable[[Scope], HttpService], max_body: int,
                 timeout_s: float) -> None:
        self.app = app
        self.owner = owner
        self.max_body = max_body
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length", b"0")
        if not length.isdigit() or int(length) > self.max_body:
            await self._refuse(scope, send, HttpError(413, f"Request body over {self.max_body} bytes"))
            return
        received = 0
        started = False

        async def bounded_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body:
                raise _BodyTooLarge
            return message

        async def marked_send(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        timeout_s = math.inf if self.owner(scope).streams(scope) else self.timeout_s
        try:
            with trio.move_on_after(timeout_s) as deadline:
                await self.app(scope, bounded_receive, marked_send)
        except _BodyTooLarge:
            if not started:
                await self._refuse(scope, send, HttpError(413, f"Request body over {self.max_body} bytes"))
            return
        if deadline.cancelled_caught and not started:
            await self._refuse(scope, send, HttpError(500, f"Operation timed out after {self.timeout_s:g} s",
                                                      50002))

    async def _refuse(self, scope: Scope, send: Send, error: HttpError) -> None:
        response = self.owner(scope).error(error)
        await response(scope, _no_body, send)


async def _no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def serve(app: Bounded, host: str, port: int, *,
                task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve `app` on host:port (0: the kernel picks) until cancelled; started with the bound address."""
    from hypercorn.config import Config
    from hypercorn.trio import serve as hypercorn_serve

    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("broker.http.hypercorn")
    config.include_server_header = False
    config.graceful_timeout = 1.0
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(functools.partial(hypercorn_serve, app, config,
                                                      shutdown_trigger=trio.sleep_forever))
        bound_host, _, bound_port = binds[0].partition("://")[2].rpartition(":")
        task_status.started((bound_host.strip("[]"), int(bound_port)))
