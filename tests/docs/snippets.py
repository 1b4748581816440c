"""The fenced code snippets of the README and of every page of docs/: one collector for all of them, so that
every snippet runs in `make test` (tests/docs/test_snippets.py) or says why not.

A snippet is a fenced block with a language. How it runs depends on the language:
- `python` with a `def test_...`: a pytest test, with the plugin's fixtures (collected by test_snippets.py);
- `python` otherwise: a script, run against a fresh broker; "localhost:9092" is that broker's address;
- `sh`: a shell script, run with bash against a fresh broker (or, when it starts its own with `python -m
  broker`, on free ports): "localhost:9092" and "localhost:9644" (the admin endpoint) are rewritten to free
  ports, `scripts/` is the checkout's;
- `java`: a program, compiled and run by tests/java/test_docs_snippets.py (which names each program it runs).

A comment on the line before the fence changes that:
- `<!-- not run: REASON -->` for a snippet that cannot run (`make run` serves until Ctrl-C); the reason is
  required;
- `<!-- run by tests/PATH.py -->` for a snippet a dedicated test runs (the test must name the page).

Blocks in the data languages (`text`, `json`, `yaml`, `ini`, `toml`) are output or configuration, not code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CODE = ("python", "sh", "java")
DATA = ("text", "json", "yaml", "ini", "toml")
_FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", re.M | re.S)
_DIRECTIVE = re.compile(r"<!-- (not run|run by) ?:? ?(.*?) -->\s*$")


@dataclass(frozen=True)
class Snippet:
    page: Path  # relative to the repository
    line: int
    language: str
    code: str
    not_run: str | None = None  # the reason
    run_by: str | None = None  # the test file that runs it

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def is_test(self) -> bool:
        return self.language == "python" and re.search(r"^def test_\w+\(", self.code, re.M) is not None

    @property
    def runs_here(self) -> bool:
        """Run by tests/docs/test_snippets.py itself."""
        return self.language in ("python", "sh") and self.not_run is None and self.run_by is None


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def collect(page: Path) -> list[Snippet]:
    text = page.read_text()
    out = []
    for match in _FENCE.finditer(text):
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        directive = _DIRECTIVE.search(before)
        not_run = run_by = None
        if directive is not None:
            if directive.group(1) == "not run":
                not_run = directive.group(2).strip()
            else:
                run_by = directive.group(2).strip()
        out.append(Snippet(page.relative_to(REPO), text.count("\n", 0, match.start()) + 2, match.group(1),
                           match.group(2), not_run, run_by))
    return out


def all_snippets() -> list[Snippet]:
    return [snippet for page in pages() for snippet in collect(page)]
