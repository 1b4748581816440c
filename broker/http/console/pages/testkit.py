"""Under the test kit: this broker's fault rules (list, add, remove, clear: broker/observability/faults.py, the
rules BrokerThread.inject_error and the admin endpoint set) and its virtual clock (`virtual_time`: advance it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute

from broker.http.console.app import Console, Ctx
from broker.observability.faults import FaultAction
from protocol.header import ApiKey, ErrorCode

_NUMBERS = ("partition", "delay_ms", "duration_ms")


def rule_spec(form: Mapping[str, str]) -> dict[str, Any]:
    """FaultInjector.add's arguments from the form (ValueError for a bad one)."""
    spec: dict[str, Any] = {}
    for name in ("api", "error", "topic", "client_id", *_NUMBERS):
        text = form.get(name, "").strip()
        if not text:
            continue
        if name in _NUMBERS:
            if not text.isdigit():
                raise ValueError(f"{name} is a whole number, not {text!r}")
            spec[name] = int(text)
        else:
            spec[name] = text
    count = form.get("count", "").strip().lower()
    if count in ("all", "every"):
        spec["count"] = None
    elif count:
        if not count.isdigit():
            raise ValueError(f"count is a number or 'all', not {count!r}")
        spec["count"] = int(count)
    for name, names in (("api", ApiKey.__members__), ("error", ErrorCode.__members__)):
        if name in spec and spec[name].upper() not in names:
            raise ValueError(f"no {'API' if name == 'api' else 'error'} named {spec[name]!r}")
    return spec


def routes(console: Console) -> list[BaseRoute]:
    faults = console.instruments.faults
    clock = console.broker.clock

    async def testkit(ctx: Ctx, error: str = "", status: int = 200) -> Response:
        return console.render(ctx, "testkit.html", status=status, rules=faults.describe(console.broker.now_ms()),
                              actions=[a.value for a in FaultAction], error=error, virtual=clock.virtual,
                              now_ms=console.broker.now_ms(), form=ctx.form,
                              apis=sorted(ApiKey.__members__), errors=sorted(ErrorCode.__members__))

    async def add(ctx: Ctx) -> Response:
        try:
            rule = faults.add(ctx.arg("action"), now_ms=console.broker.now_ms(), **rule_spec(ctx.form))
        except (ValueError, KeyError) as exc:
            return await testkit(ctx, f"Not a fault rule: {exc}", 400)
        return console.redirect("/testkit", f"Added fault rule {rule.id}.")

    async def clear(ctx: Ctx) -> Response:
        chosen = ctx.arg("rule")
        if chosen:
            if not chosen.isdigit() or not faults.remove(int(chosen)):
                return await testkit(ctx, f"No fault rule {chosen}.", 404)
            return console.redirect("/testkit", f"Removed fault rule {chosen}.")
        faults.clear()
        return console.redirect("/testkit", "Cleared every fault rule.")

    async def advance(ctx: Ctx) -> Response:
        if not clock.virtual:
            return await testkit(ctx, "This broker runs on the wall clock (virtual_time=True starts it on a "
                                      "virtual one).", 409)
        try:
            seconds = float(ctx.arg("seconds"))
            if not 0 <= seconds < 10 ** 9:
                raise ValueError
        except ValueError:
            return await testkit(ctx, f"Advance by a number of seconds (0 or more), not {ctx.arg('seconds')!r}.", 400)
        clock.advance(int(seconds * 1000))
        return console.redirect("/testkit", f"Advanced the virtual clock by {seconds:g} s.")

    return [console.page("/testkit", testkit), console.page("/testkit/faults", add, methods=("POST",)),
            console.page("/testkit/faults/clear", clear, methods=("POST",)),
            console.page("/testkit/clock", advance, methods=("POST",))]
