"""Breakable joints and loop closures (``Scene.set_breakable``): after each step the Simulator measures their
reactions and breaks those that exceed their threshold — a joint leaves its child free (the tree changes),
a loop closure is dropped.

Reaction of a tree joint: the engine's inverse dynamics on the step just taken. RNEA at the step's start
(q, q̇) with q̈ = (q̇⁺ − q̇)/h and the external forces of the step (the force evaluator's spring, cable and
point-force wrenches, its dampers and body damping, the loop closures' forces) gives the spatial force
f_i that joint i passes to its subtree (link coordinates at the joint); its part outside the joint's
motion subspace is the constraint reaction [n_c; f_c]. Reaction of a loop closure: its rows' impulses of the
step (the RedMax solve's multipliers), per row.

Like Bullet, which compares each constraint row's impulse of one world substep with the *Breaking
Threshold*, the impulse compared is the largest world component of f_c and n_c (or the largest row impulse
of a closure) times ``interval`` (the world's substep; a closure's step impulse scaled by interval/h).

A broken joint becomes a free joint: same bodies, same order, the child's world pose and velocity kept
(``scene_with_free_joint``); the joint's springs, limits and prescription go with it.
"""
from __future__ import annotations

import copy
import dataclasses

import numpy as np

from . import joints as J
from .algorithms.kinematics import joint_pass, link_poses, velocity_pass, world_pass
from .algorithms.rnea import rnea_kernel
from .model import ModelBuilder


def joint_reactions(model, q, qd, qd_new, h, f_ext, ws=None) -> np.ndarray:
    """(n, 6) constraint reactions [n_c; f_c] of every joint in world coordinates (N·m, N) for the step
    (q, q̇) → q̇⁺ of length h under link-frame body wrenches ``f_ext`` (n, 6)."""
    ws = model.make_workspace() if ws is None else ws
    q = np.ascontiguousarray(q, float)
    tau = np.empty(model.nv)
    rnea_kernel(model.tree, q, np.ascontiguousarray(qd, float), (np.asarray(qd_new) - qd) / h,
                np.ascontiguousarray(f_ext, float), 1.0, ws, tau)
    world_pass(model.tree, ws)
    out = np.zeros((model.n_bodies, 6))
    for i in range(model.n_bodies):
        f = ws.f[i].copy()
        vs, nv = int(model.v_start[i]), int(model.joint_nv[i])
        if nv:
            S = ws.S[vs:vs + nv]
            f -= S.T @ np.linalg.lstsq(S @ S.T, S @ f, rcond=None)[0]  # the part the joint's dofs carry
        R = ws.X0_E[i].T  # link → world
        out[i, :3], out[i, 3:] = R @ f[:3], R @ f[3:]
    return out


def external_wrenches(stepper, model, q, qd, ws) -> np.ndarray:
    """(n, 6) link-frame wrenches of a step's forces as its force evaluator left them (zeros without one)."""
    fe = getattr(stepper, "forces", None)
    if fe is None:
        return np.zeros((model.n_bodies, 6))
    joint_pass(model.tree, np.ascontiguousarray(q, float), ws)
    velocity_pass(model.tree, np.ascontiguousarray(q, float), np.ascontiguousarray(qd, float), ws)
    f = fe.wrench + fe.wrench_damping - np.einsum("nij,nj->ni", fe.body_damping_blocks, ws.v)
    gs = getattr(stepper, "_joint_gs", None)
    if gs is not None and gs.closure_wrench is not None:
        f = f + gs.closure_wrench
    return f


class BreakWatch:
    """The breakables of a scene; ``check(stepper, start, new)`` → names that broke in the step start → new."""

    def __init__(self, scene, dt: float):
        self.scene, self.dt = scene, float(dt)
        self.model = scene.model
        self.items = list(scene.breakable)
        self.ws = self.model.make_workspace()
        self.last = {}  # name → reaction impulse of the last step (N·s)

    def __bool__(self) -> bool:
        return bool(self.items)

    def check(self, stepper, start, new) -> list:
        model, broken = self.model, []
        joints = [b for b in self.items if b.kind == "joint"]
        if joints:
            f = external_wrenches(stepper, model, start.q, start.qd, self.ws)
            react = joint_reactions(model, start.q, start.qd, new.qd, self.dt, f, self.ws)
            for b in joints:
                j = model.joint_index(b.name)
                impulse = float(np.abs(react[j]).max()) * b.interval
                self.last[b.name] = impulse
                if impulse > b.threshold:
                    broken.append(b)
        closures = [b for b in self.items if b.kind == "closure"]
        if closures:
            rows = np.asarray(getattr(stepper, "row_impulses", np.zeros(0)))
            k = 0
            for lc in self.scene.loop_closures:
                n = 3 + lc.rotation_rows
                b = next((x for x in closures if x.name == lc.name), None)
                if b is not None and k + n <= len(rows):
                    impulse = float(np.abs(rows[k:k + n]).max(initial=0.0)) * b.interval / self.dt
                    self.last[b.name] = impulse
                    if impulse > b.threshold:
                        broken.append(b)
                k += n
        return broken


def scene_with_free_joint(scene, name: str, q, qd):
    """(scene', q', q̇') for ``scene`` with joint ``name`` replaced by a free joint at (q, q̇): bodies and their
    order unchanged (the child's parent becomes the world), every other joint's coordinates, springs, rest
    pose and limits kept; the child's link frame keeps its world pose and velocity."""
    model = scene.model
    j = model.joint_index(name)
    R, p = link_poses(model, q)
    ws = model.make_workspace()
    joint_pass(model.tree, np.ascontiguousarray(q, float), ws)
    velocity_pass(model.tree, np.ascontiguousarray(q, float), np.ascontiguousarray(qd, float), ws)
    twist = ws.v[j].copy()  # the child's link twist [ω; v], link coordinates: a free joint's velocity
    mb = ModelBuilder(gravity=model.gravity)
    for i, bname in enumerate(model.body_names):
        vs = slice(int(model.v_start[i]), int(model.v_start[i] + model.joint_nv[i]))
        Rb = model.body_rotation[i]
        inertia = Rb @ np.diag(model.body_principal_inertia[i]) @ Rb.T
        lower, upper = model.joint_lower[vs], model.joint_upper[vs]
        limited = bool(np.isfinite(lower).any() or np.isfinite(upper).any())
        common = dict(mass=float(model.body_mass[i]), com=model.body_com[i], inertia=inertia,
                      joint_name=model.joint_names[i], shape=model.body_shapes[i])
        if i == j:
            mb.add_body(bname, parent=-1, joint="free", **common)
        else:
            parent = int(model.body_parent[i])
            mb.add_body(bname, parent=model.body_names[parent] if parent >= 0 else -1,
                        joint=J.JOINT_TYPE_NAMES[int(model.joint_type[i])], axis=model.joint_axis[i],
                        joint_origin=model.joint_origin[i], joint_rotation=model.joint_rotation[i],
                        limits=(lower, upper) if limited else None,
                        limit_angles=J.LIMIT_ANGLES[int(model.joint_limit_order[i])], **common)
    new_model = mb.finalize()

    def remap(old, new_size, slices_old, slices_new, fill):
        out = np.full(new_size, fill, dtype=float) if np.ndim(fill) == 0 else fill.copy()
        for jn in model.joint_names:
            if jn != name:
                out[slices_new(jn)] = old[slices_old(jn)]
        return out

    q_new = remap(q, new_model.nq, model.q_slice, new_model.q_slice, new_model.neutral_q())
    qd_new = remap(qd, new_model.nv, model.v_slice, new_model.v_slice, 0.0)
    qs, vs = new_model.q_slice(name), new_model.v_slice(name)
    q_new[qs] = np.concatenate([p[j], J.matrix_to_quat(R[j])])
    qd_new[vs] = twist
    new = copy.copy(scene)
    for key, value in vars(scene).items():  # lists and arrays of the old scene are not shared
        if isinstance(value, (list, dict, np.ndarray)):
            setattr(new, key, copy.copy(value))
    new.__dict__.pop("_field_ws", None)
    new.model = new_model
    new.q0, new.qd0 = q_new.copy(), qd_new.copy()
    new._R0, new._p0 = link_poses(new_model, q_new)
    new.joint_stiffness = remap(scene.joint_stiffness, new_model.nv, model.v_slice, new_model.v_slice, 0.0)
    new.joint_damping = remap(scene.joint_damping, new_model.nv, model.v_slice, new_model.v_slice, 0.0)
    new.joint_rest = remap(scene.joint_rest, new_model.nq, model.q_slice, new_model.q_slice, q_new)
    new.prescribed = [dataclasses.replace(pr, index=new_model.joint_index(pr.joint))
                      for pr in scene.prescribed if pr.joint != name]
    new.breakable = [b for b in scene.breakable if b.name != name]
    return new, q_new, qd_new


def scene_without_closure(scene, name: str):
    """A copy of ``scene`` without loop closure ``name`` (and its breakable entry)."""
    new = copy.copy(scene)
    for key, value in vars(scene).items():
        if isinstance(value, (list, dict)):
            setattr(new, key, copy.copy(value))
    new.__dict__.pop("_field_ws", None)
    new.loop_closures = [lc for lc in scene.loop_closures if lc.name != name]
    new.breakable = [b for b in scene.breakable if b.name != name]
    return new
