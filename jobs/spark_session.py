"""A SparkSession for the jobs: the same Python on driver and workers, loopback binding in local mode, Spark's
console progress bar, and `--conf KEY=VALUE` passed through."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent


def parse_conf(items: Sequence[str]) -> dict[str, str]:
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf takes KEY=VALUE, not {item!r}")
        conf[key.strip()] = value
    return conf


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


@contextmanager
def spark_session(app_name: str, master: str, conf: dict[str, str] | None = None,
                  progress: bool = True) -> Iterator[Any]:
    """Build (or join) a SparkSession and stop it on exit if this call created it."""
    from pyspark.sql import SparkSession

    # Workers must run this interpreter (kafka-python and this package are installed in it).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(master)
    if is_local(master):
        # A laptop's hostname may resolve to an address it cannot bind, and nothing needs to reach us from outside.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    builder = builder.config("spark.ui.showConsoleProgress", "true" if progress else "false")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    existing = SparkSession.getActiveSession()
    spark = builder.getOrCreate()
    if existing is None:
        spark.sparkContext.setLogLevel("WARN")
    shipped = None
    if not is_local(master):
        shipped = _ship_package(spark)
    try:
        yield spark
    finally:
        if existing is None:
            spark.stop()
        if shipped is not None:
            shutil.rmtree(shipped, ignore_errors=True)


def _ship_package(spark: Any) -> Path:
    """Executors on other machines import the task functions from `jobs`: send them this package as a zip."""
    tmp = Path(tempfile.mkdtemp(prefix="jobs-pyfiles-"))
    archive = shutil.make_archive(str(tmp / "jobs"), "zip", root_dir=PACKAGE_DIR.parent, base_dir="jobs")
    spark.sparkContext.addPyFile(archive)
    return tmp
