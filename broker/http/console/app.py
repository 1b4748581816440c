"""The console service: its parts (the admin client, sessions, templates) and its routes, one page module each
(broker/http/console/pages/). Every route goes through `Console.page`: the session cookie, the password, the
CSRF token of a POST, then the page's handler; an AdminError (a broker refused or could not be reached) is
shown on an error page with the broker's reason.
"""

from __future__ import annotations

import importlib
import importlib.resources
import logging
import mimetypes
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from broker.http.console import auth
from broker.http.console.admin import AdminError, ClusterAdmin
from broker.http.stack import HttpError, HttpService, StreamingRoute

if TYPE_CHECKING:
    from broker.app import Broker
    from broker.http.registry.service import SchemaRegistry
    from broker.observability.instruments import Instruments

log = logging.getLogger(__name__)

PAGES = ("overview", "topics", "messages", "produce", "groups", "transactions", "security", "trace", "testkit",
         "login")
# Every answer: nothing from elsewhere, no inline script or style (htmx's own indicator style is turned off).
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
                               "base-uri 'self'; form-action 'self'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}
NAV = (("/", "Overview"), ("/topics", "Topics"), ("/groups", "Groups"), ("/transactions", "Transactions"),
       ("/security", "Security"), ("/trace", "Trace"), ("/testkit", "Test kit"))


@dataclass
class Ctx:
    """One request as a page handler sees it."""

    request: Request
    session_id: str
    form: Mapping[str, str] = field(default_factory=dict)

    def arg(self, name: str, default: str = "") -> str:
        return self.form.get(name) or self.request.query_params.get(name) or default


Handler = Callable[[Ctx], Awaitable[Response]]


class Console:
    def __init__(self, broker: Broker, instruments: Instruments, registry: SchemaRegistry | None = None) -> None:
        """`instruments`: the server's fault rules, metrics and trace;
        `registry`: this broker's schema registry (broker.http.registry.service.SchemaRegistry), if it runs one."""
        import jinja2

        self.broker = broker
        self.instruments = instruments
        self.registry = registry
        self.admin = ClusterAdmin(broker)
        password = broker.config.console_password_file
        self.sessions = auth.Sessions(auth.read_password(password) if password else None)
        self.templates = jinja2.Environment(
            loader=jinja2.PackageLoader("broker.http.console", "templates"), autoescape=True,
            undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        from broker.http.console import formats

        self.templates.filters.update(formats.FILTERS)
        self.static = _static_files()
        self.decoder: Any = None
        if registry is not None:
            from broker.http.console.schema_decode import RegistryDecoder

            self.decoder = RegistryDecoder(registry)
        self.rates = formats.Rates()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Until the broker stops: then the console's connections to the brokers close."""
        task_status.started()
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await self.admin.aclose()

    # -- answering ---------------------------------------------------------------------------------------------
    def render(self, ctx: Ctx, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        page = self.templates.get_template(template).render(
            csrf=self.sessions.csrf_token(ctx.session_id), nav=NAV, path=ctx.request.url.path,
            node_id=self.broker.node_id, password_required=self.sessions.required,
            notice=ctx.request.query_params.get("done", ""), **values)
        return HTMLResponse(page, status_code=status, headers=SECURITY_HEADERS)

    def page(self, path: str, handler: Handler, *, methods: tuple[str, ...] = ("GET",), public: bool = False,
             streaming: bool = False) -> BaseRoute:
        """A route through the console's checks: session, password (unless `public`), CSRF on POST."""
        async def endpoint(request: Request) -> Response:
            session_id, new = self.sessions.resolve(request.cookies.get(auth.COOKIE))
            if not public and not self.sessions.allowed(session_id, request.headers.get("authorization")):
                if request.method == "GET" and not streaming:
                    wanted = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                    target = "/login?" + urllib.parse.urlencode({"next": wanted})
                    response: Response = RedirectResponse(target, status_code=303)
                else:
                    raise HttpError(401, "Log in to the console first.")
            else:
                form: dict[str, str] = {}
                if request.method == "POST":
                    form = await _form(request)
                    token = form.get(auth.CSRF_FIELD) or request.headers.get(auth.CSRF_HEADER)
                    if not self.sessions.csrf_ok(session_id, token):
                        raise HttpError(403, "The form's CSRF token is missing or stale: reload the page and send "
                                             "it again.")
                try:
                    response = await handler(Ctx(request, session_id, form))
                except AdminError as exc:
                    raise HttpError(502 if exc.error is None else 400, str(exc)) from None
            if new:
                response.set_cookie(auth.COOKIE, session_id, httponly=True, samesite="strict", path="/")
            return response

        route_class = StreamingRoute if streaming else Route
        return route_class(path, endpoint, methods=list(methods))

    def redirect(self, url: str, done: str = "") -> Response:
        """After a change: back to a page (Post/Redirect/Get), with what was done."""
        if done:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode({"done": done})
        return RedirectResponse(url, status_code=303)

    def error_page(self, error: HttpError) -> Response:
        page = self.templates.get_template("error.html").render(status=error.status, message=error.message)
        return HTMLResponse(page, status_code=error.status, headers=SECURITY_HEADERS)


def console_service(console: Console) -> HttpService:
    routes: list[BaseRoute] = []
    for name in PAGES:
        module = importlib.import_module(f"broker.http.console.pages.{name}")
        routes += module.routes(console)

    async def static(request: Request) -> Response:
        found = console.static.get(request.path_params["name"])
        if found is None:
            raise HttpError(404, f"no such file: {request.url.path}")
        data, media_type = found
        return Response(data, media_type=media_type, headers={"cache-control": "public, max-age=3600",
                                                              **SECURITY_HEADERS})

    async def favicon(request: Request) -> Response:
        return RedirectResponse("/static/favicon.svg", status_code=301)

    routes += [Route("/static/{name}", static, methods=["GET"]), Route("/favicon.ico", favicon, methods=["GET"])]
    return HttpService("console", routes, console.error_page)


def _static_files() -> dict[str, tuple[bytes, str]]:
    """The stylesheet, scripts and icon (package data), read once."""
    out = {}
    for item in importlib.resources.files("broker.http.console").joinpath("static").iterdir():
        if item.is_file():
            media_type = mimetypes.guess_type(item.name)[0] or "application/octet-stream"
            if item.name.endswith(".js"):
                media_type = "text/javascript"
            out[item.name] = (item.read_bytes(), media_type)
    return out


async def _form(request: Request) -> dict[str, str]:
    """A urlencoded form's fields (the console's forms send no files)."""
    body = (await request.body()).decode("utf-8", errors="replace")
    if "multipart/form-data" in request.headers.get("content-type", ""):
        raise HttpError(415, "The console takes application/x-www-form-urlencoded forms.")
    return {k: v[-1] for k, v in urllib.parse.parse_qs(body, keep_blank_values=True).items()}
