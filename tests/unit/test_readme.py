"""The README's configuration table lists every option the broker takes."""

from __future__ import annotations

from pathlib import Path

from broker.config.options import OPTIONS

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_option_is_documented() -> None:
    text = README.read_text()
    missing = [o.kafka_name for o in OPTIONS if f"| `{o.kafka_name}` |" not in text]
    assert missing == []
