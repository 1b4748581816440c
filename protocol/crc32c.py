"""CRC32C (Castagnoli) from the `crc32c` package's C extension (~20 GB/s with SSE4.2).

The package's __init__ imports importlib.metadata for its version string, ~35 ms of broker startup;
loading its extension module directly skips that.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from collections.abc import Callable
from pathlib import Path


def _load() -> Callable[..., int]:
    spec = importlib.util.find_spec("crc32c")  # locates the package without running its __init__
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            for path in Path(location).glob("_crc32c*.so"):
                name = "crc32c._crc32c"
                loader = importlib.machinery.ExtensionFileLoader(name, str(path))
                ext_spec = importlib.util.spec_from_file_location(name, path, loader=loader)
                if ext_spec is not None:
                    module = importlib.util.module_from_spec(ext_spec)
                    loader.exec_module(module)
                    return module.crc32c
    from crc32c import crc32c as fallback  # any other layout of the package

    return fallback


crc32c = _load()
__all__ = ["crc32c"]
