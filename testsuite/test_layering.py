"""The layers of shim/ (docs/architecture.md, "Layers"), read from the source: every import of every
module under shim/ (ast: top level, in functions, under `if TYPE_CHECKING:` - a lower layer does not
even name a higher one's types) may only go to its own layer or a lower one, and no modules, nor the
packages/modules LAYERS lists, import each other in a circle (outside shim/coordinator/, whose inside
testsuite/test_coordinator_imports.py checks).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from testsuite.import_graph import cycles

ROOT = Path(__file__).resolve().parents[1]

# bottom up; a module belongs to the entry with the longest prefix it has ("shim" itself: only the
# package's __init__, the version). Each prefix is also a unit of the cycle check between packages.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("codecs", ("kcodec",)),
    # sans-IO: the coordinator, and the ACL codes and matching it reads (authz/acl.py: stdlib only)
    ("core", ("shim", "shim.coordinator", "shim.authz.acl")),
    ("base", ("shim.config", "shim.confighelp", "shim.faultrules", "shim.error_answers", "shim.metrics", "shim.logformat",
              "shim.trace", "shim.localkafka")),
    ("kafkaclient", ("shim.kafkaclient",)),
    ("authz+state", ("shim.authz", "shim.state")),
    # the group service: the coordinator on the event loop, its request path and collaborators; it
    # knows the proxy only by the types of groupservice/host.py
    ("groupservice", ("shim.groupservice",)),
    ("proxy", ("shim.proxy",)),
    ("program", ("shim.runner", "shim.admin_http", "shim.cli", "shim.groups_command", "shim.offsets_reader",
                 "shim.offsets_import", "shim.compat", "shim.testing", "shim.testcontainers")),
]
# tools beside the program: what each may import besides itself (kcodec is always allowed)
TOOLS = {
    "shim.compat": ("shim", "shim.coordinator", "shim.localkafka"),   # `kshim compat`: real clients, no kshim internals
    "shim.trace": ("shim", "shim.coordinator"),                        # `--trace` recorder, `kshim trace show/analyze`
    "shim.localkafka": (),                                             # a real Kafka from Maven jars
    "shim.testing": ("shim", "shim.localkafka", "shim.trace", "shim.compat"),  # the pytest plugin
    "shim.testcontainers": ("shim", "shim.localkafka", "shim.testing"),    # Kafka + kshim containers
}
OUTSIDE_CYCLE_CHECK = ("shim.coordinator",)


def _within(name: str, prefix: str) -> bool:
    return name == prefix or (prefix != "shim" and name.startswith(prefix + "."))


def _unit(name: str) -> tuple[str, int]:
    """(the longest prefix of LAYERS the module has, its layer); ("", -1) for none."""
    best, rank = "", -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if _within(name, p) and len(p) > len(best):
                best, rank = p, i
    return best, rank


def _layer(name: str) -> int:
    return _unit(name)[1]


def _modules(package_dir: Path, package: str) -> dict[str, Path]:
    out = {}
    for path in package_dir.rglob("*.py"):
        parts = [package, *path.relative_to(package_dir).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules(ROOT / "shim", "shim")


def imports(module: str, source: str, is_package: bool = False) -> list[tuple[str, int]]:
    """(imported module, line) for every import in a module's source; `from P import n` names the
    module P.n when it is one, else P."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((sub if sub in MODULES else target, node.lineno))
    return out


def _internal(name: str) -> str | None:
    """The shim module (or kcodec) an import name stands for, None for anything else."""
    if name.split(".")[0] == "kcodec":
        return "kcodec"
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


EDGES = {m: [(t, line) for name, line in imports(m, p.read_text(), p.name == "__init__.py")
             if (t := _internal(name)) and t != m]
         for m, p in MODULES.items()}


def test_every_module_has_a_layer():
    assert [m for m in MODULES if _layer(m) < 0] == []


def test_no_import_goes_up_a_layer():
    upward = []
    for m, edges in EDGES.items():
        tool = next((t for t in TOOLS if _within(m, t)), None)
        for target, line in edges:
            if target == "kcodec":
                continue
            if tool is not None:
                if not (_within(target, tool) or any(_within(target, a) for a in TOOLS[tool])):
                    upward.append(f"{MODULES[m].relative_to(ROOT)}:{line}: tool {tool} imports {target}")
            elif _layer(target) > _layer(m):
                upward.append(f"{MODULES[m].relative_to(ROOT)}:{line}: {m} ({LAYERS[_layer(m)][0]}) imports "
                              f"{target} ({LAYERS[_layer(target)][0]})")
    assert upward == []


def test_kcodec_does_not_import_shim():
    kcodec = _modules(ROOT / "codecs" / "kcodec", "kcodec")
    bad = [f"{p.relative_to(ROOT)}:{line}" for m, p in kcodec.items() if "shim" in (text := p.read_text())
           for name, line in imports(m, text, p.name == "__init__.py") if name.split(".")[0] == "shim"]
    assert bad == []


def _graph(node_of) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for m, edges in EDGES.items():
        a = node_of(m)
        if a is None:
            continue
        for target, _ in edges:
            b = node_of(target)
            if b is not None and b != a:
                graph.setdefault(a, set()).add(b)
    return graph


def _outside_coordinator(m: str) -> str | None:
    return None if m == "kcodec" or any(_within(m, p) for p in OUTSIDE_CYCLE_CHECK) else m


def test_no_import_cycle_between_modules():
    assert cycles(_graph(_outside_coordinator)) == []


def test_no_import_cycle_between_packages():
    """Between the units of LAYERS (shim.proxy, shim.state, shim.config, shim.coordinator, ...)."""
    assert cycles(_graph(lambda m: None if m == "kcodec" else _unit(m)[0])) == []


@pytest.mark.parametrize("module", ["shim.kafkaclient", "shim.authz", "shim.state", "shim.groupservice"])
def test_lower_layers_do_not_name_the_proxy(module):
    """kshim's own client, the authorization, the durable state and the group service never import
    shim.proxy, not even for a type (the group service names the proxy's parts by groupservice/host.py's
    types)."""
    named = [f"{MODULES[m].relative_to(ROOT)}:{line}" for m, edges in EDGES.items() if _within(m, module)
             for target, line in edges if _within(target, "shim.proxy")]
    assert named == []


def test_the_checks_see_what_they_look_for():
    src = ("from typing import TYPE_CHECKING\nfrom ..kafkaclient.client import UpstreamClient\n"
           "if TYPE_CHECKING:\n    from ..proxy.session import Session\n"
           "def f():\n    from . import format\n")
    assert imports("shim.state.x", src) == [("typing", 1), ("shim.kafkaclient.client", 2),
                                             ("shim.proxy.session", 4), ("shim.state.format", 6)]
    assert _layer("shim.state.log") > _layer("shim.kafkaclient.client") > _layer("shim.config")
    assert _layer("shim.groupservice.service") > _layer("shim.state.log")
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
