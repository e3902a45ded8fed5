"""Issue 19.1: the drawn structure of `src/rondo` has no circle of more than two files.

Every import counts — at the top of a module, inside a function, under `TYPE_CHECKING` — as
the drawing of the house does: a type-only import that runs back up ties the files into a
circle as surely as one that runs. The strongly connected components of the import graph
(Tarjan) are computed from the AST; a component of more than two modules is a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).parents[2] / "src"


def _modules(src: Path) -> dict[str, tuple[Path, bool]]:
    """module name -> (file, whether it is a package's __init__)."""
    found: dict[str, tuple[Path, bool]] = {}
    for path in src.rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts.pop()
        found[".".join(parts)] = (path, package)
    return found


def _imports(name: str, path: Path, package: bool, known: set[str]) -> Iterator[str]:
    """The modules of `known` that module `name` imports, anywhere in its body."""

    def resolve(target: str) -> str | None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target or None

    here = name if package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            # `from pkg import mod` imports the submodule; `from mod import name` the module.
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        for target in targets:
            module = resolve(target)
            if module is not None and module != name:
                yield module


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    modules = _modules(src)
    known = set(modules)
    return {name: set(_imports(name, *modules[name], known)) for name in modules}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on a deep import chain)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def test_19_tarjan_finds_a_circle_and_leaves_a_chain() -> None:
    """The check itself can fail: a three-file circle is found, a chain is not one."""
    circle = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert sorted(map(sorted, strongly_connected(circle))) == [["a", "b", "c"], ["d"]]
    assert all(len(c) == 1 for c in strongly_connected({"a": {"b"}, "b": {"c"}, "c": set()}))


def test_19_import_graph_counts_type_only_and_local_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import H\n"
    )
    (pkg / "mid.py").write_text("def f():\n    from . import low\n")
    (pkg / "high.py").write_text("from pkg.mid import f\n")
    graph = import_graph(tmp_path)
    assert graph["pkg.low"] == {"pkg.high"}
    assert graph["pkg.mid"] == {"pkg.low"}
    assert ["pkg.high", "pkg.low", "pkg.mid"] in strongly_connected(graph)


def test_19_no_circle_of_more_than_two_files() -> None:
    graph = import_graph()
    assert len(graph) > 100  # the whole package was read
    circles = [c for c in strongly_connected(graph) if len(c) > 2]
    assert circles == [], (
        "these modules import each other in a circle (type-only and function-local imports "
        "count): cut it with a Protocol in the lower layer, never an import that runs back up"
    )
