"""Blender's collision settings → the engine's contact (``engine.contact``, docs/contact.md).

With the scene's *Collisions* on (the default), every rigid body collides as Blender's Rigid Body does:

* **Shape** (``collision_shape``), from the object's bounding box (its dimensions with the object's scale, along
  its own axes; Z is the axis of a capsule, cylinder or cone, as in Blender): Box (the box), Sphere (radius half
  the largest dimension), Capsule (radius half the larger of X and Y, caps inside the Z extent; a sphere when
  it is not taller than wide), Cylinder and Cone (radius half the larger of X and Y, height the Z extent);
  Convex Hull (the hull of the mesh's vertices), Mesh (a passive body: a static triangle mesh collider; an
  active one collides as its convex hull, named), Compound Parent (the shapes of its children that have rigid
  bodies; the children move with it and are not simulated apart). The shape is centred on the bounding box
  (Bullet centres it on the origin: the same when the origin is at the geometry's centre). Objects simulated
  without a rigid body (*Simulate* on, or in a constraint) collide with the ground plane only, as their bounding
  box (Blender's Rigid Body does not simulate them at all; mechanisms of such objects overlap where they are
  joined). *Source* Base reads the mesh without
  its modifiers, Deform and Final with them.
* **Margin**: Blender's (``RBO_GET_MARGIN``): *Collision Margin* when *Margin* is on and always for Convex Hull,
  Mesh and Cone, else 0.04 m. Box, Cylinder and Cone keep their outer size and round their edges by it (an
  embedded margin, at most half the shape's smallest half size); a Convex Hull grows by it only when *Margin*
  is on (off, Blender shrinks the hull by it first: the same outer surface); a Mesh collider is thickened by
  it on both sides; it changes nothing on a Sphere or Capsule.
* **Friction** and **Bounciness**: per shape; a pair's are the products (``engine.contact``), as in Bullet.
* **Collision Collections**: bit masks; two shapes collide when they share one. An object in none collides
  with nothing (named in the Scene Summary).
* A constraint's **Disable Collisions** keeps its two objects apart from each other (bodies joined by a joint
  never collide anyway, as in Bullet with it on).

Passive rigid bodies (and active ones Blender holds: Animated on, Dynamic off) are static colliders of their own
shape; when Blender moves them by their animation they are *moving colliders*: prescribed bodies of that
shape (``anchors``), which push what they meet and are pushed by nothing. A flat passive object with the
Convex Hull shape (a plane: Blender's default) collides as its triangles (Blender gives such a hull no
margin). Bones keep their capsules (the bone's *Collide* and *Contact Radius*): they collide with the objects,
not with the other bones of their armature. Plain meshes without a rigid body collide with nothing (as in
Blender). The *Collide with ground plane* setting still adds its plane.

Refused by name: a Box, Cylinder, Cone or Capsule of zero size (a flat object: give it thickness or use Convex
Hull or Mesh), a Convex Hull or Mesh of an empty mesh, and (``engine``) the convex hull of a flat active body.
A non-manifold mesh collider collides face by face (the Scene Summary counts its odd edges).
"""
from __future__ import annotations

import numpy as np

from .._engine import engine
from .anchors import held_by_blender, moving_anchor
from .common import MappingError, matrix, rigid_part
from .rigid_objects import mesh_triangles

DEFAULT_MARGIN = 0.04    # m: Bullet's margin of a shape whose *Margin* is off (Box, Cylinder, Sphere, Capsule)
EMBED_FRACTION = 0.5     # an embedded margin is kept below this fraction of the shape's smallest half size
FLAT = 1e-9              # relative extent below which a mesh counts as flat
STRETCH_TOLERANCE = 1e-6  # relative: Blender's matrices are float32 (ε 1.2e-7)
AXES = "XYZ"


def enabled(bscene) -> bool:
    """Whether the bake collides the rigid bodies (the scene's *Collisions*)."""
    return bool(bscene.redmax.collisions)


def scene_collides(bscene, rig) -> bool:
    """Whether a bake of ``bscene`` would have contact from its rigid bodies (read by ``rig``: the scene as a
    re-bake maps it, ``rigid_objects.LiveRig`` or ``snapshot.Restored``): Collisions on and two rigid bodies, or
    one and a simulated armature (the kernels to compile, ``addon.kernels``)."""
    if not enabled(bscene):
        return False
    bodies = sum(rig.rigid_body(ob) is not None for ob in bscene.objects)
    armatures = any(ob.type == "ARMATURE" and ob.redmax.simulate for ob in bscene.objects)
    return bodies >= 2 or (bodies >= 1 and armatures)


def is_compound_child(ob) -> bool:
    """A child with a rigid body of a Compound Parent: part of its parent's shape, not simulated apart."""
    p = ob.parent
    return (ob.rigid_body is not None and p is not None and p.rigid_body is not None
            and p.rigid_body.collision_shape == "COMPOUND")


def collider_objects(objects) -> list:
    """The objects that are rigid bodies Blender does not simulate (passive, or active held: Animated on or
    Dynamic off), compound children aside: the static or moving colliders."""
    return [ob for ob in objects if ob.type == "MESH" and ob.rigid_body is not None and not is_compound_child(ob)
            and (ob.rigid_body.type == "PASSIVE" or held_by_blender(ob))]


def moving_colliders(bscene, objects) -> list:
    """The colliders Blender moves by their animation (sampled by the bake: ``anchors.anchor_keys``)."""
    if not enabled(bscene):
        return []
    return [ob for ob in collider_objects(objects) if moving_anchor(ob)]


def margin_of(rb) -> float:
    """Blender's margin of a rigid body (``RBO_GET_MARGIN`` in Blender's rigidbody.cc)."""
    if rb.use_margin or rb.collision_shape in ("CONVEX_HULL", "MESH", "CONE"):
        return float(rb.collision_margin)
    return DEFAULT_MARGIN


def groups_of(rb) -> list:
    return [i for i, on in enumerate(rb.collision_collections) if on]


def _mesh(ob, depsgraph, base: bool):
    """(vertices (n, 3) in the object's frame, triangles (m, 3)) of its mesh: the evaluated one, or without
    modifiers (``base``)."""
    if not base:
        return mesh_triangles(ob, depsgraph)
    me = ob.data
    me.calc_loop_triangles()
    co = np.empty(3 * len(me.vertices))
    me.vertices.foreach_get("co", co)
    tris = np.empty(3 * len(me.loop_triangles), dtype=np.int32)
    me.loop_triangles.foreach_get("vertices", tris)
    return co.reshape(-1, 3), tris.reshape(-1, 3)


class Shapes:
    """Reads the collision shapes of a scene's objects (world coordinates) for the mapping."""

    def __init__(self, depsgraph):
        self.depsgraph = depsgraph
        self.notes: list = []  # (element, setting, why): what collides otherwise than Blender would

    def mesh(self, ob):
        rb = ob.rigid_body
        co, tris = _mesh(ob, self.depsgraph, rb is not None and rb.mesh_source == "BASE")
        return co, tris

    def body(self, ob) -> dict | None:
        """The world-frame shape dict of a simulated object or moving collider (``common.Builder.add``)."""
        rb = ob.rigid_body
        what = f"object '{ob.name}'"
        if rb is None:  # (simulated without a rigid body: its bounding box; an Empty's has no size: no shape)
            try:
                shape = self._primitive(ob, "BOX", DEFAULT_MARGIN, what)
            except MappingError:
                return None
        elif rb.collision_shape == "COMPOUND":
            parts = [self._part(child) for child in ob.children if is_compound_child(child)]
            parts = [p for p in parts if p is not None]
            if not parts:
                raise MappingError(f"{what}: its Compound Parent shape has no children with rigid bodies (parent "
                                   "objects with rigid bodies to it, or choose another Shape)")
            shape = {"type": "compound", "shapes": parts}
        else:
            part = self._part(ob)
            if part is None:
                return None
            shape = part
        return self._material(ob, shape)

    def _part(self, ob) -> dict | None:
        """The geometry of ``ob``'s shape (its material is its body's: a compound's parts take the parent's)."""
        rb = ob.rigid_body
        what = f"object '{ob.name}'"
        kind = rb.collision_shape
        if kind == "COMPOUND":
            return None  # (a compound inside a compound: Blender adds nothing of it)
        if kind in ("CONVEX_HULL", "MESH"):
            if kind == "MESH":
                self.notes.append((what, "Shape Mesh", "an active body collides as its convex hull (the bake has "
                                                       "no moving triangle meshes; Bullet's are unstable too)"))
            return self._hull(ob, float(rb.collision_margin) if rb.use_margin else 0.0, what)
        return self._primitive(ob, kind, margin_of(rb), what)

    def _hull(self, ob, margin, what) -> dict:
        co, _ = self.mesh(ob)
        if len(co) == 0:
            raise MappingError(f"{what}: its {ob.rigid_body.collision_shape.replace('_', ' ').title()} collision "
                               "shape is an empty mesh (give it geometry, or remove its rigid body)")
        W = matrix(ob.matrix_world)
        R, p = rigid_part(W)
        local = co @ _stretch(ob, W, R).T  # the scaled vertices in the object's own (rotation) frame
        return {"type": "convex", "vertices": local, "center": p, "rotation": R, "margin": margin}

    def _primitive(self, ob, kind, margin, what) -> dict:
        W = matrix(ob.matrix_world)
        corners = np.array([tuple(c) for c in ob.bound_box], dtype=float).reshape(-1, 3)
        lo, hi = corners.min(axis=0), corners.max(axis=0)
        dims = (hi - lo) * np.linalg.norm(W[:3, :3], axis=0)
        R, _ = rigid_part(W)
        center = W[:3, :3] @ (0.5 * (lo + hi)) + W[:3, 3]
        scale = max(float(dims.max()), 1e-300)
        flat = [AXES[i] for i in range(3) if dims[i] <= FLAT * scale]
        label = kind.title()
        used = {"BOX": [0, 1, 2], "SPHERE": [0, 1, 2]}.get(kind, [2])  # capsule, cylinder, cone: Z and X or Y
        if not np.all(dims[used] > FLAT * scale) or (kind not in ("BOX", "SPHERE") and max(dims[0], dims[1]) <= FLAT * scale):
            raise MappingError(f"{what}: its {label} collision shape has zero size along {', '.join(flat) or 'every axis'} "
                               "(a flat object); give it thickness, or use the Convex Hull or Mesh shape")
        if kind == "BOX":
            m = min(margin, EMBED_FRACTION * 0.5 * float(dims.min()))
            return {"type": "box", "size": dims, "center": center, "rotation": R, "margin": m}
        if kind == "SPHERE":
            return {"type": "sphere", "radius": 0.5 * float(dims.max()), "center": center}
        radius, height = 0.5 * float(max(dims[0], dims[1])), float(dims[2])
        if kind == "CAPSULE":
            if height - 2 * radius <= FLAT * scale:
                return {"type": "sphere", "radius": radius, "center": center}  # (Bullet's capsule of height 0)
            return {"type": "capsule", "radius": radius, "length": height - 2 * radius, "axis": R[:, 2],
                    "center": center}
        m = min(margin, EMBED_FRACTION * min(radius, 0.5 * height))
        if kind == "CONE":  # the rounded apex must stay above the base (engine.geometry.parse_shape)
            m = min(m, EMBED_FRACTION * height / (1.0 + np.hypot(radius, height) / radius))
        return {"type": kind.lower(), "radius": radius, "length": height, "axis": R[:, 2], "center": center,
                "margin": m}

    @staticmethod
    def _material(ob, shape) -> dict:
        """Friction, Bounciness, Collision Collections and the *Collide* switch of ``ob`` on ``shape``."""
        rb = ob.rigid_body
        out = dict(shape)
        if rb is not None:
            out["friction"], out["restitution"] = float(rb.friction), float(rb.restitution)
            groups = groups_of(rb)
            if groups:
                out["groups"] = groups
            else:
                out["collide"] = False
        else:
            out["friction"], out["restitution"] = 0.5, 0.0  # Blender's defaults
        if not ob.redmax.collide:
            out["collide"] = False
        return out

    def static(self, ob) -> tuple:
        """(shape dict in world coordinates, kind label) of a passive collider (``Scene.add_static_collider``)."""
        rb = ob.rigid_body
        what = f"object '{ob.name}'"
        if rb.collision_shape in ("MESH", "CONVEX_HULL"):
            co, tris = self.mesh(ob)
            W = matrix(ob.matrix_world)
            world = co @ W[:3, :3].T + W[:3, 3]
            extent = np.ptp(world, axis=0) if len(world) else np.zeros(3)
            flat = len(world) > 0 and _flatness(world) <= FLAT * max(float(extent.max()), 1e-300)
            if len(co) == 0 or len(tris) == 0:
                raise MappingError(f"{what}: its {rb.collision_shape.replace('_', ' ').title()} collision shape is an "
                                   "empty mesh (give it geometry, or remove its rigid body)")
            if rb.collision_shape == "MESH" or flat:
                margin = float(rb.collision_margin) if rb.collision_shape == "MESH" else 0.0
                shape = {"type": "mesh", "vertices": world, "triangles": tris, "margin": margin}
                label = "static mesh collider" if rb.collision_shape == "MESH" else "static mesh collider (a flat Convex Hull)"
                return self._material(ob, shape), label
        return self.body(ob), f"static {rb.collision_shape.replace('_', ' ').lower()} collider"


def _stretch(ob, W, R) -> np.ndarray:
    """Rᵀ W₃ (3, 3): the scale (and shear) of ``ob``'s world matrix W (4, 4) in the frame of its rotation R; its
    own Scale (times Delta Scale) exactly where that is it to float32 precision (no parent or constraint scales
    it). The polar decomposition of Blender's float32 matrix differs in the last bits at every rotation; the
    own Scale does not, so copies of one mesh at any rotation (a bridge's planks) give bit-identical hull
    vertices, whose hull ``engine.geometry`` computes once (its cache holds 256 vertex sets: 2000 planks that
    differed in the last bits cost three qhull runs each, the read stage's time growing as n^1.16)."""
    S = R.T @ W[:3, :3]
    own = np.diag(np.array(ob.scale, float) * np.array(ob.delta_scale, float))
    return own if np.abs(S - own).max() <= STRETCH_TOLERANCE * np.abs(own).max() else S


def _flatness(points) -> float:
    """The smallest extent of ``points`` (k, 3) across their best-fitting plane."""
    c = points - points.mean(axis=0)
    return float(np.linalg.svd(c, compute_uv=False)[-1] / np.sqrt(max(len(points), 1))) if len(points) >= 3 else 0.0


def colliding(model) -> list:
    """Names of the bodies whose shapes collide."""
    return [model.body_names[i] for i, s in enumerate(model.body_shapes) if s and s.get("collide", True)]


def add_colliders(scene, b, bscene, objects, shapes: Shapes) -> dict:
    """Static colliders, body contacts and the pairs kept apart, on the engine ``scene``; returns what the Scene
    Summary says of them: {"colliders": [(name, label)], "apart": [(a, b, why)], "none": [(name, why)]}."""
    report: dict = {"enabled": enabled(bscene), "colliders": [], "apart": [], "none": [], "bodies": [], "groups": []}
    if not report["enabled"]:
        return report
    model = scene.model
    named = colliding(model)
    bodies = [n for n in named if b.targets[n].bone or b.targets[n].object.rigid_body is not None]
    chosen = set(bodies)  # (``n not in bodies``, a list, made this line take time in n²: 0.3 s at 2000 planks)
    plain = [n for n in named if n not in chosen and b.targets[n].keyed]
    if plain:
        report["none"].append((", ".join(plain[:3]) + (f" (+{len(plain) - 3})" if len(plain) > 3 else ""),
                               "no rigid body: collides with the ground plane only (add a rigid body to collide "
                               "with objects)"))
    for n in bodies:
        t = b.targets[n]
        shape = model.body_shapes[model.body_index(n)]
        rb = t.object.rigid_body if not t.bone else None
        kind = "bone capsule" if t.bone else "bounding box" if rb is None else rb.collision_shape.replace("_", " ").title()
        if rb is not None and rb.collision_shape == "COMPOUND":
            kind = f"Compound of {len(shape['shapes'])}"
        elif rb is not None and rb.collision_shape == "MESH":
            kind = "Mesh as its convex hull"
        role = "moving collider" if not t.keyed and t.object.name == n else "body"
        report["bodies"].append((n, f"{role}, {kind}"))
        if rb is not None and groups_of(rb) != [0]:
            report["groups"].append((n, groups_of(rb)))
    keyed = {t.object.name: n for n, t in b.targets.items() if not t.bone}
    apart = _kept_apart(bscene, objects, keyed, report)
    for n, t in b.targets.items():
        shape = model.body_shapes[model.body_index(n)]
        if shape and not shape.get("collide", True) and t.keyed:
            on = t.object.data.bones[t.bone].redmax.collide if t.bone else t.object.redmax.collide
            report["none"].append((n, _nothing(on)))
    for ob in collider_objects(objects) + list(b.held_still):
        if ob.name in keyed or ob in b.anchor_bodies:
            continue
        shape, label = shapes.static(ob)
        if not shape.get("collide", True):
            report["none"].append((ob.name, _nothing(ob.redmax.collide)))
            continue
        touch = [n for n in bodies if (ob.name, n) not in apart]
        if not touch:
            continue
        try:
            collider = scene.add_static_collider(ob.name, shape, friction=shape["friction"],
                                                 restitution=shape["restitution"],
                                                 bodies=None if len(touch) == len(bodies) else touch)
        except engine.ModelError as err:
            raise MappingError(f"object '{ob.name}': {err}") from None
        if collider.mesh is not None and collider.mesh.non_manifold_edges:
            label += f" ({collider.mesh.non_manifold_edges} non-manifold edges: it collides face by face)"
        report["colliders"].append((ob.name, label))
        if groups_of(ob.rigid_body) != [0]:
            report["groups"].append((ob.name, groups_of(ob.rigid_body)))
    for a, c in apart:
        if a in model.body_names and c in model.body_names:
            scene.disable_collision(a, c)
    # body against body only where two of them can meet: the bones of one armature never collide with each other
    # (``_bones_apart``), so an armature alone needs no body contacts — nor its n² pairs kept apart (a 2000-bone
    # tree took 3.9 s to read and its bake's simulation grew as n^1.7)
    families = {b.targets[n].object.name if b.targets[n].bone else n for n in bodies}
    if len(families) >= 2:
        _bones_apart(scene, b, bodies)
        scene.set_body_contacts(friction=0.5, bodies=bodies)  # (objects without a rigid body: the ground only)
    return report


def _nothing(collide_on: bool) -> str:
    return f"collides with nothing ({'in no Collision Collection' if collide_on else 'Collide is off'})"


def _kept_apart(bscene, objects, keyed, report) -> set:
    """{(name, name)} of the object pairs a constraint's Disable Collisions keeps apart (both orders)."""
    apart = set()
    for h in objects:
        c = h.rigid_body_constraint
        if c is None or not c.enabled or not c.disable_collisions or c.object1 is None or c.object2 is None:
            continue
        a, d = c.object1.name, c.object2.name
        apart |= {(a, d), (d, a)}
        if a in keyed or d in keyed:
            report["apart"].append((a, d, f"Disable Collisions (rigid body constraint on '{h.name}')"))
    return apart


def _bones_apart(scene, b, bodies) -> None:
    """Bones collide with objects, not with the other bones of their armature (their capsules overlap where
    they branch)."""
    by_armature: dict = {}
    for n in bodies:
        t = b.targets.get(n)
        if t is not None and t.bone:
            by_armature.setdefault(t.object.name, []).append(n)
    for names in by_armature.values():
        for i, a in enumerate(names):
            for c in names[i + 1:]:
                scene.disable_collision(a, c)


def summary_lines(report: dict) -> list:
    """The Scene Summary's lines on collisions: what collides with what, and why something does not."""
    if not report:
        return []
    if not report["enabled"]:
        return ["rigid bodies do not collide: the scene's Collisions is off (RedMax > Collisions)"]
    lines = [f"{name}: {label}" for name, label in report["colliders"]]
    bodies = [f"{name} ({kind})" for name, kind in report["bodies"]]
    if bodies:
        lines.append(f"{len(bodies)} colliding: " + ", ".join(bodies[:6]) + (f" (+{len(bodies) - 6})" if len(bodies) > 6 else ""))
    if any(kind == "body, bone capsule" for _, kind in report["bodies"]):
        lines.append("bones: collide with the objects, not with the bones of their own armature")
    lines += [f"{name}: only with shapes in Collision Collection {', '.join(str(g + 1) for g in groups)}"
              for name, groups in report["groups"]]
    lines += [f"pair {a}–{b}: {why}" for a, b, why in report["apart"]]
    lines += [f"{name}: {why}" for name, why in report["none"]]
    return lines
