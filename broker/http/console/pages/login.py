"""Logging in and out (with `--console-password-file`): the password at a form, a session cookie after."""

from __future__ import annotations

from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute

from broker.http.console.app import Console, Ctx


def routes(console: Console) -> list[BaseRoute]:
    async def form(ctx: Ctx, error: str = "", status: int = 200) -> Response:
        return console.render(ctx, "login.html", status=status, error=error, next=_local(ctx.arg("next", "/")))

    async def login(ctx: Ctx) -> Response:
        if not console.sessions.required:
            return RedirectResponse("/", status_code=303)
        if not console.sessions.login(ctx.session_id, ctx.arg("password")):
            return await form(ctx, "Wrong password.", 401)
        return RedirectResponse(_local(ctx.arg("next", "/")), status_code=303)

    async def logout(ctx: Ctx) -> Response:
        console.sessions.logout(ctx.session_id)
        return RedirectResponse("/login", status_code=303)

    return [console.page("/login", form, public=True), console.page("/login", login, methods=("POST",), public=True),
            console.page("/logout", logout, methods=("POST",), public=True)]


def _local(target: str) -> str:
    """A path of the console only (never another site: an open redirect)."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"
