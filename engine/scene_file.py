"""The JSON scene format: an engine ``Scene`` (bodies, joints, springs, cables, point forces,
moving loads, loop closures, initial state) saved to and loaded from a text file.

``save_scene(scene, path)`` writes everything in link frames, so ``load_scene``
gives back the same simulation; files written by hand may instead give
attachment points in world coordinates at the initial configuration
(``"frame": "world"``). The format is documented in docs/viewer.md
("Scene files"); ``python -m engine view --scene-file FILE`` opens one.
Errors raise ``ModelError`` naming the file and the offending element.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import joints as J
from .errors import ModelError, OutputPathError, SceneFileError
from .model import ModelBuilder
from .output_paths import output_file
from .scene import LOOP_KINDS, WORLD, LoopClosure, Scene

FORMAT = "redmax-scene"
VERSION = 1


# ------------------------------------------------------------------ save
def _vec(x) -> list:
    return [float(v) for v in np.asarray(x, float).reshape(-1)]


def _mat(x) -> list:
    return [_vec(row) for row in np.asarray(x, float)]


def _bound(v) -> float | None:
    return float(v) if np.isfinite(v) else None


def _jsonable(value):
    """value as plain JSON types, or raise TypeError."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"not JSON: {type(value).__name__}")


def scene_to_dict(scene: Scene) -> dict:
    """The scene as plain JSON data (see docs/viewer.md, "Scene files")."""
    model = scene.model
    name_of = lambda b: None if b == WORLD else model.body_names[b]  # noqa: E731
    bodies = []
    for i, name in enumerate(model.body_names):
        vs = slice(int(model.v_start[i]), int(model.v_start[i] + model.joint_nv[i]))
        R = model.body_rotation[i]
        lower, upper = model.joint_lower[vs], model.joint_upper[vs]
        limited = bool(np.isfinite(lower).any() or np.isfinite(upper).any())
        bodies.append({
            "name": name, "parent": name_of(int(model.body_parent[i])),
            "joint": J.JOINT_TYPE_NAMES[int(model.joint_type[i])], "joint_name": model.joint_names[i],
            "axis": _vec(model.joint_axis[i]), "joint_origin": _vec(model.joint_origin[i]),
            "joint_rotation": _mat(model.joint_rotation[i]),
            "mass": float(model.body_mass[i]), "com": _vec(model.body_com[i]),
            "inertia": _mat(R @ np.diag(model.body_principal_inertia[i]) @ R.T),
            "limits": [[_bound(v) for v in lower], [_bound(v) for v in upper]] if limited else None,
            **({"limit_angles": J.LIMIT_ANGLES[int(model.joint_limit_order[i])]} if model.joint_limit_order[i] else {}),
            **({"shape": _jsonable(model.body_shapes[i])} if model.body_shapes[i] else {}),
        })
    joint_springs = []
    for j, jname in enumerate(model.joint_names):
        qs, vs = model.q_slice(jname), model.v_slice(jname)
        k, d, rest = scene.joint_stiffness[vs], scene.joint_damping[vs], scene.joint_rest[qs]
        if k.any() or d.any() or not np.array_equal(rest, scene.q0[qs]):
            joint_springs.append({"joint": jname, "stiffness": _vec(k), "damping": _vec(d), "rest": _vec(rest)})
    springs = [{"name": pname, "type": "cable" if tension_only else "spring", "body_a": name_of(a), "point_a": _vec(la),
                "body_b": name_of(b), "point_b": _vec(lb), "stiffness": k, "damping": d, "rest_length": rest,
                "frame": "link"}
               for pname, (a, b, la, lb, k, d, rest, tension_only) in zip(scene.pair_names, scene.pairs)]
    forces = [{"name": fname, "body": name_of(b), "point": _vec(x), "force": _vec(f), "frame": "link"}
              for fname, (b, x, f) in zip(scene.point_force_names, scene.point_forces)]
    loads = [{"name": ld.name, "force": _vec(ld.force), "t_start": ld.t_start, "t_end": ld.t_end, "frame": "link",
              "path": [{"body": name_of(b), "start": _vec(s), "end": _vec(e)} for b, s, e in ld.path]}
             for ld in scene.moving_loads]
    closures = [{"name": lc.name, "kind": lc.kind, "body_a": name_of(lc.body_a), "point_a": _vec(lc.point_a),
                 "body_b": name_of(lc.body_b), "point_b": _vec(lc.point_b), "axis_a": _vec(lc.axis_a),
                 "axis_b": _vec(lc.axis_b), "rest_rotation": _mat(lc.rest_rotation), "frame": "link"}
                for lc in scene.loop_closures]
    metadata = {}
    for key, value in scene.metadata.items():
        try:
            metadata[str(key)] = _jsonable(value)
        except TypeError:
            pass  # metadata that is not plain data stays behind
    body_damping = scene.body_damping
    unwritten = [what for what, items in (("prescribed joints", scene.prescribed), ("motors", scene.motors),
                                          ("breakable joints", scene.breakable), ("force fields", scene.force_fields))
                 if items]
    if unwritten:
        raise SceneFileError(f"scene '{scene.name}': a scene file cannot hold its {', '.join(unwritten)} "
                             "(they are functions of time or of the bake's Blender settings)")
    decay = scene.velocity_decay
    return {
        "format": FORMAT, "version": VERSION, "name": scene.name, "gravity": _vec(model.gravity),
        "bodies": bodies, "q0": _vec(scene.q0), "qd0": _vec(scene.qd0),
        "joint_springs": joint_springs,
        "body_damping": float(body_damping[0]) if body_damping.size and np.ptp(body_damping) == 0 else _vec(body_damping),
        **({"velocity_decay": [_vec(r) for r in decay]} if np.any(decay) else {}),
        "springs": springs, "point_forces": forces, "moving_loads": loads, "loop_closures": closures,
        **({"ground": {"height": g.height, "normal": list(g.normal), "friction": g.friction,
                       "restitution": g.restitution,
                       "bodies": None if scene.contact_bodies is None
                       else [model.body_names[b] for b in scene.contact_bodies]}}
           if (g := scene.ground) is not None else {}),
        **({"body_contacts": {"friction": bc["friction"], "bodies": [model.body_names[b] for b in bc["bodies"]]}}
           if (bc := scene.body_contact) is not None else {}),
        "metadata": metadata,
    }


def save_scene(scene: Scene, path) -> Path:
    """Write ``scene`` as a JSON scene file; returns the path. OutputPathError (an OSError, one line) when the
    path cannot be written."""
    path = output_file(path, "scene file")
    text = json.dumps(scene_to_dict(scene), indent=1) + "\n"  # (all of it before the file is opened)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise OutputPathError(f"cannot write scene file '{path}': {err.strerror or err}") from None
    return path


# ------------------------------------------------------------------ load
class _Reader:
    """Field access that names the file and the element in every error."""

    def __init__(self, source: str):
        self.source = source
        self.where = "file"  # the element being read, for errors raised below it

    def error(self, what: str, message: str) -> SceneFileError:
        return SceneFileError(f"scene file '{self.source}': {what}: {message}")

    def number(self, d, key: str, what: str, default=...) -> float:
        """A JSON number (not a bool or a string) as float."""
        v = self.get(d, key, what, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            raise self.error(what, f"'{key}' must be a finite number, got {v!r}")
        return float(v)

    def get(self, d: dict, key: str, what: str, default=...):
        if not isinstance(d, dict):
            raise self.error(what, f"expected an object, got {type(d).__name__}")
        if key not in d:
            if default is ...:
                raise self.error(what, f"missing '{key}'")
            return default
        return d[key]

    def numbers(self, d, key, what, n=None, default=...):
        raw = self.get(d, key, what, default)
        if raw is None:
            if default is None:  # an optional value written as null: absent
                return None
            raise self.error(what, f"'{key}' must be {n or 'some'} finite numbers, got None")
        try:
            v = np.asarray(raw, float)
        except (TypeError, ValueError):
            raise self.error(what, f"'{key}' must be numbers, got {raw!r}") from None
        if not np.all(np.isfinite(v)) or (n is not None and v.size != n):
            raise self.error(what, f"'{key}' must be {n or 'some'} finite numbers, got {raw!r}")
        return v

    def items(self, data, key) -> list:
        v = self.get(data, key, "file", [])
        if not isinstance(v, list):
            raise self.error(key, "expected a list")
        for k, item in enumerate(v):
            if not isinstance(item, dict):
                raise self.error(f"{key}[{k}]", f"expected an object, got {type(item).__name__}")
        return v


def scene_from_dict(data: dict, source: str = "<dict>") -> Scene:
    """A Scene from JSON data (``scene_to_dict``'s layout or a hand-written file). Every error is a
    ``SceneFileError`` (a ``ModelError``) naming the file and the element."""
    rd = _Reader(source)
    try:
        return _scene_from_dict(rd, data, source)
    except SceneFileError:
        raise
    except ModelError as e:  # from the builder or Scene: they name the element already
        raise SceneFileError(f"scene file '{source}': {e}") from None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:  # a field of the wrong kind
        raise SceneFileError(f"scene file '{source}': {rd.where}: invalid value ({type(e).__name__}: {e})") from None


def _scene_from_dict(rd: _Reader, data, source: str) -> Scene:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SceneFileError(f"scene file '{source}': not a scene file (expected \"format\": \"{FORMAT}\")")
    version = data.get("version", VERSION)
    if isinstance(version, bool) or not isinstance(version, (int, float)):
        raise rd.error("version", f"must be a number, got {version!r}")
    if version > VERSION:
        raise SceneFileError(f"scene file '{source}': version {version} is newer than this engine reads ({VERSION})")
    builder = ModelBuilder(gravity=rd.numbers(data, "gravity", "gravity", 3, [0.0, 0.0, -9.81]))
    for k, spec in enumerate(rd.items(data, "bodies")):
        what = rd.where = f"body {k}"
        name = rd.get(spec, "name", what)
        what = rd.where = f"body '{name}'"
        limits = rd.get(spec, "limits", what, None)
        if limits is not None:
            try:
                lower, upper = limits  # null: an open side
                limits = tuple(np.array([fill if v is None else v for v in side], float)
                               for side, fill in ((lower, -np.inf), (upper, np.inf)))
            except (TypeError, ValueError):
                raise rd.error(what, f"'limits' must be [[lower…], [upper…]], got {limits!r}") from None
        try:
            builder.add_body(
                name, parent=-1 if spec.get("parent") in (None, "world") else spec["parent"], joint=rd.get(spec, "joint", what),
                axis=rd.numbers(spec, "axis", what, 3, [0.0, 0.0, 1.0]),
                joint_origin=rd.numbers(spec, "joint_origin", what, 3, [0.0, 0.0, 0.0]),
                joint_rotation=rd.numbers(spec, "joint_rotation", what, None, None),
                mass=rd.number(spec, "mass", what), com=rd.numbers(spec, "com", what, 3, [0.0, 0.0, 0.0]),
                inertia=rd.numbers(spec, "inertia", what, None, None), joint_name=spec.get("joint_name"),
                limits=limits, shape=spec.get("shape"),
                limit_angles=rd.get(spec, "limit_angles", what, "rotation_vector"))
        except SceneFileError:
            raise
        except ModelError as e:
            raise SceneFileError(f"scene file '{source}': {e}") from None
        except (TypeError, ValueError) as e:
            raise rd.error(what, str(e)) from None
    rd.where = "bodies"
    try:
        model = builder.finalize()
    except ModelError as e:
        raise rd.error("bodies", str(e)) from None
    try:
        scene = Scene(model, name=str(data.get("name", Path(source).stem)),
                      q0=rd.numbers(data, "q0", "q0", model.nq, None), qd0=rd.numbers(data, "qd0", "qd0", model.nv, None))
        _add_forces(rd, data, scene)
        ground = rd.get(data, "ground", "ground", None)
        rd.where = "ground"
        if ground is not None:
            scene.set_ground(rd.number(ground, "height", "ground", 0.0), rd.numbers(ground, "normal", "ground", 3, (0, 0, 1)),
                             rd.number(ground, "friction", "ground", 0.8), rd.number(ground, "restitution", "ground", 0.0),
                             bodies=_body_list(rd, ground, "ground"))
        pairs = rd.get(data, "body_contacts", "body_contacts", None)
        rd.where = "body_contacts"
        if pairs is not None:
            scene.set_body_contacts(rd.number(pairs, "friction", "body_contacts", 0.5),
                                    bodies=_body_list(rd, pairs, "body_contacts"))
    except SceneFileError:
        raise
    except ModelError as e:
        raise SceneFileError(f"scene file '{source}': {e}") from None
    metadata = rd.get(data, "metadata", "metadata", {}) or {}
    if not isinstance(metadata, dict):
        raise rd.error("metadata", f"expected an object, got {type(metadata).__name__}")
    scene.metadata.update(metadata)
    return scene


def _body_list(rd: _Reader, spec: dict, what: str):
    bodies = rd.get(spec, "bodies", what, None)
    if bodies is not None and (not isinstance(bodies, list) or not all(isinstance(b, (str, int)) and not isinstance(b, bool)
                                                                       for b in bodies)):
        raise rd.error(what, f"'bodies' must be a list of body names or indices, got {bodies!r}")
    return bodies


def _add_forces(rd: _Reader, data: dict, scene: Scene) -> None:
    model = scene.model
    for k, spec in enumerate(rd.items(data, "joint_springs")):
        what = rd.where = f"joint spring {k}"
        joint = rd.get(spec, "joint", what)
        if not isinstance(joint, str) or joint not in model.joint_names:
            raise rd.error(what, f"no joint named '{joint}'")
        qs, vs = model.q_slice(joint), model.v_slice(joint)
        for key, arr, sl in (("stiffness", scene.joint_stiffness, vs), ("damping", scene.joint_damping, vs)):
            v = rd.numbers(spec, key, f"joint spring '{joint}'", None, 0.0)
            if np.any(v < 0) or v.size not in (1, sl.stop - sl.start):
                raise rd.error(f"joint spring '{joint}'", f"'{key}' must be ≥ 0, one number or one per dof")
            arr[sl] = v
        rest = rd.numbers(spec, "rest", f"joint spring '{joint}'", None, None)
        if rest is not None:
            if rest.size != qs.stop - qs.start:
                raise rd.error(f"joint spring '{joint}'", f"'rest' needs {qs.stop - qs.start} numbers")
            scene.joint_rest[qs] = rest
        if J.JOINT_FLOATS[model.joint_type[model.joint_index(joint)]] and scene.joint_stiffness[vs].any():
            raise rd.error(f"joint spring '{joint}'", "free joints take no stiffness")
    bd = rd.numbers(data, "body_damping", "body_damping", None, 0.0)
    if np.any(bd < 0) or bd.size not in (1, model.n_bodies):
        raise rd.error("body_damping", f"must be ≥ 0, one number or one per body ({model.n_bodies})")
    scene.body_damping[:] = bd
    decay = data.get("velocity_decay")
    if decay is not None:
        rates = rd.numbers(data, "velocity_decay", "velocity_decay", None)
        if rates.size != 2 * model.n_bodies or np.any(rates < 0):
            raise rd.error("velocity_decay", f"must be (linear, angular) rates ≥ 0 for each of the {model.n_bodies} bodies")
        scene.velocity_decay[:] = rates.reshape(model.n_bodies, 2)
    for k, spec in enumerate(rd.items(data, "springs")):
        what = rd.where = f"spring {k}" if not isinstance(spec.get("name"), str) else f"spring '{spec['name']}'"
        kind = rd.get(spec, "type", what, "spring")
        add = {"spring": scene.add_spring, "cable": scene.add_cable}.get(kind)
        if kind == "damper":
            scene.add_damper(spec.get("body_a"), rd.numbers(spec, "point_a", what, 3), spec.get("body_b"),
                             rd.numbers(spec, "point_b", what, 3), rd.number(spec, "damping", what),
                             frame=spec.get("frame", "world"), name=spec.get("name"))
            continue
        if add is None:
            raise rd.error(what, f"unknown type {kind!r}; expected 'spring', 'cable' or 'damper'")
        add(spec.get("body_a"), rd.numbers(spec, "point_a", what, 3), spec.get("body_b"), rd.numbers(spec, "point_b", what, 3),
            rd.number(spec, "stiffness", what), damping=rd.number(spec, "damping", what, 0.0),
            rest_length=None if spec.get("rest_length") is None else rd.number(spec, "rest_length", what), frame=spec.get("frame", "world"), name=spec.get("name"))
    for k, spec in enumerate(rd.items(data, "point_forces")):
        what = rd.where = f"point force {k}"
        scene.add_point_force(rd.get(spec, "body", what), rd.numbers(spec, "point", what, 3),
                              rd.numbers(spec, "force", what, 3), frame=spec.get("frame", "world"), name=spec.get("name"))
    for k, spec in enumerate(rd.items(data, "moving_loads")):
        what = rd.where = f"moving load {k}"
        path = [(rd.get(seg, "body", what), rd.numbers(seg, "start", what, 3), rd.numbers(seg, "end", what, 3))
                for seg in rd.get(spec, "path", what)]
        scene.add_moving_load(rd.numbers(spec, "force", what, 3), path, rd.number(spec, "t_start", what),
                              rd.number(spec, "t_end", what), frame=spec.get("frame", "world"), name=spec.get("name"))
    for k, spec in enumerate(rd.items(data, "loop_closures")):
        _add_closure(rd, scene, k, spec)


def _add_closure(rd: _Reader, scene: Scene, k: int, spec: dict) -> None:
    what = rd.where = f"loop closure {k}"
    name = spec.get("name") if isinstance(spec, dict) else None
    kind = rd.get(spec, "kind", what, "point")
    if spec.get("frame", "world") == "world":  # the hand-written form: one world point and world axes
        scene.add_loop_closure(spec.get("body_a"), spec.get("body_b"), rd.numbers(spec, "point", what, 3), kind=kind,
                               axis=rd.numbers(spec, "axis", what, 3, [0.0, 0.0, 1.0]),
                               axis_b=rd.numbers(spec, "axis_b", what, 3, None), name=name)
        return
    name = name or f"loop{len(scene.loop_closures)}"
    what = rd.where = f"loop closure '{name}'"
    if not isinstance(kind, str) or kind not in LOOP_KINDS:
        raise rd.error(what, f"unknown kind {kind!r}; expected one of {', '.join(LOOP_KINDS)}")
    a, b = scene.body(spec.get("body_a"), what), scene.body(spec.get("body_b"), what)
    if a == b:
        raise rd.error(what, "constrains a body to itself")
    axes = [rd.numbers(spec, key, what, 3, [0.0, 0.0, 1.0]) for key in ("axis_a", "axis_b")]
    if min(np.linalg.norm(x) for x in axes) < 1e-9:
        raise rd.error(what, "axis has zero length")
    rest = rd.numbers(spec, "rest_rotation", what, 9, np.eye(3).ravel()).reshape(3, 3)
    if np.abs(rest @ rest.T - np.eye(3)).max() > 1e-6 or np.linalg.det(rest) < 0:
        raise rd.error(what, f"'rest_rotation' must be a rotation matrix (orthonormal, det +1), got {rest.tolist()}")
    scene.loop_closures.append(LoopClosure(name, a, rd.numbers(spec, "point_a", what, 3), b, rd.numbers(spec, "point_b", what, 3),
                                           kind, axes[0] / np.linalg.norm(axes[0]), axes[1] / np.linalg.norm(axes[1]), rest))


def load_scene(path) -> Scene:
    """Read a JSON scene file (str or Path); raises SceneFileError naming the file and element."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SceneFileError(f"cannot read scene file '{p}': {getattr(e, 'strerror', None) or e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SceneFileError(f"scene file '{p}': not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    return scene_from_dict(data, str(p))
