"""Imports inside shim/coordinator: no cycle among its modules, no import inside a function.

Parses every module with `ast` (nothing is imported), builds the graph of imports between
coordinator modules and finds its strongly connected components (Tarjan). Imports under
`if TYPE_CHECKING:` count too: the handlers name coordinator_state.CoordinatorState in their
annotations, which sits below them, never the GroupCoordinator above them. An import inside a function (a statement, or importlib.import_module / __import__) is
allowed only with a comment on its line, or the line
before, that starts with `# import here:` and says why.

`python -m testsuite.test_coordinator_imports` prints the measure: modules, edges, cycles and
in-function imports.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from testsuite.import_graph import cycles

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "shim.coordinator"
PKG_DIR = ROOT / "shim" / "coordinator"
JUSTIFIED = "# import here:"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """The absolute module names an ImportFrom may load (`from . import x` may name a module x)."""
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [target] + [f"{target}.{a.name}" for a in node.names]


def _targets(names: list[str], files, mod: str) -> set[str]:
    """Coordinator modules among `names` ([package, package.name...] of a `from package import
    name...`): each name that is a module, and the package itself when some name is not one (its
    `__init__` must have run that far, even when it is `mod`'s own package)."""
    head, *subs = names
    out = {n for n in subs if n in files}
    if not subs or len(out) < len(subs):
        out.add(head)
    return {n for n in out if n in files and n != mod}


def scan() -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """(graph: module -> coordinator modules it imports (type-only imports too), [(module, line, text)] of
    in-function imports without a justification)."""
    files = {_module_name(p): p for p in PKG_DIR.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    unjustified: list[tuple[str, int, str]] = []
    for mod, path in files.items():
        source = path.read_text()
        lines = source.splitlines()
        tree = ast.parse(source)
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, in_function: bool) -> None:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if isinstance(node, ast.Import):
                    for a in node.names:
                        graph[mod] |= _targets([a.name], files, mod)
                else:
                    graph[mod] |= _targets(_resolve(mod, is_package, node), files, mod)
                if in_function:
                    here = lines[node.lineno - 1]
                    before = lines[node.lineno - 2] if node.lineno > 1 else ""
                    if JUSTIFIED not in here and not before.strip().startswith(JUSTIFIED):
                        unjustified.append((mod, node.lineno, here.strip()))
                return
            if in_function and isinstance(node, ast.Call) and (
                    getattr(node.func, "id", None) in ("import_module", "__import__")
                    or getattr(node.func, "attr", None) == "import_module"):
                here = lines[node.lineno - 1]
                before = lines[node.lineno - 2] if node.lineno > 1 else ""
                if JUSTIFIED not in here and not before.strip().startswith(JUSTIFIED):
                    unjustified.append((mod, node.lineno, here.strip()))
            inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for child in ast.iter_child_nodes(node):
                visit(child, inner)

        visit(tree, False)
    return graph, unjustified


def _parent_packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Importing a.b.c runs a/__init__ and a/b/__init__ first: those edges are real too."""
    out = {m: set(deps) for m, deps in graph.items()}
    for m, deps in graph.items():
        for d in deps:
            parts = d.split(".")
            for i in range(len(PACKAGE.split(".")) + 1, len(parts)):
                parent = ".".join(parts[:i])
                if parent in graph and parent != m and not m.startswith(parent + "."):
                    out[m].add(parent)
    return out


def test_the_measure_sees_a_cycle_and_a_package_edge():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    files = {"p", "p.m", "p.n"}
    assert _targets(["p", "p.m"], files, "p.n") == {"p.m"}            # from p import m: the module only
    assert _targets(["p", "p.m", "p.X"], files, "p.n") == {"p", "p.m"}   # X is a name of p's __init__


def test_no_import_cycle_in_the_coordinator():
    graph, _ = scan()
    assert cycles(_parent_packages(graph)) == []


def test_no_unjustified_import_inside_a_function():
    _, unjustified = scan()
    assert unjustified == [], "\n".join(f"{m}:{line}: {text}" for m, line, text in unjustified)


if __name__ == "__main__":
    g, bad = scan()
    comps = cycles(_parent_packages(g))
    print(f"{len(g)} modules, {sum(len(d) for d in g.values())} import edges (type-only ones too)")
    print(f"{len(comps)} cycle(s): " + "; ".join(f"{len(c)} modules" for c in comps))
    for c in comps:
        print("  " + " ".join(m.removeprefix(PACKAGE + ".") for m in c))
    print(f"{len(bad)} unjustified in-function import(s)")
    if "-v" in sys.argv:
        for m, line, text in bad:
            print(f"  {m}:{line}: {text}")
