"""The layering of engine/ and addon/ (docs/architecture.md): no import circle, no import from a lower layer
to a higher one, apps beside the core and each other, no module over 600 lines. Reads the source (every
import, also inside functions)."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
ADDON = ROOT / "addon"
MAX_LINES = 600

# lowest first; a module belongs to the layer of the longest prefix it matches (a module or a package);
# a module no layer names (a new top-level tool) belongs to the top layer, "apps"
LAYERS = (
    ("core", ("engine._jit", "engine._kernel_store", "engine._kernel_cache", "engine._lazy", "engine.errors",
              "engine.geometry", "engine.spatial", "engine.joints", "engine.conjugate_gradient", "engine.output_paths")),
    ("model", ("engine.model", "engine.algorithms", "engine.integrators", "engine.energy", "engine.random_tree",
               "engine.urdf")),
    ("parts", ("engine.forces", "engine.contact", "engine.maximal", "engine.control")),
    ("scene", ("engine.stepper", "engine.scene", "engine.scene_drives", "engine.scene_file", "engine.scenes")),
    ("solvers", ("engine.solvers",)),
    ("driver", ("engine.simulator", "engine.sim_checks", "engine.breaking")),
    ("apps", ("engine", "engine.__main__", "engine.apps", "engine.envs")),
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
    files = list(modules().values()) + sorted(ADDON.rglob("*.py"))
    long = {str(f.relative_to(ROOT)): n for f in files if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"


APPS = "engine.apps"


def app_of(module: str):
    """The app package a module belongs to ('engine.apps.bench'), 'engine.apps.common', or None (the core)."""
    parts = module.split(".")
    return ".".join(parts[:3]) if module.startswith(APPS + ".") else None


def cross_app_imports(graph: dict) -> list:
    """Imports of another app's modules instead of its package (the shared ``common`` is free to all)."""
    return sorted(f"{m} imports {t}" for m, ts in graph.items() for t in ts
                  if app_of(m) and app_of(t) and app_of(t) != app_of(m) and t != app_of(t)
                  and app_of(t) != f"{APPS}.common")


def test_apps_use_other_apps_only_through_their_package():
    assert cross_app_imports(import_graph()) == []


def test_core_imports_no_app():
    """Nothing below the apps layer imports an app (the upward check, named for the apps)."""
    graph = import_graph()
    assert sorted(f"{m} imports {t}" for m, ts in graph.items() for t in ts
                  if app_of(t) and RANK[layer_of(m)] < RANK["apps"]) == []


def addon_engine_imports() -> dict:
    """{addon module: {engine module it imports}}; ``from ..engine.apps import bench`` (the extension) and
    ``from engine.apps import bench`` (a checkout) both read as engine.apps.bench."""
    mods, out = modules(), {}
    for f in sorted(ADDON.rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {a.name for a in node.names if a.name.split(".")[0] == "engine"}
            elif isinstance(node, ast.ImportFrom) and node.level in (0, 2):
                if node.module is None:  # from .. import engine
                    names |= {a.name for a in node.names if a.name == "engine"}
                elif node.module.split(".")[0] == "engine":
                    names |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                              for a in node.names}
        if names:
            out[str(f.relative_to(ROOT))] = names
    return out


def test_addon_reaches_the_engine_through_one_module_and_public_packages():
    """The add-on imports the engine in ``addon/_engine.py`` only: the package, ``geometry`` and app packages."""
    imports = addon_engine_imports()
    assert set(imports) == {"addon/_engine.py"}, imports
    allowed = {"engine", "engine.geometry"}
    bad = {m for m in imports["addon/_engine.py"] if m not in allowed and app_of(m) != m}
    assert bad == set()


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
])
def test_cycle_finder(graph, expected):
    assert find_cycle(graph) == expected


def test_the_checks_see_a_violation():
    """The layer table puts solvers above the scene, so a scene importing a solver is upward."""
    assert upward_imports({"engine.scene": {"engine.solvers.steppers.redmax"}}) == [
        "engine.scene (scene) imports engine.solvers.steppers.redmax (solvers)"]
    assert layer_of("engine.apps.advise") == "apps" and layer_of("engine.scenes.bridge") == "scene"
    assert layer_of("engine.scene_file") == "scene" and layer_of("engine.joints") == "core"
    assert layer_of("engine.apps.warmup") == "apps" and layer_of("engine.envs") == "apps"
    assert cross_app_imports({"engine.apps.sweep.runner": {"engine.apps.advise.trial", "engine.apps.advise",
                                                           "engine.apps.common"}}) == [
        "engine.apps.sweep.runner imports engine.apps.advise.trial"]


JOINT_TYPES = {"FIXED", "REVOLUTE", "PRISMATIC", "UNIVERSAL", "SPHERICAL", "FREE"}
# fast paths for the common hinge, checked against the general joint code by
# tests/test_flat_launch.py::test_revolute_straight_line_paths_equal_the_general_joint_code
JOINT_FAST_PATHS = {"engine/algorithms/aba.py", "engine/algorithms/kinematics.py"}


def joint_type_branches() -> list:
    """Comparisons with a joint type id (``jt == REVOLUTE``, ``J.FREE in (...)``) outside engine/joints.py."""
    found = []
    for f in sorted(ENGINE.rglob("*.py")):
        rel = str(f.relative_to(ROOT))
        if rel == "engine/joints.py":
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            names |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            if names & JOINT_TYPES:
                found.append(f"{rel}:{node.lineno}")
    return found


def test_joint_types_are_known_in_joints_py_only():
    """Other modules ask joints.py what a type frees (JOINT_FREE_ROTATIONS, JOINT_QUATERNION_AT, JOINT_FLOATS, …);
    only the tested fast paths compare type ids."""
    assert [b for b in joint_type_branches() if b.split(":")[0] not in JOINT_FAST_PATHS] == []
