"""Every code snippet of the README and of docs/ runs (tests/docs/snippets.py says how each kind runs), or says
why it cannot: pytest-style snippets become tests of this module, scripts run against a fresh broker, shell
snippets with bash."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from broker.testkit import BrokerThread
from tests.docs.snippets import CODE, DATA, REPO, Snippet, all_snippets

SNIPPETS = all_snippets()
JAVA_RUNNER = REPO / "tests" / "java" / "test_docs_snippets.py"


def _is_fixture(value: object) -> bool:
    return type(value).__name__ == "FixtureFunctionDefinition" or hasattr(value, "_pytestfixturefunction")


def _load_tests(snippet: Snippet) -> dict[str, object]:
    """The snippet's test functions (and fixtures), compiled with the page's line numbers."""
    namespace: dict[str, object] = {"__name__": f"docs.{snippet.page}"}
    code = "\n" * (snippet.line - 1) + snippet.code
    exec(compile(code, str(REPO / snippet.page), "exec"), namespace)  # noqa: S102 - our own manual
    slug = re.sub(r"\W+", "_", str(snippet.page.with_suffix("")))
    out = {}
    for name, value in namespace.items():
        if name.startswith("test_") and callable(value):
            out[f"test_{slug}_line{snippet.line}_{name.removeprefix('test_')}"] = value
        elif _is_fixture(value):
            out[name] = value
    return out


# The pages' pytest snippets, as tests of this module (fixtures, markers and parametrize as written).
for _snippet in SNIPPETS:
    if _snippet.is_test and _snippet.runs_here:
        globals().update(_load_tests(_snippet))


def test_every_snippet_runs_or_says_why() -> None:
    from tests.java.test_docs_snippets import PROGRAMS

    problems = []
    for snippet in SNIPPETS:
        if snippet.language not in CODE + DATA:
            problems.append(f"{snippet.name}: language {snippet.language!r} is neither code {CODE} nor data {DATA}")
        if snippet.not_run is not None and len(snippet.not_run) < 10:
            problems.append(f"{snippet.name}: `not run` needs its reason")
        if snippet.run_by is not None:
            runner = REPO / snippet.run_by
            if not runner.is_file() or str(snippet.page) not in runner.read_text():
                problems.append(f"{snippet.name}: {snippet.run_by} does not exist or does not name {snippet.page}")
        if snippet.language == "java" and snippet.not_run is None:
            program = re.search(r"public class (\w+)", snippet.code)
            if program is None or program.group(1) not in PROGRAMS:
                problems.append(f"{snippet.name}: a Java program that {JAVA_RUNNER.name} does not run")
    assert problems == []


def test_the_snippets_were_found() -> None:
    """The collector sees the README's and the pages' snippets (a broken fence would hide them)."""
    pages = {snippet.page for snippet in SNIPPETS}
    assert Path("README.md") in pages and Path("docs/testing/fixtures.md") in pages
    assert sum(snippet.is_test for snippet in SNIPPETS) >= 10


SCRIPTS = [s for s in SNIPPETS if s.runs_here and s.language == "python" and not s.is_test]
SHELL = [s for s in SNIPPETS if s.runs_here and s.language == "sh"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _run(command: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=_environment(), capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("snippet", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_script_snippet_runs(snippet: Snippet, minibroker: str, tmp_path: Path) -> None:
    code = snippet.code.replace("localhost:9092", minibroker)
    result = _run([sys.executable, "-c", code], tmp_path, timeout=120)
    assert result.returncode == 0, f"{snippet.name} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"


@pytest.mark.parametrize("snippet", SHELL, ids=[s.name for s in SHELL])
def test_shell_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    if "kafka-tool" in snippet.code and (shutil.which("java") is None or shutil.which("mvn") is None):
        if os.environ.get("CI"):
            pytest.fail("Kafka's tools need Java and Maven, which `make test` installs")
        pytest.skip("Kafka's tools need Java and Maven")
    port, admin = _free_port(), _free_port()
    code = snippet.code
    for host in ("localhost", "127.0.0.1"):
        code = code.replace(f"{host}:9092", f"127.0.0.1:{port}").replace(f"{host}:9644", f"127.0.0.1:{admin}")
    code = re.sub(r"(?<![\w/.])scripts/", str(REPO / "scripts") + "/", code)
    starts_its_own = re.search(r"python -m broker|^minibroker ", code, re.M) is not None
    broker = None
    if not starts_its_own:
        broker = BrokerThread(tmp_path / "broker", admin_listen=f"127.0.0.1:{admin}")
        broker.port = port
        broker.start()
    try:
        result = _run(["bash", "-euo", "pipefail", "-c", code], tmp_path, timeout=300)
    finally:
        if broker is not None:
            broker.stop()
    assert result.returncode == 0, f"{snippet.name} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
