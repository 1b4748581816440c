"""docker-compose.yml as docker-compose reads it: `docker-compose config` (Debian's package, which `make test`
installs; no daemon needed) resolves its variables with their defaults, or as a user sets them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
COMPOSE = REPO / "docker-compose.yml"


def resolved(**variables: str) -> dict[str, Any]:
    """The compose file with these variables set (and no other MINIBROKER_* of the caller's environment);
    skips the test where docker-compose is not installed (fails under CI, where `make test` installs it)."""
    if shutil.which("docker-compose") is None:
        missing = "docker-compose is not installed (Debian: apt-get install docker-compose; make test installs it)"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIBROKER_")} | variables
    result = subprocess.run(["docker-compose", "-f", str(COMPOSE), "config"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)
