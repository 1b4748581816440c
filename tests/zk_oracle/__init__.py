"""Kafka's own code as the oracle of zk/: small Java programs compiled against Kafka 3.9's jars (fetched by
tests/kafka_jars.py), run with JSON lines in and out. Compiled classes are cached beside the jars, keyed by
the source, so a second run starts the JVM only."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests import kafka_jars

RELEASE = "3.9"
HERE = Path(__file__).parent


def classpath(release: str = RELEASE) -> str:
    """Kafka's jars (kafka_2.13 and what it needs); kafka_jars.Unavailable when they cannot be had."""
    if shutil.which("javac") is None:
        raise kafka_jars.Unavailable("javac is not installed")
    # kafka-tools brings the slf4j binding the broker logs through (and is the set the other tests fetch)
    return kafka_jars.classpath(release, ["kafka_2.13", "kafka-tools"])


def compiled(main_class: str, release: str = RELEASE) -> str:
    """The directory holding `main_class` compiled from tests/zk_oracle/<main_class>.java."""
    source = HERE / f"{main_class}.java"
    cp = classpath(release)
    key = hashlib.sha256(source.read_bytes() + release.encode()).hexdigest()[:16]
    target = kafka_jars.cache_root() / "zk-oracle" / f"{main_class}-{key}"
    if not (target / f"{main_class}.class").exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".javac-", dir=target.parent))
        try:
            result = subprocess.run(["javac", "-nowarn", "-d", str(work), "-cp", cp, str(source)],
                                    capture_output=True, text=True, timeout=300)
            if result.returncode != 0:
                raise RuntimeError(f"javac {source.name} failed:\n{result.stdout}{result.stderr}")
            if target.exists():
                shutil.rmtree(target)
            work.rename(target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return str(target)


def run(main_class: str, stdin: str = "", args: list[str] | None = None, release: str = RELEASE,
        timeout: float = 300) -> str:
    """Run the program with `stdin`; its standard output."""
    cp = compiled(main_class, release) + os.pathsep + classpath(release)
    result = subprocess.run(["java", "-Xmx256m", "-cp", cp, main_class, *(args or [])], input=stdin,
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{main_class} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result.stdout
