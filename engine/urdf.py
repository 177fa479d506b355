"""URDF loading: links, joints and inertials → a Model.

Semantics follow URDF: a joint's ``<origin>`` places the joint frame in the
parent link frame, the child link frame coincides with the joint frame at
q = 0, and a link's ``<inertial><origin>`` gives its COM and the axes of its
inertia tensor in the link frame. Joint types: revolute and continuous
(→ revolute), prismatic, fixed, floating (→ free). The root link is fixed to
the world (a ``fixed`` joint named ``<root>_fixed``) unless
``floating_base=True`` (a ``free`` joint named ``<root>_floating``).

Links without ``<inertial>`` (or with ``<mass value="0"/>``, whose inertia
tensor is then ignored) are massless; they may only hang on fixed joints (a
moving joint needs inertia behind it). A massless root is kept as a massless
body fixed to the world (so body names always equal link names and body 0 is
the root); a floating base needs an ``<inertial>``. ``<limit>`` gives joint
limits for revolute/prismatic joints (a missing ``lower``/``upper`` side is
unbounded); ``continuous`` joints are unlimited; limits are enforced by the simulator
(``engine.solvers.stages.joint_limits``). ``<mimic>`` (a joint that copies another)
is refused with a ``URDFError`` naming the joint: the engine has no joint
coupling, and ignoring it would simulate a different robot. ``<dynamics>``,
``<visual>``, ``<collision>`` and ``<gazebo>`` are ignored. Inertias must be
positive definite with principal moments obeying the triangle inequality.

Bodies are added parents first (depth-first from the root, children in file
order), so ``model.body_index(link)`` follows that order. Units: SI (m, kg,
kg·m², rad). Gravity is the builder default (0, 0, −9.81).

Everything is validated before the first body is built, so a malformed file
raises ``URDFError`` naming the link or joint and nothing is half-loaded;
builder ``ModelError``s (should any remain) are re-raised as ``URDFError``.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .errors import ModelError, URDFError
from .model import Model, ModelBuilder

_JOINT_TYPES = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic", "fixed": "fixed",
                "floating": "free"}


def rpy_to_matrix(rpy) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def _floats(text, n, what) -> np.ndarray:
    try:
        v = np.array([float(x) for x in text.split()])
    except (ValueError, AttributeError):
        raise URDFError(f"{what}: expected {n} numbers, got {text!r}") from None
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise URDFError(f"{what}: expected {n} finite numbers, got {text!r}")
    return v


def _origin(elem, what):
    o = elem.find("origin") if elem is not None else None
    if o is None:
        return np.zeros(3), np.eye(3)
    return _floats(o.get("xyz", "0 0 0"), 3, f"{what} origin xyz"), rpy_to_matrix(_floats(o.get("rpy", "0 0 0"), 3, f"{what} origin rpy"))


def _attr(elem, name, what) -> float:
    v = elem.get(name)
    if v is None:
        raise URDFError(f"{what}: missing attribute '{name}'")
    return float(_floats(v, 1, f"{what} {name}")[0])


def _parse_link(link):
    name = link.get("name")
    inertial = link.find("inertial")
    if inertial is None:
        return dict(name=name, mass=0.0, com=np.zeros(3), inertia=np.zeros((3, 3)))
    what = f"link '{name}'"
    mass_el = inertial.find("mass")
    if mass_el is None:
        raise URDFError(f"{what}: <inertial> has no <mass>")
    mass = _attr(mass_el, "value", f"{what} mass")
    if mass < 0:
        raise URDFError(f"{what}: mass must be >= 0, got {mass}")
    if mass == 0:  # a massless placeholder link (common in real URDFs)
        return dict(name=name, mass=0.0, com=np.zeros(3), inertia=np.zeros((3, 3)))
    com, R = _origin(inertial, f"{what} inertial")
    ie = inertial.find("inertia")
    if ie is None:
        raise URDFError(f"{what}: <inertial> has no <inertia>")
    ixx, ixy, ixz, iyy, iyz, izz = (_attr(ie, k, f"{what} inertia") for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
    I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    ev = np.linalg.eigvalsh(I)
    if ev.min() <= 0:
        raise URDFError(f"{what}: inertia tensor is not positive definite")
    if ev[0] + ev[1] < ev[2] * (1.0 - 1e-9):
        raise URDFError(f"{what}: inertia principal moments {ev.tolist()} break the triangle inequality "
                        f"({ev[0]:g} + {ev[1]:g} < {ev[2]:g}); no rigid body has this inertia")
    return dict(name=name, mass=mass, com=com, inertia=R @ I @ R.T)


def _parse_joint(joint):
    name = joint.get("name")
    what = f"joint '{name}'"
    jtype = joint.get("type")
    if jtype not in _JOINT_TYPES:
        raise URDFError(f"{what}: unsupported joint type {jtype!r} (supported: {', '.join(_JOINT_TYPES)})")
    if joint.find("mimic") is not None:
        raise URDFError(f"{what}: <mimic> (joint '{joint.find('mimic').get('joint')}' copied) is not supported: the "
                        "engine has no joint coupling; remove the <mimic> to simulate the joint as independent")
    parent, child = joint.find("parent"), joint.find("child")
    if parent is None or parent.get("link") is None or child is None or child.get("link") is None:
        raise URDFError(f"{what}: needs <parent link=...> and <child link=...>")
    xyz, R = _origin(joint, what)
    axis_el = joint.find("axis")
    axis = _floats(axis_el.get("xyz", "1 0 0"), 3, f"{what} axis") if axis_el is not None else np.array([1.0, 0, 0])
    if _JOINT_TYPES[jtype] in ("revolute", "prismatic") and np.linalg.norm(axis) < 1e-9:
        raise URDFError(f"{what}: axis has zero length")
    limits = None
    lim = joint.find("limit")
    if lim is not None and jtype in ("revolute", "prismatic") and (lim.get("lower") is not None or lim.get("upper") is not None):
        lo = _attr(lim, "lower", f"{what} limit") if lim.get("lower") is not None else -np.inf
        hi = _attr(lim, "upper", f"{what} limit") if lim.get("upper") is not None else np.inf
        if lo > hi:
            raise URDFError(f"{what}: limit lower={lo} is above upper={hi}")
        limits = (lo, hi)
    return dict(name=name, type=_JOINT_TYPES[jtype], parent=parent.get("link"), child=child.get("link"),
                origin=xyz, rotation=R, axis=axis, limits=limits)


def check_no_cycle(links, parent_joint: dict, roots) -> None:
    """URDFError naming the links and joints of a cycle, if there is one: walking up from every link (link →
    its parent joint's parent link), a cycle never reaches a root. O(n): each link is settled once, and a walk's
    own links are a dict, not a list searched at every step (a file listed leaf-first made that O(n²))."""
    reaches_root = set(roots)
    for name in links:
        seen, cur = {}, name  # link → its place on this walk (insertion-ordered)
        while cur not in reaches_root:
            if cur in seen:
                cyc = list(seen)[seen[cur]:]
                raise URDFError("cycle in the joint graph through links " + ", ".join("'%s'" % c for c in cyc)
                                + " and joints " + ", ".join("'%s'" % parent_joint[c]["name"] for c in cyc))
            seen[cur] = len(seen)
            cur = parent_joint[cur]["parent"]
        reaches_root.update(seen)


def load_urdf_string(text, *, floating_base: bool = False, source: str = "<string>") -> Model:
    """Like ``load_urdf``, from the XML document ``text`` (str or bytes); ``source`` prefixes messages."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise URDFError(f"{source}: not valid XML ({e})") from None
    if root.tag != "robot":
        raise URDFError(f"{source}: root element is <{root.tag}>, expected <robot>")
    links, joints = {}, {}
    for el in root.findall("link"):
        name = el.get("name")
        if not name:
            raise URDFError(f"{source}: a <link> has no name")
        if name in links:
            raise URDFError(f"link '{name}': defined twice")
        links[name] = _parse_link(el)
    for el in root.findall("joint"):
        name = el.get("name")
        if not name:
            raise URDFError(f"{source}: a <joint> has no name")
        if name in joints:
            raise URDFError(f"joint '{name}': defined twice")
        joints[name] = _parse_joint(el)
    if not links:
        raise URDFError(f"{source}: no links")
    parent_joint = {}
    for j in joints.values():
        for role in ("parent", "child"):
            if j[role] not in links:
                raise URDFError(f"joint '{j['name']}': {role} link '{j[role]}' is not defined")
        if j["child"] in parent_joint:
            raise URDFError(f"link '{j['child']}': child of two joints ('{parent_joint[j['child']]['name']}' and '{j['name']}')")
        parent_joint[j["child"]] = j
    roots = [name for name in links if name not in parent_joint]
    check_no_cycle(links, parent_joint, roots)
    if len(roots) != 1:
        found = ", ".join("'%s'" % r for r in roots) or "none: every link is a child"
        raise URDFError(f"{source}: expected exactly one root link, found {len(roots)} ({found})")
    for j in joints.values():
        if j["type"] != "fixed" and links[j["child"]]["mass"] == 0:
            raise URDFError(f"link '{j['child']}': massless (no <inertial> or mass 0) but moves on joint '{j['name']}'")
    root_name = roots[0]
    if floating_base and links[root_name]["mass"] == 0:
        raise URDFError(f"link '{root_name}': a floating base needs an <inertial> with mass > 0")
    root_joint = f"{root_name}_{'floating' if floating_base else 'fixed'}"
    if root_joint in joints:
        raise URDFError(f"joint '{root_joint}': name is reserved for the root link's joint to the world")
    children = {}
    for j in joints.values():
        children.setdefault(j["parent"], []).append(j)
    b = ModelBuilder()
    try:
        r = links[root_name]
        b.add_body(root_name, parent=-1, joint="free" if floating_base else "fixed", mass=r["mass"], com=r["com"],
                   inertia=r["inertia"], joint_name=root_joint)
        stack = list(reversed(children.get(root_name, [])))
        while stack:
            j = stack.pop()
            c = links[j["child"]]
            b.add_body(c["name"], parent=j["parent"], joint=j["type"], axis=j["axis"], joint_origin=j["origin"],
                       joint_rotation=j["rotation"], mass=c["mass"], com=c["com"], inertia=c["inertia"],
                       joint_name=j["name"], limits=j["limits"])
            stack.extend(reversed(children.get(c["name"], [])))
        return b.finalize()
    except URDFError:
        raise
    except ModelError as e:
        raise URDFError(f"{source}: {e}") from None


def load_urdf(path, *, floating_base: bool = False) -> Model:
    """Load the URDF file ``path`` (str or Path) into a Model; see the module docstring for the mapping.

    One body per link (body name = link name), one joint per URDF joint (same
    name) plus the root's joint to the world, ``<root>_fixed`` or, with
    ``floating_base=True``, a free joint ``<root>_floating``. Raises URDFError.
    """
    p = Path(path)
    try:
        text = p.read_bytes()  # bytes: let the XML declaration pick the encoding
    except OSError as e:
        raise URDFError(f"cannot read URDF '{p}': {e.strerror or e}") from None
    return load_urdf_string(text, floating_base=floating_base, source=str(p))
