"""The layering of engine/ (docs/architecture.md): no import circle, no import from a lower layer
to a higher one, no module over 600 lines. Reads the source (every import, also inside functions)."""
import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parent.parent / "engine"
MAX_LINES = 600

# lowest first; a module belongs to the layer of the longest prefix it matches (a module or a package);
# a module no layer names (a new top-level tool) belongs to the top layer, "apps"
LAYERS = (
    ("core", ("engine._jit", "engine._kernel_store", "engine._kernel_cache", "engine._lazy", "engine.errors", "engine.geometry", "engine.spatial", "engine.joints")),
    ("model", ("engine.model", "engine.algorithms", "engine.integrators", "engine.energy", "engine.random_tree",
               "engine.urdf")),
    ("parts", ("engine.forces", "engine.contact", "engine.maximal", "engine.control")),
    ("scene", ("engine.stepper", "engine.scene", "engine.scene_file", "engine.scenes")),
    ("solvers", ("engine.solvers",)),
    ("driver", ("engine.simulator", "engine.sim_checks")),
    ("apps", ("engine", "engine.__main__", "engine.bench", "engine.viewer")),
)
RANK = {name: k for k, (name, _) in enumerate(LAYERS)}


def layer_of(module: str) -> str:
    best, best_len = "apps", -1
    for name, prefixes in LAYERS:
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = name, len(p)
    if best_len == len("engine"):  # only the root matched: a top-level module no layer names
        return "apps"
    return best


def modules() -> dict:
    out = {}
    for f in ENGINE.rglob("*.py"):
        parts = f.relative_to(ENGINE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def import_graph() -> dict:
    """{module: {imported engine module, …}} from every relative ``from … import …`` in engine/."""
    mods = modules()
    graph = {}
    for m, f in mods.items():
        package = m if f.name == "__init__.py" else m.rsplit(".", 1)[0]
        targets = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                assert not any(a.name == "engine" or a.name.startswith("engine.") for a in node.names), \
                    f"{m}: absolute import of the engine (imports inside engine/ are relative)"
            if not isinstance(node, ast.ImportFrom) or node.level == 0:
                continue
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                name = f"{target}.{alias.name}"
                t = name if name in mods else target
                if t in mods and t != m:
                    targets.add(t)
        graph[m] = targets
    return graph


def find_cycle(graph: dict):
    """One import circle as a list of modules, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                return stack[stack.index(t):] + [t]
            if t not in state:
                found = visit(t)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def upward_imports(graph: dict) -> list:
    return sorted(f"{m} ({layer_of(m)}) imports {t} ({layer_of(t)})" for m, ts in graph.items() for t in ts
                  if RANK[layer_of(t)] > RANK[layer_of(m)])


def test_no_import_circle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " → ".join(cycle)


def test_no_upward_import():
    assert upward_imports(import_graph()) == []


def test_no_module_over_600_lines():
    long = {m: n for m, f in modules().items() if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
])
def test_cycle_finder(graph, expected):
    assert find_cycle(graph) == expected


def test_the_checks_see_a_violation():
    """The layer table puts solvers above the scene, so a scene importing a solver is upward."""
    assert upward_imports({"engine.scene": {"engine.solvers.redmax"}}) == [
        "engine.scene (scene) imports engine.solvers.redmax (solvers)"]
    assert layer_of("engine.advise") == "apps" and layer_of("engine.scenes.bridge") == "scene"
    assert layer_of("engine.scene_file") == "scene" and layer_of("engine.joints") == "core"
