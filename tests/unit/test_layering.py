"""The layering of the code, checked from its imports (every import statement, inside functions and
`if TYPE_CHECKING:` blocks too): imports flow one way, protocol <- log <- coordinator/services <- handlers
<- server, and no module imports a module that imports it back (directly or through others).

Observability (fault rules, the protocol trace, metrics, introspection) is production code the server uses:
of the broker it knows only the Broker whose state it reads, and only the server, its HTTP services
(broker.http: the admin endpoint serves it) and the test kit import it. The HTTP services (the admin
endpoint, the schema registry, the console) sit beside the handlers, on the services; only the server imports
them. The test kit (the pytest plugin, BrokerThread, the cluster fixture) runs the whole broker from outside, at
the top with the CLI; nothing of the broker imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "coordinator", "zk", "broker")

# Each layer (a package or module prefix, the longest match wins) and the layers it may import besides itself.
ALLOWED: dict[str, set[str]] = {
    "protocol": set(),
    "coordinator": {"protocol"},
    "zk": {"protocol"},
    "broker.clock": set(),
    "broker.log_format": set(),
    "broker.log": {"protocol"},
    "broker.config": {"protocol", "broker.log"},
    "broker.security": {"protocol", "broker.log", "broker.config"},
    "broker.services": {"protocol", "coordinator", "zk", "broker.log", "broker.config", "broker.clock"},
    "broker.cluster": {"protocol", "coordinator", "zk", "broker.log", "broker.config", "broker.clock",
                       "broker.security", "broker.services"},
    # A handler is given the Broker (broker.app); so are the observability instruments, which read its state.
    "broker.handlers": {"protocol", "coordinator", "broker.log", "broker.config", "broker.clock",
                        "broker.security", "broker.services", "broker.cluster", "broker.app"},
    "broker.app": {"protocol", "zk", "broker.log", "broker.config", "broker.clock", "broker.security",
                   "broker.services", "broker.cluster"},
    "broker.observability": {"protocol", "broker.app"},
    # What the broker serves over HTTP (admin endpoint, schema registry, console): beside the handlers, on the
    # services; the console's admin connections secure themselves as the brokers' own (broker.security.client_side).
    "broker.http": {"protocol", "zk", "broker.log", "broker.config", "broker.clock", "broker.security",
                    "broker.services", "broker.cluster", "broker.observability", "broker.app"},
    "broker.server": {"protocol", "zk", "broker.app", "broker.handlers", "broker.config", "broker.clock",
                      "broker.security", "broker.cluster", "broker.observability", "broker.http"},
}
# The test kit and the entry points: above everything, imported by nothing of the broker.
TOP_PACKAGES = ("broker.testkit",)
TOP = ("broker", "broker.cli", "broker.__main__", "broker.healthcheck", "broker.testing")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, name: str, modules: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:  # `from broker.observability import trace` imports broker.observability.trace
                found.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module)
    return {m for m in found if m.split(".")[0] in PACKAGES}


def _graph() -> dict[str, set[str]]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            modules[_module_name(path)] = path
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in _imports(path, name, set(modules)):
            while imported and imported not in modules:  # a name defined in a module: that module
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def _layer(module: str) -> str | None:
    best = None
    for layer in ALLOWED:
        if (module == layer or module.startswith(layer + ".")) and (best is None or len(layer) > len(best)):
            best = layer
    return best


GRAPH = _graph()


def _is_top(module: str) -> bool:
    return module in TOP or any(module == p or module.startswith(p + ".") for p in TOP_PACKAGES)


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if not _is_top(m)))
def test_imports_flow_one_way(module: str) -> None:
    layer = _layer(module)
    assert layer is not None, f"{module} belongs to no layer: add it to ALLOWED (or TOP)"
    allowed = ALLOWED[layer] | {layer}
    wrong = sorted(t for t in GRAPH[module] if _is_top(t) or _layer(t) not in allowed)
    assert not wrong, f"{module} ({layer}) may not import {wrong}"


def test_only_the_server_and_the_test_kit_import_observability() -> None:
    # The table says it (the test above enforces the table); this keeps the table from drifting.
    users = {layer for layer, allowed in ALLOWED.items() if "broker.observability" in allowed}
    assert users == {"broker.server", "broker.http"}  # broker.http: the admin endpoint, which the server runs
    importers = {m for m, targets in GRAPH.items() if any(_layer(t) == "broker.observability" for t in targets)}
    assert {_layer(m) for m in importers if not _is_top(m)} <= {"broker.server", "broker.http",
                                                                "broker.observability"}
    assert {m for m, targets in GRAPH.items() if any(_layer(t) == "broker.http" for t in targets)
            if not _is_top(m)} <= {m for m in GRAPH if _layer(m) in ("broker.server", "broker.http")}
    assert any(m.startswith("broker.testkit.") for m in importers)  # the test kit builds on it


def test_no_module_imports_its_importer() -> None:
    # Tarjan's strongly connected components: any component of two or more modules is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    assert not cycles, f"import cycles: {cycles}"


def test_broker_top_level_holds_only_entry_modules() -> None:
    top_level = sorted(p.name for p in (ROOT / "broker").glob("*.py"))
    assert top_level == ["__init__.py", "__main__.py", "app.py", "cli.py", "clock.py", "healthcheck.py",
                         "log_format.py", "testing.py"]


def test_the_rules_catch_a_forbidden_import() -> None:
    # The checks above must be able to fail: a log module importing a service is caught.
    assert _layer("broker.log.partition_log") == "broker.log"
    assert "broker.services" not in ALLOWED["broker.log"]
    assert _layer("broker.observability.faults") == "broker.observability" and _is_top("broker.testkit.plugin")
    assert "broker.testkit" not in ALLOWED["broker.server"] and not _is_top("broker.observability.faults")
