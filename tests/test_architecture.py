"""The layer rules of docs/architecture.md hold: no import cycle, every import contract kept.

The contracts themselves (layers, independent faces, no LSP below the faces, the terminal a
client, the concrete tools assembled only in bootstrap) are in pyproject.toml's
``[tool.importlinter]``; ``lint-imports`` checks them.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("server", "tooling", "tools")


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The modules that import each other in a circle, one sorted list per circle
    (Tarjan's strongly connected components of more than one module, or a module that
    imports itself)."""
    modules = sorted(graph.modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        imported = sorted(graph.find_modules_directly_imported_by(module) & graph.modules)
        for other in imported:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1 or module in imported:
                cycles.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_the_cycle_finder_finds_a_circle_and_nothing_else() -> None:
    graph = grimp.ImportGraph()
    for name in ("a", "b", "c", "d", "e"):
        graph.add_module(name)
    for importer, imported in (("a", "b"), ("b", "c"), ("c", "a"), ("d", "a"), ("e", "e")):
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == [["a", "b", "c"], ["e"]]


def test_no_import_cycles_in_server_tooling_and_tools() -> None:
    # Imports inside functions and under TYPE_CHECKING count: a type-only import still
    # ties the two modules together for a reader (and for the next refactoring).
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert "server.engine.engine" in graph.modules  # the graph holds the real packages
    assert import_cycles(graph) == []


def test_every_import_contract_is_kept() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--no-cache", "--no-logo"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # Every contract of the configuration was read and checked, none skipped.
    assert f"Contracts: {len(contracts)} kept, 0 broken." in result.stdout
