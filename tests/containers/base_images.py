"""The base images the Dockerfile and docker-compose.yml name, made here from Debian's packages: no registry
is reachable, so `python:3.11-slim` and `zookeeper:3.9` are stand-ins built by mmdebstrap (a Debian root
filesystem as a tar) and `podman import`ed under the names the project's files use, so nothing is pulled.

    ensure(podman, PYTHON)     # present with this recipe: nothing; cached tar: import; else mmdebstrap first

The tar of each recipe is kept in `<cache>/containers/` (kafka_jars.cache_root(), outside the repository), so a
second run after `podman system reset` imports in seconds; a changed recipe makes a new one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tests import kafka_jars

IMAGES = Path(__file__).resolve().parent / "images"
RECIPE_LABEL = "org.minibroker.recipe"
# The CA certificates this machine trusts besides Debian's (a TLS-inspecting proxy's): the images' pip and
# apt-get reach the registries through the same network as the host.
LOCAL_CAS = Path("/usr/local/share/ca-certificates")

# Slim, as the official images: no manuals, documentation (copyright files kept) or translations.
SLIM = ("path-exclude=/usr/share/man/*", "path-exclude=/usr/share/doc/*", "path-include=/usr/share/doc/*/copyright",
        "path-exclude=/usr/share/locale/*", "path-exclude=/usr/share/info/*")
# The JRE's postinst links its manual pages with update-alternatives, which fails without their directory.
ESSENTIAL_HOOKS = ('mkdir -p "$1/usr/share/man/man1"',)
COMMON_HOOKS = (
    f'if [ -d {LOCAL_CAS} ]; then mkdir -p "$1{LOCAL_CAS}" && cp -r {LOCAL_CAS}/. "$1{LOCAL_CAS}/"; fi'
    ' && chroot "$1" update-ca-certificates >/dev/null',
    'rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*',
)


class Engine(Protocol):
    def podman(self, *args: str, timeout: float = ...) -> subprocess.CompletedProcess[str]: ...


@dataclass(frozen=True)
class BaseImage:
    """A stand-in for an official image: Debian packages, customize hooks of mmdebstrap (`$1` is the root
    filesystem), and the image's settings as `podman import --change` instructions."""

    name: str  # fully qualified, as docker.io resolves the short name the project's files use
    packages: tuple[str, ...]
    hooks: tuple[str, ...]
    changes: tuple[str, ...]
    files: tuple[Path, ...] = ()  # files the hooks copy in: their content is part of the recipe

    def key(self, suite: str) -> str:
        # Where the checkout is (a CI clone's folder) is no part of the recipe: the files' content is.
        hooks = tuple(hook.replace(str(IMAGES), "<images>") for hook in self.hooks)
        digest = hashlib.sha256(repr((self.name, suite, self.packages, hooks, self.changes, SLIM,
                                      ESSENTIAL_HOOKS, COMMON_HOOKS)).encode())
        for path in (*self.files, *sorted(LOCAL_CAS.glob("*"))):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        return digest.hexdigest()[:16]


# python:3.11-slim: Debian's Python 3.11 (under /usr, not the official image's /usr/local build) with pip and
# venv; Debian's pip refuses installs outside a venv (PEP 668) unless EXTERNALLY-MANAGED is removed, as the
# official image has no such marker.
PYTHON = BaseImage(
    name="docker.io/library/python:3.11-slim",
    packages=("python3", "python3-pip", "python3-venv", "python-is-python3", "ca-certificates"),
    hooks=('rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED',),
    changes=("ENV LANG=C.UTF-8", 'CMD ["python3"]'),
)

# zookeeper:3.9: Debian's ZooKeeper server (3.8: the same client protocol and four-letter words) on a headless
# JRE, with the official image's contract: zoo.cfg written from ZOO_* variables by the entry point, and
# zkServer.sh (start-foreground, status) on the PATH, which the compose file's health check runs.
_ZOOKEEPER_FILES = {IMAGES / "zookeeper-entrypoint.sh": "/docker-entrypoint.sh",
                    IMAGES / "zookeeper-zkServer.sh": "/usr/local/bin/zkServer.sh",
                    IMAGES / "zookeeper-log4j.properties": "/conf/log4j.properties"}
ZOOKEEPER = BaseImage(
    name="docker.io/library/zookeeper:3.9",
    packages=("libzookeeper-java", "default-jre-headless", "bash"),
    hooks=('mkdir -p "$1/conf"',
           *(f'cp {source} "$1{target}" && chmod 755 "$1{target}"' for source, target in _ZOOKEEPER_FILES.items())),
    changes=(
        "ENV ZOO_CONF_DIR=/conf",
        "EXPOSE 2181",
        'ENTRYPOINT ["/docker-entrypoint.sh"]',
        'CMD ["zkServer.sh", "start-foreground"]',
    ),
    files=tuple(_ZOOKEEPER_FILES),
)

ALL = (PYTHON, ZOOKEEPER)


def debian_suite() -> str:
    """The host's Debian release: the stand-ins get the packages the host's apt sees."""
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            return line.split("=", 1)[1].strip('"')
    raise RuntimeError("/etc/os-release names no Debian release (VERSION_CODENAME)")


def cache_dir() -> Path:
    return kafka_jars.cache_root() / "containers"


def ensure(engine: Engine, image: BaseImage) -> str:
    """Makes `image` present in podman's storage; returns what it took: "present", "imported" or "built"."""
    suite = debian_suite()
    key = image.key(suite)
    found = engine.podman("image", "inspect", "--format", f'{{{{index .Labels "{RECIPE_LABEL}"}}}}', image.name)
    if found.returncode == 0 and found.stdout.strip() == key:
        return "present"
    tar = cache_dir() / f"{image.name.rpartition('/')[2].replace(':', '-')}-{key}.tar"
    took = "imported"
    if not tar.exists():
        _debootstrap(image, suite, tar)
        took = "built"
    changes = [arg for change in (*image.changes, f"LABEL {RECIPE_LABEL}={key}") for arg in ("--change", change)]
    before = engine.podman("image", "inspect", "--format", "{{.Id}}", image.name).stdout.strip()
    result = engine.podman("import", *changes, str(tar), image.name, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"podman import of {image.name} failed: {result.stderr}")
    if before:
        engine.podman("rmi", before)  # the older recipe's, now untagged (kept if a container still uses it)
    return took


def _debootstrap(image: BaseImage, suite: str, tar: Path) -> None:
    mmdebstrap = shutil.which("mmdebstrap")
    if mmdebstrap is None:
        raise RuntimeError("mmdebstrap is not installed (Debian: apt-get install mmdebstrap)")
    tar.parent.mkdir(parents=True, exist_ok=True)
    for old in tar.parent.glob(f"{tar.name.rsplit('-', 1)[0]}-*.tar"):
        old.unlink()  # an older recipe's
    fd, partial = tempfile.mkstemp(prefix=".build-", suffix=".tar", dir=tar.parent)
    os.close(fd)
    try:
        command = [mmdebstrap, "--quiet", "--variant=minbase", "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
                   *(f"--dpkgopt={opt}" for opt in SLIM), *(f"--essential-hook={hook}" for hook in ESSENTIAL_HOOKS),
                   f"--include={','.join(image.packages)}",
                   *(f"--customize-hook={hook}" for hook in (*image.hooks, *COMMON_HOOKS)), suite, partial]
        result = subprocess.run(command, capture_output=True, text=True, timeout=1200)
        if result.returncode != 0:
            raise RuntimeError(f"mmdebstrap of {image.name} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
        os.replace(partial, tar)  # whole or not at all
    finally:
        Path(partial).unlink(missing_ok=True)
