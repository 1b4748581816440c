"""MkDocs hook: the manual's reference tables, generated from the code at every build so that they cannot
drift from it. A page asks for one with a comment on a line of its own:

    <!-- generated: broker-options -->

- `broker-options`: every Kafka-named broker option (broker.config.options.OPTIONS), its default and meaning;
- `cli-options`: the command line's options (broker.cli.build_parser);
- `api-versions`: the API versions each `--kafka-version` profile advertises and accepts, from the dispatch
  table (broker.server.dispatch) cut by the release tables (broker.config.kafka_versions), as served;
- `features`: the feature levels each profile advertises and finalizes.

An unknown name fails the build. tests/docs/test_generated_pages.py checks the tables against the code too.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # document this checkout, whatever is installed
    sys.path.insert(0, str(ROOT))

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Path):
        return str(value).removeprefix("./") or "."
    return str(value)


def broker_options() -> str:
    from broker.config.options import OPTIONS, BrokerConfig

    defaults = BrokerConfig()
    fields = {f.name for f in dataclasses.fields(BrokerConfig)}
    rows = ["| option | default | meaning |", "|---|---|---|"]
    for option in OPTIONS:
        value = getattr(defaults, option.attr) if option.attr in fields else None
        rows.append(f"| `{option.kafka_name}` | `{_cell(_default(value))}` | {_cell(option.doc)} |")
    return "\n".join(rows)


def cli_options() -> str:
    from broker.cli import build_parser

    rows = ["| option | meaning |", "|---|---|"]
    for action in build_parser()._actions:
        if not action.option_strings or action.dest == "help":
            continue
        metavar = "" if action.nargs == 0 or (action.choices and not action.metavar) else \
            " " + (action.metavar or action.dest.upper())
        names = ", ".join(f"`{name}{metavar}`" for name in action.option_strings)
        meaning = action.help or ""
        if action.choices:
            meaning = (meaning + "; " if meaning else "") + "one of " + ", ".join(f"`{c}`" for c in action.choices)
            if action.default is not None:
                meaning += f" (default `{action.default}`)"
        rows.append(f"| {names} | {_cell(meaning)} |")
    return "\n".join(rows)


def _range(lo_hi: tuple[int, int] | None) -> str:
    if lo_hi is None:
        return ""
    lo, hi = lo_hi
    return str(lo) if lo == hi else f"{lo}-{hi}"


def api_versions() -> str:
    from broker.config import kafka_versions
    from broker.server import dispatch

    releases = kafka_versions.releases()
    profiles = {r: dispatch.version_profile(r) for r in releases}
    clusters = {r: dispatch.version_profile(r, cluster=True) for r in releases}
    table = dispatch.table()
    header = "| API (key) | served | " + " | ".join(releases) + " |"
    rows = [header, "|---|---|" + "---|" * len(releases)]
    for key in sorted(table):
        api = table[key]
        name = api.request_name.removesuffix("Request")
        cells = []
        for release in releases:
            profile = profiles[release]
            advertised = profile.advertised.get(key)
            accepted = profile.accepted.get(key)
            cell = _range(advertised)
            if advertised is not None and accepted != advertised:
                cell += f" (accepts {_range(accepted)})" if accepted else " (refused)"
            if advertised is not None and key not in clusters[release].advertised:
                cell += " ¹"
            if advertised is None and key in clusters[release].accepted:
                cell = "cluster ²"
            cells.append(cell or "–")
        rows.append(f"| {name} ({key}) | {_range((api.min_version, api.max_version))} | " + " | ".join(cells) + " |")
    rows.append("")
    rows.append("¹ single broker only: not offered by the brokers of a cluster. "
                "² not advertised to clients: the requests brokers of a cluster send each other.")
    return "\n".join(rows)


def features() -> str:
    from broker.config import kafka_versions
    from broker.server import dispatch

    rows = ["| profile | supported (min-max) | finalized |", "|---|---|---|"]
    for release in kafka_versions.releases():
        answer = dispatch.version_profile(release).features  # the ApiVersions v3+ feature fields served
        supported = ", ".join(f"`{f['name']}` {f['min_version']}-{f['max_version']}"
                              for f in answer["supported_features"]) or "none (a ZooKeeper-mode broker)"
        finalized = ", ".join(f"`{f['name']}` {f['max_version_level']}" for f in answer["finalized_features"]) or "–"
        rows.append(f"| {release} | {supported} | {finalized} |")
    return "\n".join(rows)


GENERATORS: dict[str, Callable[[], str]] = {
    "broker-options": broker_options,
    "cli-options": cli_options,
    "api-versions": api_versions,
    "features": features,
}


def render(markdown: str) -> str:
    """The page with each `<!-- generated: NAME -->` line replaced by its table."""
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"no generated table {name!r} (known: {', '.join(GENERATORS)})")
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return render(markdown)
