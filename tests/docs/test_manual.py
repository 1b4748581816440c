"""The manual builds (MkDocs, strict: a broken link or anchor, a page missing from the nav, an API reference that
does not resolve fail it), and its generated reference tables say what the code does."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from broker.config.kafka_versions import releases
from broker.config.options import OPTIONS
from broker.server import dispatch

REPO = Path(__file__).resolve().parents[2]


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_manual_builds_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    configuration = (tmp_path / "running" / "configuration" / "index.html").read_text()
    assert all(f"<code>{option.kafka_name}</code>" in configuration for option in OPTIONS)
    api = (tmp_path / "testing" / "api" / "index.html").read_text()
    assert 'id="broker.testkit.BrokerThread.inject_error"' in api  # mkdocstrings rendered the docstrings


def test_every_page_asks_for_known_tables() -> None:
    hooks = _hooks()
    for page in (REPO / "docs").rglob("*.md"):
        hooks.render(page.read_text())  # raises on an unknown table


def test_the_configuration_table_lists_every_option_with_its_default() -> None:
    table = _hooks().broker_options()
    assert [line.split("`")[1] for line in table.splitlines()[2:]] == [o.kafka_name for o in OPTIONS]
    assert "| `log.flush.policy` | `grouped` |" in table and "| `cluster.id` | `unset` |" in table


def test_the_api_version_table_is_what_each_profile_serves() -> None:
    lines = _hooks().api_versions().splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header[2:] == releases()
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")] for line in lines[2:]
            if line.startswith("| ")}
    for key, api in dispatch.table().items():
        cells = rows[f"{api.request_name.removesuffix('Request')} ({key})"]
        for release, cell in zip(releases(), cells[2:], strict=True):
            advertised = dispatch.version_profile(release).advertised.get(key)
            if advertised is None:
                assert cell in ("–", "cluster ²"), (key, release, cell)
            else:
                lo, hi = advertised
                assert cell.startswith(str(lo) if lo == hi else f"{lo}-{hi}"), (key, release, cell)
    # The contradictions the old README had: the 4.x profiles serve EndTxn v5, KIP-848 and share groups.
    assert rows["EndTxn (26)"][-1] == "0-5" and rows["ConsumerGroupHeartbeat (68)"][-1].startswith("0-1")
    assert all(cell.startswith("1") for cell in rows["ShareFetch (78)"][6:])
