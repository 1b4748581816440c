"""The snippet of docs/cluster.md ("Testing your code against a cluster") runs as written."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "cluster.md"


def _snippet() -> str:
    text = DOC.read_text()
    marker = text.index("<!-- the snippet below runs in tests/integration/test_docs_cluster.py -->")
    found = re.search(r"```python\n(.*?)```", text[marker:], re.S)
    assert found is not None
    return found.group(1)


def test_the_documented_cluster_test_runs(minibroker_cluster):
    namespace: dict = {}
    exec(compile(_snippet(), str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    namespace["test_my_service_survives_a_leader_failure"](minibroker_cluster)
