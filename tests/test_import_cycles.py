"""No two modules of the package import each other, directly or around a loop.

Read from the source (every ``import`` and ``from ... import``, inside functions and under
``TYPE_CHECKING`` too): a loop there is a loop in the design even when Python could run it.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "agent_reflection"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` (module ``name``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        found.update(t for t in targets if t in modules and t != name)
    return found


def import_graph() -> dict[str, set[str]]:
    files = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    modules = set(files)
    return {name: imports_of(path, name, modules) for name, path in files.items()}


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_package_has_no_import_loop() -> None:
    found = loops(import_graph())
    assert found == [], (
        "modules that import each other (directly or around a loop): "
        + "; ".join(" <-> ".join(loop) for loop in found)
        + ". Move what both need to the lower one, or pass it in as an argument"
    )


def test_the_loop_finder_finds_a_loop() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert loops(graph) == [["a", "b", "c"]]


def test_redaction_reads_the_store_and_the_store_does_not_import_redaction() -> None:
    graph = import_graph()
    assert "agent_reflection.store.db" in graph["agent_reflection.redact"]
    assert not any(
        m.startswith("agent_reflection.redact") for m in graph["agent_reflection.store.db"]
    )
