"""Blender's Rigid Body (Bullet) baking an engine pile of boxes: the Bullet side of ``python -m engine bench contact``.

``bake(scene, frames, fps)`` builds the rig of ``engine.scenes.collisions.box_pile(n)`` in a new Blender scene
(removed afterwards; the open file is left as it was) as an artist does, with its operators (called through ``_bpy.ops.call`` without ``bpy.ops``' per-call view-layer update, as
``bake_scale.py`` does, so a 1000-box build takes seconds, not minutes): each box *Add › Mesh › Cube* of the
pile's edge at the body's pose, then *Object › Rigid Body › Add Active* on all of them, shape Box, the mass and
friction of the engine's shapes (restitution 0, Blender's default); the floor *Add › Mesh › Grid* with the
mesh collider's extent and subdivisions, *Add Passive*, shape Mesh, its friction. The rigid body world stays
at Blender's defaults (10 substeps per frame, 10 solver iterations); its point cache is baked over the frame
range with ``bpy.ops.ptcache.bake`` (timed; ``bakes`` bakes, each of a new rig), then every frame of the last is played
back (``frame_set``) to read the boxes' poses for the bench's measures (``poses=False``: not read). Runs in the process that calls it (the
``bpy`` wheel, or Blender's own Python through ``scripts/blender_bench.py contact``).
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BAKES = 2  # the report takes the fastest


def _bpy():
    if "bpy" not in sys.modules and "BLENDER_USER_RESOURCES" not in os.environ:
        os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="redmax_blender_")
    import bpy

    return bpy


@contextlib.contextmanager
def _quiet_stdout():
    """File descriptor 1 to /dev/null (Blender's C code prints there, below Python's sys.stdout)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _op(idname: str, **properties):
    from _bpy import ops as _ops

    result = _ops.call(idname, properties)
    if "FINISHED" not in result:
        raise RuntimeError(f"{idname} returned {sorted(result)}")


def _pile_spec(scene):
    """(box edges (n,), masses (n,), frictions (n,), link poses R (n, 3, 3), p (n, 3), the floor collider)."""
    from engine.algorithms.kinematics import link_poses

    model = scene.model
    R, p = link_poses(model, scene.q0)
    shapes = [model.body_shapes[i] for i in range(model.n_bodies)]
    if any(s is None or s.get("type") != "box" for s in shapes):
        raise ValueError("bullet_pile: every body of the pile must have a box shape")
    edges = np.array([s["size"] for s in shapes], float)
    if not np.allclose(edges, edges[:, :1]):
        raise ValueError("bullet_pile: the pile's boxes must be cubes")
    floors = [c for c in scene.static_colliders if c.kind == "mesh"]
    if len(floors) != 1:
        raise ValueError("bullet_pile: the pile needs exactly one mesh floor")
    friction = np.array([s.get("friction", 0.5) for s in shapes], float)
    return edges[:, 0], np.asarray(model.body_mass, float), friction, R, p, floors[0]


def build(scene):
    """The pile's rig in a new Blender scene of its own (the open file's scenes are left alone); returns
    (that scene, the box objects in body order)."""
    bpy = _bpy()
    from mathutils import Matrix

    edges, masses, friction, R, p, floor = _pile_spec(scene)
    sc = bpy.data.scenes.new("bench contact pile")
    with bpy.context.temp_override(scene=sc, view_layer=sc.view_layers[0]):
        view_layer = bpy.context.view_layer
        verts = np.asarray(floor.mesh.vertices, float)
        lo, hi = verts.min(axis=0), verts.max(axis=0)
        cells = int(round(math.sqrt(len(floor.mesh.triangles) / 2)))  # (a square grid of quads, two triangles each)
        _op("mesh.primitive_grid_add", x_subdivisions=cells, y_subdivisions=cells, size=float(hi[0] - lo[0]),
            location=tuple(float(x) for x in 0.5 * (lo + hi)))
        ground = view_layer.objects.active
        ground.name = "bench pile floor"
        with bpy.context.temp_override(object=ground, active_object=ground):
            _op("rigidbody.object_add", type="PASSIVE")
        ground.rigid_body.collision_shape = "MESH"
        ground.rigid_body.friction = float(floor.friction)
        boxes = []
        for i in range(len(edges)):
            _op("mesh.primitive_cube_add", size=float(edges[i]), location=tuple(float(x) for x in p[i]))
            ob = view_layer.objects.active
            ob.name = f"bench pile box{i}"
            M = np.eye(4)
            M[:3, :3], M[:3, 3] = R[i], p[i]
            ob.matrix_world = Matrix(M.tolist())
            boxes.append(ob)
        for ob in view_layer.objects:
            ob.select_set(ob in boxes)
        view_layer.objects.active = boxes[0]
        with bpy.context.temp_override(object=boxes[0], active_object=boxes[0], selected_objects=boxes):
            _op("rigidbody.objects_add", type="ACTIVE")
        for ob, m, mu in zip(boxes, masses, friction):
            ob.rigid_body.collision_shape = "BOX"
            ob.rigid_body.mass, ob.rigid_body.friction = float(m), float(mu)
        view_layer.update()
    return sc, boxes


def remove(sc) -> None:
    """Delete the pile's scene, its objects and their meshes."""
    bpy = _bpy()
    objects = list(sc.objects)
    meshes = [ob.data for ob in objects if ob.type == "MESH"]
    collection = sc.rigidbody_world.collection if sc.rigidbody_world is not None else None
    for ob in objects:
        bpy.data.objects.remove(ob)
    for me in meshes:
        if me.users == 0:
            bpy.data.meshes.remove(me)
    bpy.data.scenes.remove(sc)
    if collection is not None and collection.users == 0:
        bpy.data.collections.remove(collection)


def bake(scene, frames: int, fps: int = 24, *, bakes: int = BAKES, poses: bool = True) -> dict:
    """Build the pile and bake ``frames`` frames at ``fps`` with Bullet, ``bakes`` times (a new rig each time: a
    second bake of the same cache replays it); {"seconds": the fastest bake, "bakes": each, "poses": [(R, p)
    per frame 1…frames after the start] of the last (None when ``poses`` is False), "iterations": solver
    iterations, "setup": one line on the world}. The pile's scenes are removed afterwards."""
    if bakes < 1:
        raise ValueError(f"bullet_pile.bake: bakes must be ≥ 1, got {bakes}")
    bpy = _bpy()
    seconds, frames_read = [], None
    for k in range(bakes):
        sc, boxes = build(scene)
        try:
            sc.render.fps, sc.render.fps_base = int(fps), 1.0
            world = sc.rigidbody_world
            sc.frame_start, sc.frame_end = 1, frames + 1
            world.point_cache.frame_start, world.point_cache.frame_end = 1, frames + 1
            with bpy.context.temp_override(scene=sc, view_layer=sc.view_layers[0], point_cache=world.point_cache):
                sc.frame_set(1)
                with _quiet_stdout():  # (Blender prints a line per frame baked)
                    t0 = time.perf_counter()
                    result = bpy.ops.ptcache.bake(bake=True)
                    seconds.append(time.perf_counter() - t0)
                if result != {"FINISHED"} or not world.point_cache.is_baked:
                    raise RuntimeError(f"Bullet's bake of the pile failed: {sorted(result)}")
                if k == bakes - 1 and poses:
                    frames_read = []
                    for frame in range(2, frames + 2):
                        sc.frame_set(frame)
                        M = np.array([np.array(ob.matrix_world) for ob in boxes])
                        frames_read.append((M[:, :3, :3].copy(), M[:, :3, 3].copy()))
            floor = next(ob for ob in sc.objects if ob.name.startswith("bench pile floor"))
            setup = (f"Blender {bpy.app.version_string} Rigid Body, {world.substeps_per_frame} substeps per frame, "
                     f"{world.solver_iterations} solver iterations, boxes shape Box, floor shape Mesh (collision "
                     f"margin {floor.rigid_body.collision_margin:.2g} m), bpy.ops.ptcache.bake timed (each bake on a "
                     f"new rig)")
        finally:
            remove(sc)
    return {"seconds": min(seconds), "bakes": seconds, "poses": frames_read, "iterations": world.solver_iterations,
            "setup": setup}
