"""The Python package imports in the order of its layers (scripts/python/stepsim/_layers.py), as
testbench/architecture checks the C++ includes: every import of a stepsim module, function-level
ones included, goes to the importer's own layer or one below; every module is in one layer; no
imports go round in a circle (but the known ones listed there). The package's source is parsed
(ast), not imported: the test needs no build."""
import ast
import os
import runpy
import shutil

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SOURCE = os.path.join(ROOT, "scripts", "python")  # holds the package folder stepsim/
EXTENSION_MODULES = {"stepsim._stepsim"}  # built from C++ (scripts/python/*.cpp): no .py file


def package_modules(source):
    """{module name: path relative to `source`} of every .py of the package."""
    found = {}
    for folder, dirs, files in os.walk(os.path.join(source, "stepsim")):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, f), source)
                parts = rel[:-len(".py")].split(os.sep)
                found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = rel
    return found


def imports(source, path, module, known):
    """(line, module imported) of each import of a stepsim module in the file, at any depth. An
    import names a module when `known` has it (from stepsim.core import graph), else the module
    it takes the name from (from stepsim.core.graph import Graph)."""
    tree = ast.parse(open(os.path.join(source, path)).read(), path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "stepsim":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module
            if base.split(".")[0] != "stepsim":
                continue
            for alias in node.names:
                yield node.lineno, base + "." + alias.name if base + "." + alias.name in known else base


def layer_of(module, layers):
    """The indices of the layers whose entries hold `module` ("stepsim.x.*": the sub-package x)."""
    return [i for i, (_, entries) in enumerate(layers)
            if any(module == e or (e.endswith(".*") and (module == e[:-2] or module.startswith(e[:-1])))
                   for e in entries)]


def circles(edges):
    """The sets of modules that import each other, directly or not (strongly connected, > 1)."""
    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for n in edges.get(todo.pop(), ()):
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return seen

    reachable = {m: reach(m) for m in edges}
    found = {frozenset([m] + [n for n in reachable[m] if m in reachable.get(n, ())]) for m in edges}
    return sorted((c for c in found if len(c) > 1), key=sorted)


def problems(source, layers, known_cycles):
    """Every import against the order, every module in no layer (or two), every circle of
    imports not in `known_cycles` and every known one that is gone, as messages."""
    modules = package_modules(source)
    known = set(modules) | EXTENSION_MODULES
    names = [name for name, _ in layers]
    out = []
    layer = {}
    for module, path in modules.items():
        where = layer_of(module, layers)
        if len(where) != 1:
            out.append("%s: module %s is in %s of stepsim/_layers.py" % (
                path, module, "no layer" if not where else "layers " + " and ".join(names[i] for i in where)))
        else:
            layer[module] = where[0]
    for module in EXTENSION_MODULES:
        layer[module] = layer_of(module, layers)[0]
    edges = {}
    for module, path in modules.items():
        for line, target in imports(source, path, module, known):
            where = "%s:%d: %s imports %s" % (path, line, module, target)
            if target not in known:
                out.append("%s, which is no module of the package" % where)
            elif module in layer and target in layer and layer[target] > layer[module]:
                out.append("%s: layer %s imports layer %s, which is above it" % (
                    where, names[layer[module]], names[layer[target]]))
            if target in known and target != module:
                edges.setdefault(module, {}).setdefault(target, "%s:%d" % (path, line))
    known_cycles = [frozenset(c) for c in known_cycles]
    for circle in circles(edges):
        if circle not in known_cycles:
            out.append("a circle of imports: %s" % ", ".join(
                "%s -> %s (%s)" % (a, b, edges[a][b]) for a in sorted(circle) for b in sorted(edges[a]) if b in circle))
    for circle in known_cycles:
        if circle not in circles(edges):
            out.append("the known circle %s is gone: remove it from KNOWN_CYCLES in stepsim/_layers.py"
                       % ", ".join(sorted(circle)))
    return out


def the_layers(source):
    data = runpy.run_path(os.path.join(source, "stepsim", "_layers.py"))  # data only, no imports
    return data["LAYERS"], data["KNOWN_CYCLES"]


def test_the_package_imports_in_the_order_of_its_layers():
    assert problems(SOURCE, *the_layers(SOURCE)) == []


def test_every_layer_holds_a_module_and_the_extension_is_at_the_bottom():
    layers, _ = the_layers(SOURCE)
    modules = set(package_modules(SOURCE)) | EXTENSION_MODULES
    for name, entries in layers:
        for e in entries:
            assert any(layer_of(m, [(name, (e,))]) for m in modules), "layer %s: %s holds no module" % (name, e)
    assert layer_of("stepsim._stepsim", layers) == [0]


def copy_of_the_package(tmp_path):
    shutil.copytree(os.path.join(SOURCE, "stepsim"), str(tmp_path / "stepsim"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    return str(tmp_path)


def append(source, path, text):
    with open(os.path.join(source, path), "a") as f:
        f.write(text)
    with open(os.path.join(source, path)) as f:
        return f.read().count("\n")  # the line just written


def test_an_upward_import_is_named_with_its_file_line_and_both_layers(tmp_path):
    # A function-level import counts as well: hiding it in a function does not make it right.
    source = copy_of_the_package(tmp_path)
    line = append(source, "stepsim/pool/workers.py", "\n\ndef _hidden():\n    from ..core.result import Result  # noqa\n")
    assert problems(source, *the_layers(source)) == [
        "stepsim/pool/workers.py:%d: stepsim.pool.workers imports stepsim.core.result: layer pool imports layer "
        "core, which is above it" % line]


def test_a_module_in_no_layer_and_an_import_of_no_module_are_named(tmp_path):
    source = copy_of_the_package(tmp_path)
    with open(os.path.join(source, "stepsim", "stray.py"), "w") as f:
        f.write("from .core.grpah import Graph  # noqa\n")
    assert problems(source, *the_layers(source)) == [
        "stepsim/stray.py: module stepsim.stray is in no layer of stepsim/_layers.py",
        "stepsim/stray.py:1: stepsim.stray imports stepsim.core.grpah, which is no module of the package"]


def test_a_circle_hidden_by_a_function_level_import_is_named(tmp_path):
    # The circle issue 35 removed: the pool importing its worker back.
    source = copy_of_the_package(tmp_path)
    line = append(source, "stepsim/pool/workers.py", "\n\ndef _hidden():\n    from . import worker  # noqa\n")
    found = problems(source, *the_layers(source))
    assert found == ["a circle of imports: stepsim.pool.worker -> stepsim.pool.workers (stepsim/pool/worker.py:10), "
                     "stepsim.pool.workers -> stepsim.pool.worker (stepsim/pool/workers.py:%d)" % line]


def test_a_known_circle_that_is_gone_is_named(tmp_path):
    layers, known = the_layers(SOURCE)
    gone = ("stepsim.core.graph", "stepsim.core.result")
    assert problems(SOURCE, layers, tuple(known) + (gone,)) == [
        "the known circle stepsim.core.graph, stepsim.core.result is gone: remove it from KNOWN_CYCLES in "
        "stepsim/_layers.py"]
