"""The package's layers, read from its imports (ast, nothing executed): every import points
down the layers, no module imports itself back through others, and the co-simulation
package imports nothing TITOP. And no module is longer than a reader can hold."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "titop_fmu"

#: bottom to top; a module may import its own layer's modules and lower layers only
LAYERS = [
    {"titop_fmu", "titop_fmu.errors", "titop_fmu.topology", "titop_fmu.integrators",   # generic maths:
     "titop_fmu.spatial", "titop_fmu.archive",        # the paper's spatial algebra; zip files;
     "titop_fmu.cbuild",                              # C compiled on first use;
     "titop_fmu.quantities",                          # numbers with their units (pint);
     "titop_fmu.control"},                            # time signals and control blocks
    {"titop_fmu.cosim"},                              # generic FMI co-simulation
    {"titop_fmu.blocks", "titop_fmu.kernel",          # pure block models, their C kernel,
     "titop_fmu.fe",                                  # modal data from finite-element codes,
     "titop_fmu.dual"},                               # and its forward-mode derivatives
    {"titop_fmu.unit"},                               # a block as a co-simulation unit
    {"titop_fmu.fmu"},                                # FMU adapters, catalog, build
    {"titop_fmu.system", "titop_fmu.loop_solve",      # the monolithic engine, its loop solve,
     "titop_fmu.invariants"},                         # momenta and energy
    {"titop_fmu.titop"},                              # TITOP units for the master, monolithic twins
    {"titop_fmu.linear"},                             # equilibria, linear models, LPV families
    {"titop_fmu.scenarios"},                          # reference systems
    {"titop_fmu.io", "titop_fmu.modelica", "titop_fmu.validate", "titop_fmu.viewer",
     "titop_fmu.plot", "titop_fmu.models", "titop_fmu.simulation",      # one run, by name;
     "titop_fmu.campaign", "titop_fmu.cli", "titop_fmu.console"},       # many runs; commands
]
#: what the co-simulation package may import from the rest of titop_fmu
COSIM_MAY_IMPORT = {"titop_fmu", "titop_fmu.errors", "titop_fmu.topology", "titop_fmu.integrators",
                    "titop_fmu.spatial", "titop_fmu.archive", "titop_fmu.cbuild", "titop_fmu.quantities"}
#: ... and these packages, whole: time signals and control blocks, generic as the master is
COSIM_MAY_IMPORT_PACKAGES = ("titop_fmu.control",)

#: the most lines a module of titop_fmu may have: a longer one is split by concern
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set:
    """The titop_fmu modules ``path`` imports, anywhere in it (lazy imports too), with the
    packages whose ``__init__`` such an import runs; a package's names imported when first used
    (its ``_EXPORTS``, name -> module) count as its imports."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["_EXPORTS"]
              and isinstance(node.value, ast.Dict)):
            targets = [f"{package}.{v.value}" for v in node.value.values]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            if t.startswith("titop_fmu") and t in MODULES:
                parts = t.split(".")
                out.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    # a package's own __init__ runs before its modules: not an import of the module
    return {m for m in out if m != name and not name.startswith(m + ".")}


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
GRAPH = {m: imports(p) for m, p in MODULES.items()}


def layer(module: str) -> int:
    best = None
    for i, names in enumerate(LAYERS):
        for n in names:
            if module == n or (n != "titop_fmu" and module.startswith(n + ".")):
                if best is None or len(n) > len(best[1]):
                    best = (i, n)
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS"
    return best[0]


def test_every_module_has_a_layer():
    for m in MODULES:
        layer(m)


def test_no_module_is_over_600_lines():
    long = sorted(f"{p.relative_to(PACKAGE.parent)}: {n} lines" for p in MODULES.values()
                  if (n := len(p.read_text().splitlines())) > MAX_LINES)
    assert not long, f"over {MAX_LINES} lines (split by concern): " + ", ".join(long)


def test_imports_point_down_the_layers():
    up = sorted(f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
                for m, targets in GRAPH.items() for t in targets if layer(t) > layer(m))
    assert not up, "\n".join(up)


def closure(module) -> set:
    """Every module ``module`` imports, directly or through others."""
    seen, todo = set(), [module]
    while todo:
        for t in GRAPH.get(todo.pop(), ()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def test_the_cosim_package_imports_nothing_titop():
    """Not directly, not through another module."""
    bad = sorted(f"{m} imports {t}" for m in GRAPH if m.startswith("titop_fmu.cosim")
                 for t in closure(m) if not t.startswith("titop_fmu.cosim") and t not in COSIM_MAY_IMPORT
                 and not t.startswith(COSIM_MAY_IMPORT_PACKAGES))
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    """No module reaches itself through the imports of others (lazy imports count too)."""
    found = []
    for start in GRAPH:
        seen, stack = set(), [(start, [start])]
        while stack:
            m, path = stack.pop()
            for t in GRAPH.get(m, ()):
                if t == start:
                    found.append(" -> ".join(path + [t]))
                elif t not in seen:
                    seen.add(t)
                    stack.append((t, path + [t]))
    assert not found, "\n".join(sorted(set(found))[:10])


@pytest.mark.parametrize("source, target, caught_by", [
    ("titop_fmu/cosim/loop.py", "from ..fmu import catalog\n",               # cosim -> TITOP: a layer up,
     {"test_imports_point_down_the_layers", "test_the_cosim_package_imports_nothing_titop",
      "test_no_import_cycles"}),                                             # and back (catalog -> cosim)
    ("titop_fmu/spatial.py", "from .blocks import base\n",                   # a layer up, and a cycle
     {"test_imports_point_down_the_layers", "test_no_import_cycles", "test_the_cosim_package_imports_nothing_titop"}),
])
def test_the_checks_catch_a_bad_import(source, target, caught_by, monkeypatch):
    """Each check fails on an added (lazy) import of the kind it forbids, the others pass."""
    path = PACKAGE.parent / source
    name = module_name(path)
    bad = path.with_name("_bad_copy.py")
    monkeypatch.setitem(MODULES, name, path)
    try:
        bad.write_text(path.read_text() + "\n\ndef _added():\n    " + target)
        graph = dict(GRAPH)
        graph[name] = imports(bad)
    finally:
        bad.unlink()
    assert graph[name] > GRAPH[name]
    monkeypatch.setitem(globals(), "GRAPH", graph)
    failed = set()
    for check in (test_imports_point_down_the_layers, test_the_cosim_package_imports_nothing_titop,
                  test_no_import_cycles):
        try:
            check()
        except AssertionError:
            failed.add(check.__name__)
    assert failed == caught_by


def test_a_pythonfmu_fmu_loads_no_master():
    """A pythonfmu FMU's slave imports the blocks and the names it needs, not the co-simulation
    master (a package's names are imported when first used): its import, in every process that
    loads such an FMU, took 0.31 to 0.45 s with the master, 0.24 to 0.26 s without (``python -X
    importtime``, five runs each)."""
    import subprocess
    import sys
    code = "import sys, titop_fmu.fmu.slave; print(sorted(m for m in sys.modules if m.startswith('titop_fmu.cosim')))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = eval(r.stdout)
    assert "titop_fmu.cosim.names" in loaded and "titop_fmu.cosim.master" not in loaded, loaded
