"""Joint limits as unilateral velocity constraints, applied after a step's velocity solve (or, with contacts on one
articulation, solved with them: ``limits_contact.py``).

Every finite bound in ``model.joint_lower`` / ``joint_upper`` is one coordinate x of a joint:

* revolute, prismatic, universal: x = q of that dof (rad or m); its rate is the dof's velocity,
  so the row is the unit row e_d;
* spherical, ``model.joint_limit_order`` 0 (the default): x = the k-th component of the rotation
  vector φ = log(quaternion) (rad, the convention of ``engine.scenes.characters``); its rate is
  φ̇ = J_r⁻¹(φ) ω, so the row is the k-th row of J_r⁻¹(φ) on the joint's three dofs (ω in child
  coordinates);
* spherical with an Euler order (codes 1–6 of ``joints.LIMIT_ANGLES``, Blender's convention, the
  coordinates Blender's Limit Rotation clamps): x = the Euler angle about axis k (``euler_angles``,
  as mathutils' ``Matrix.to_euler(order)``), its row the k-th row of the Euler-rate matrix
  (``euler_rate_rows``);
* free joints take no limits (``ModelError``).

With l(v) = s·(row · v) (s = +1 at a lower bound, −1 at an upper one) and g ≥ 0 inside the
range, the stage finds impulses λ ≥ 0 with

    v⁺ = v* + W' Lᵀ S λ,     l(v⁺) ≥ target,     λ ⊥ (l(v⁺) − target),

by projected Gauss–Seidel on the limit-space inertia L W' Lᵀ. W = M̃⁻¹ is the step's own metric
(the tree part of M̃ = M + h D + h² K, as the contact stage uses; M for the explicit solver), and
with loop closures G, W' = W − W Gᵀ (G W Gᵀ)⁺ G W: the limit impulses then leave G v unchanged,
so the closures keep the velocities their own solve gave them. The target of a bound is

* inside, gap g ≥ 0: −g/h — the coordinate may reach the bound during the step but not pass it
  (speculative: no overshoot at any speed, hence no tunnelling);
* violated, g < 0: β (−g − slop)/h — Baumgarte push-back of what exceeds ``slop`` at rate β;
* ``restitution`` e (default 0, a perfectly inelastic stop): an impact (at the bound, within
  ``slop``, and approaching faster than ``bounce_speed``) leaves at no less than e times its
  approach speed. A fast approach is first brought exactly onto the bound by the speculative
  target; the impact is the next step's.

Only bounds within ``margin`` of being reached this step enter the solve; a bound the impulses
of the others would push past is added and the solve repeated.

Euler bounds are curved in the joint's dofs (their rows change within a step, so a fast turn about
one axis moves another axis's angle beyond what its rate row predicts: 2.4 mrad in the ball-bone
fall of tests/test_addon_limits.py). When Euler rows are near, the solve is repeated (``EULER_BEND_PASSES``) with
each target moved by what the linear prediction missed at q ⊕ h v⁺ (``JointLimits._bend``), so the
bound holds on the configuration the stepper integrates to, not only to first order.
"""
from __future__ import annotations

import math

import numpy as np

from ..._jit import kernel
from ...algorithms.kinematics import joint_pass, world_pass
from ...algorithms.minv import minv
from ...contact.pgs import pgs_kernel
from ...errors import ModelError, SimulatorOptionError
from ...integrators import integrate
from ...joints import JOINT_EULER_LIMITS, JOINT_FLOATS, quat_to_matrix
from . import limits_contact
from .loop_closures import closure_arrays, constraint_jacobian, constraint_rows


NO_FRICTION = np.zeros(0)  # (the PGS's friction coefficients, unused for one-sided rows)

# Blender's mat3_normalized_to_eulO: below this cos of the middle angle (16 float epsilons) a rotation is
# at the gimbal and its third angle is set to 0
EULER_GIMBAL_CY = 16.0 * 2.0 ** -23
# The Euler-rate rows divide by cos of the middle angle; within 1e-3 of the gimbal (0.057° from ±90°) they
# divide by ±1e-3 instead: bounded rows (≤ 1e3 |ω|) where the first and third angle are ill-defined
EULER_RATE_MIN_COS = 1e-3
# a step's end past a bound by more than this × slop is moved back onto it (``within``) even when the contact stage
# projected nothing: a ball joint turning at 15 rad/s ends 5 mrad past, beyond its rows' first order (grounded dog)
LATE_SLOPS = 5.0
# Euler bounds are curved in the joint's dofs: the step's solve is repeated (at most this many times) with
# each gap moved by what the rows' linear prediction misses at q ⊕ h v⁺ (``JointLimits._bend``) ...
EULER_BEND_PASSES = 4
# ... unless that exceeds this (rad): a jump between decompositions, not curvature
EULER_BEND_MAX = 0.1


@kernel(inline=True)
def _euler_axes(order):
    """(first, second, third axis, odd permutation) of Euler order code ``order`` (1–6 of
    ``joints.LIMIT_ANGLES``: XYZ, XZY, YXZ, YZX, ZXY, ZYX; the first axis is applied first)."""
    if order == 1:
        return 0, 1, 2, False
    if order == 2:
        return 0, 2, 1, True
    if order == 3:
        return 1, 0, 2, True
    if order == 4:
        return 1, 2, 0, False
    if order == 5:
        return 2, 0, 1, False
    return 2, 1, 0, True


@kernel
def euler_angles(R, order, e):
    """e (3,) = the Euler angles (rad) about x, y, z of rotation R (3, 3) in order code ``order`` (1–6 of
    ``joints.LIMIT_ANGLES``): R = R_c(e_c) R_b(e_b) R_a(e_a) for order 'abc'. Blender's
    mat3_normalized_to_eulO (mathutils ``Matrix.to_euler(order)``, what Limit Rotation clamps): of the two
    decompositions the one with the smaller |e_x| + |e_y| + |e_z| (the middle angle in [−90°, 90°] unless
    the others exceed 90°), and at the gimbal (cos of the middle angle ≤ ``EULER_GIMBAL_CY``) the third angle 0."""
    i, j, k, odd = _euler_axes(order)
    cy = math.hypot(R[i, i], R[j, i])
    if cy > EULER_GIMBAL_CY:
        a, b, c = math.atan2(R[k, j], R[k, k]), math.atan2(-R[k, i], cy), math.atan2(R[j, i], R[i, i])
        a2, b2, c2 = math.atan2(-R[k, j], -R[k, k]), math.atan2(-R[k, i], -cy), math.atan2(-R[j, i], -R[i, i])
        if abs(a) + abs(b) + abs(c) > abs(a2) + abs(b2) + abs(c2):
            a, b, c = a2, b2, c2
    else:
        a, b, c = math.atan2(-R[j, k], R[j, j]), math.atan2(-R[k, i], cy), 0.0
    sign = -1.0 if odd else 1.0  # an odd order is the even formula with negated angles (Shoemake)
    e[i] = sign * a
    e[j] = sign * b
    e[k] = sign * c


@kernel(inline=True)
def _turn(axis, angle, v0, v1, v2):
    """v (3 scalars) turned by ``angle`` (rad) about coordinate axis ``axis`` (0, 1, 2)."""
    c, s = math.cos(angle), math.sin(angle)
    if axis == 0:
        return v0, c * v1 - s * v2, s * v1 + c * v2
    if axis == 1:
        return c * v0 + s * v2, v1, -s * v0 + c * v2
    return c * v0 - s * v1, s * v0 + c * v1, v2


@kernel(inline=True)
def _unit(axis):
    return (1.0 if axis == 0 else 0.0), (1.0 if axis == 1 else 0.0), (1.0 if axis == 2 else 0.0)


@kernel(inline=True)
def _cross_into(p, r, out, row):
    """out[row] = p × r (p, r: 3 scalars each)."""
    out[row, 0] = p[1] * r[2] - p[2] * r[1]
    out[row, 1] = p[2] * r[0] - p[0] * r[2]
    out[row, 2] = p[0] * r[1] - p[1] * r[0]


@kernel
def euler_rate_rows(e, order, rows):
    """rows (3, 3): (ė_x, ė_y, ė_z) = rows ω for Euler angles e (3,) (rad, ``euler_angles``) of order code
    ``order`` and ω (3,) the angular velocity in the child frame (Ṙ = R ω̃, the spherical joint's dofs).

    Euler-rate kinematics (e.g. Diebel, "Representing attitude", 2006, §5; Shuster 1993): with
    R = C B A, C = R_c(e_c), B = R_b(e_b), A = R_a(e_a) and Xᵀ Ẋ = ė ẽ for a turn X about a fixed axis,
    ω̃ = Rᵀ Ṙ = Aᵀ Bᵀ (Cᵀ Ċ) B A + Aᵀ (Bᵀ Ḃ) A + Aᵀ Ȧ, so ω = ė_a u_a + ė_b u_b + ė_c u_c with
    u_a = e_a, u_b = Aᵀ e_b, u_c = Aᵀ Bᵀ e_c (unit axes). ė is the inverse of U = [u_a u_b u_c]: its rows
    are (u_b × u_c, u_c × u_a, u_a × u_b) / det U, det U = u_a · (u_b × u_c) = ±cos e_b. Near the gimbal
    |det U| is held at ``EULER_RATE_MIN_COS`` (module constants)."""
    a, b, c, _ = _euler_axes(order)
    ua = _unit(a)
    t = _unit(b)
    ub = _turn(a, -e[a], t[0], t[1], t[2])
    t = _unit(c)
    t = _turn(b, -e[b], t[0], t[1], t[2])
    uc = _turn(a, -e[a], t[0], t[1], t[2])
    _cross_into(ub, uc, rows, a)
    _cross_into(uc, ua, rows, b)
    _cross_into(ua, ub, rows, c)
    det = ua[0] * rows[a, 0] + ua[1] * rows[a, 1] + ua[2] * rows[a, 2]
    if abs(det) < EULER_RATE_MIN_COS:
        det = EULER_RATE_MIN_COS if det >= 0.0 else -EULER_RATE_MIN_COS
    for r in range(3):
        for col in range(3):
            rows[r, col] /= det


@kernel
def limit_coordinates(q, q_start, v_start, order, joint, dof, component, x, coef, idx):
    """Fill x (m,) — each bound's coordinate — and its rate row in sparse form, ẋ_i = Σ_k coef[i, k]
    v[idx[i, k]], by ``order[i]``: −1 the dof itself; 0 (a ball joint) the rotation vector
    φ = log(quaternion) (angle in [0, π]) and row k of J_r⁻¹(φ), φ̇ = J_r⁻¹(φ) ω (ω child coordinates);
    1–6 (a ball joint, ``joints.LIMIT_ANGLES``) the Euler angle about axis k and its rate row
    (``euler_angles``, ``euler_rate_rows``)."""
    P = np.empty((3, 3))
    e = np.empty(3)
    for i in range(x.shape[0]):
        j = joint[i]
        if order[i] < 0:
            x[i] = q[q_start[j] + component[i]]
            coef[i, 0] = 1.0
            coef[i, 1] = 0.0
            coef[i, 2] = 0.0
            for c in range(3):
                idx[i, c] = dof[i]
            continue
        qs = q_start[j]
        k = component[i]
        if order[i] > 0:
            quat_to_matrix(q, qs, P)
            euler_angles(P, order[i], e)
            x[i] = e[k]
            euler_rate_rows(e, order[i], P)
            for c in range(3):
                coef[i, c] = P[k, c]
                idx[i, c] = v_start[j] + c
            continue
        w, a, b, c3 = q[qs], q[qs + 1], q[qs + 2], q[qs + 3]
        if w < 0.0:  # q and −q: the rotation angle in [0, π]
            w, a, b, c3 = -w, -a, -b, -c3
        s = np.sqrt(a * a + b * b + c3 * c3)
        theta = 2.0 * np.arctan2(s, w)
        f = theta / s if s > 1e-12 else 2.0
        phi0, phi1, phi2 = a * f, b * f, c3 * f
        P[0, 0], P[0, 1], P[0, 2] = 0.0, -phi2, phi1
        P[1, 0], P[1, 1], P[1, 2] = phi2, 0.0, -phi0
        P[2, 0], P[2, 1], P[2, 2] = -phi1, phi0, 0.0
        if theta < 1e-6:
            g = 1.0 / 12.0
        else:
            g = 1.0 / (theta * theta) - (1.0 + np.cos(theta)) / (2.0 * theta * np.sin(theta))
        x[i] = phi0 if k == 0 else (phi1 if k == 1 else phi2)
        for c in range(3):
            pp = 0.0
            for m in range(3):
                pp += P[k, m] * P[m, c]
            coef[i, c] = (1.0 if c == k else 0.0) + 0.5 * P[k, c] + g * pp
            idx[i, c] = v_start[j] + c


class JointLimits:
    """The joint-limit stage of one scene. ``apply(q, v, inertia, joint_diag) -> v⁺`` (nv,)."""

    def __init__(self, scene, dt: float, *, margin: float = 0.05, baumgarte: float = 0.2, slop: float = 1e-4,
                 restitution: float = 0.0, bounce_speed: float = 0.1, max_iter: int = 500, tol: float = 1e-12):
        model = self.model = scene.model
        self.dt = float(dt)
        self.margin, self.baumgarte, self.slop = float(margin), float(baumgarte), float(slop)
        self.restitution, self.bounce_speed = float(restitution), float(bounce_speed)
        self.max_iter, self.tol = int(max_iter), float(tol)
        if not 0.0 <= self.restitution <= 1.0:
            raise SimulatorOptionError(f"limit_options: restitution must be in [0, 1], got {restitution}")
        rows = []  # (joint, dof index d, component k, lower, upper)
        for j in range(model.n_bodies):
            vs, nv = int(model.v_start[j]), int(model.joint_nv[j])
            for k in range(nv):
                lo, hi = float(model.joint_lower[vs + k]), float(model.joint_upper[vs + k])
                if np.isfinite(lo) or np.isfinite(hi):
                    if JOINT_FLOATS[model.joint_type[j]]:
                        raise ModelError(f"joint '{model.joint_names[j]}': a free joint takes no limits")
                    rows.append((j, vs + k, k, lo, hi))
        self.joint = np.array([r[0] for r in rows], dtype=np.int64)
        self.dof = np.array([r[1] for r in rows], dtype=np.int64)
        self.component = np.array([r[2] for r in rows], dtype=np.int64)
        self.lower = np.array([r[3] for r in rows], float)
        self.upper = np.array([r[4] for r in rows], float)
        # each bound's coordinate (limit_coordinates): −1 the dof, else the ball joint's joint_limit_order
        self._order = (np.where(JOINT_EULER_LIMITS[model.joint_type[self.joint]], model.joint_limit_order[self.joint], -1)
                       .astype(np.int64) if rows else np.zeros(0, np.int64))
        self._closures = closure_arrays(scene.loop_closures) if scene.loop_closures else None
        self.last_impulses = np.zeros(0)  # λ of the last step's active bounds (N·s or N·m·s)
        self.last_active = np.zeros(0, dtype=np.int64)  # their rows; negative = upper bound of row −1 − i
        self.last_sweeps = 0
        self._arrival = None  # each bound's rate at the end of the previous step
        self._warm = None  # each one-sided row's impulse in the last joint solve with contacts (its warm start)
        self.ws = model.make_workspace()  # this stage's own kinematics workspace

    @staticmethod
    def needed(model) -> bool:
        """True when the model has any finite joint bound."""
        return bool(np.isfinite(model.joint_lower).any() or np.isfinite(model.joint_upper).any())

    def coordinates(self, q):
        """(x (m,), (coef (m, 3), idx (m, 3))): each bound's coordinate at q and its rate row in sparse
        form (``limit_coordinates``; a joint's rows touch only its own dofs)."""
        m, model = len(self.dof), self.model
        x, coef, idx = np.empty(m), np.empty((m, 3)), np.empty((m, 3), dtype=np.int64)
        limit_coordinates(np.ascontiguousarray(q, dtype=float), model.q_start, model.v_start, self._order,
                          self.joint, self.dof, self.component, x, coef, idx)
        return x, (coef, idx)

    def within(self, q, passes: int = 3, beyond: float = 0.0):
        """q moved back onto the bounds it exceeds, along each bound's rate row (least-norm, a few passes: a ball
        joint's bounds share dofs); q itself when none is exceeded by more than ``beyond``. The contact stage's
        position correction knows no joint bounds on the tree-by-tree space and can push a joint past one (a limited
        chain landing on the ground: 17 mm past it without this); and a ball joint turning fast passes its bound by
        more than the rows' first order (``LATE_SLOPS``)."""
        if len(self.dof) == 0:
            return q
        for i in range(passes):
            x, (coef, idx) = self.coordinates(q)
            excess = np.where(x < self.lower, x - self.lower, np.where(x > self.upper, x - self.upper, 0.0))
            past = np.nonzero(np.abs(excess) > (1e-12 if i else max(beyond, 1e-12)))[0]
            if len(past) == 0:
                break
            dv = np.zeros(self.model.nv)
            for i in past:
                np.add.at(dv, idx[i], -excess[i] * coef[i] / float(coef[i] @ coef[i]))
            q = integrate(self.model, q, dv, 1.0)
        return q

    def _dense_rows(self, coef, idx):
        """The rows (len, nv) of the sparse form."""
        L = np.zeros((len(coef), self.model.nv))
        np.add.at(L, (np.repeat(np.arange(len(coef)), 3), idx.ravel()), coef.ravel())
        return L

    def violation(self, q) -> float:
        """Largest amount by which q exceeds any bound (rad or m; 0 inside)."""
        if len(self.dof) == 0:
            return 0.0
        x, _ = self.coordinates(q)
        return float(max(np.max(self.lower - x, initial=0.0), np.max(x - self.upper, initial=0.0)))

    def _targets(self, gap, rate, arrival, bend):
        """arrival: the rates the previous step ended with (what brought the joint to the bound); the
        bounce takes e times the slower of that and this step's free rate, never the gravity (or other
        force) impulse of the step the joint already rests in, which would pump energy in. bend: what
        the step adds to each gap beyond the rate's linear prediction (``_bend``; 0 but for Euler bounds),
        taken off the target so the gap after the step is the one the target means."""
        h = self.dt
        target = np.where(gap >= 0.0, -gap / h, self.baumgarte * np.maximum(-gap - self.slop, 0.0) / h) - bend / h
        approach = np.maximum(rate, arrival)
        impact = (approach < -self.bounce_speed) & (gap <= self.slop)  # at the bound (speculation brought it there)
        return np.where(impact, np.maximum(target, -self.restitution * approach), target)

    def for_contact(self, held: bool):
        """This stage when the contact stage may solve its rows with its own (``limits_contact.py``): no closures, no
        held rows (``held``: the step has prescribed rows) to keep; else None."""
        return self if self._closures is None and len(self.dof) > 0 and not held else None

    def at_step_end(self, q, projected: bool):
        """q after the contact stage's post-stabilization moved it (``projected``) or not: ``within`` the bounds, all
        of them after a projection, else only those exceeded by more than ``LATE_SLOPS`` × slop."""
        return self.within(q, beyond=0.0 if projected else LATE_SLOPS * self.slop)

    def with_contacts(self, q, v, space, u_free, target, mu, lam0, max_iter, tol):
        """``limits_contact.velocities`` with this stage's Euler bend passes: (v⁺, contact impulses, sweeps)."""
        return limits_contact.velocities(self, q, v, space, u_free, target, mu, lam0, max_iter, tol,
                                         EULER_BEND_PASSES)

    def project_with_contacts(self, q, space, target, max_iter, tol):
        """``limits_contact.positions``: the post-stabilization's Δq (nv,) with the bounds kept."""
        return limits_contact.positions(self, q, space, target, max_iter, tol)

    def warm_impulses(self, rows: int) -> np.ndarray:
        """The last joint solve's impulse per one-sided row (2m,), zeros if none (a copy)."""
        lam = self._warm
        return np.zeros(rows) if lam is None or len(lam) != rows else lam.copy()

    def keep_impulses(self, lam) -> None:
        self._warm = lam

    def hold(self, rows) -> None:
        """Rows (m, nv) the next ``apply`` keeps as well as the closures' (a stepper's prescribed joints), or None."""
        self._held = rows

    def _response(self, q, inertia, joint_diag):
        """W' (nv, nv): M̃⁻¹ restricted to velocities that keep the closures' G v (and the held rows')."""
        model = self.model
        W = minv(model, q, inertia=inertia, joint_diag=joint_diag, ws=self.ws)  # the stage's own workspace
        held = getattr(self, "_held", None)
        if self._closures is None and held is None:
            return W
        G = np.zeros((0, model.nv))
        if self._closures is not None:
            ws = self.ws
            joint_pass(model.tree, q, ws)
            world_pass(model.tree, ws)
            bodies, rows, _ = constraint_rows(self._closures, ws)
            G = np.empty((len(rows), model.nv))
            constraint_jacobian(model.tree, ws, bodies, rows, np.empty((model.n_bodies, 6)), G)
        if held is not None:
            G = np.vstack([G, held])
        WG = W @ G.T
        return W - WG @ np.linalg.pinv(G @ WG, rcond=1e-12, hermitian=True) @ WG.T

    def _solve_active(self, v, W, gap, bend, coef, idx, rate, arrival, near, finite):
        """(v⁺, active rows, their λ, near) for one-sided rows with gaps ``gap`` (and ``bend``, ``_targets``):
        PGS on the rows ``near``, adding any row v⁺ would pass and solving again (at most every bound once)."""
        for _ in range(len(gap)):
            act = np.flatnonzero(near)
            L = self._dense_rows(coef[act], idx[act])
            WLt = W @ L.T
            A = L @ WLt
            A = 0.5 * (A + A.T)
            target = self._targets(gap[act], rate[act], arrival[act], bend[act])
            lam = np.zeros(len(act))
            u = rate[act].copy()
            # one-sided rows: λ ≥ 0, u = u_free + A λ ≥ target, complementary (the contact PGS, one row a block)
            self.last_sweeps = pgs_kernel(A, u, target, NO_FRICTION, lam, self.max_iter, self.tol, 0.0, 1)
            v_new = v + WLt @ lam
            passed = finite & ~near & (gap + bend + self.dt * (coef * v_new[idx]).sum(axis=1) < 0.0)
            if not passed.any():
                break
            near = near | passed
        return v_new, act, lam, near

    def bend_again(self, q, v_new, gap, coef, idx, rows, bend):
        """(the new ``_bend``, whether it moved by at most a tenth of the slop: the Euler passes are done)."""
        new_bend = self._bend(q, v_new, gap, coef, idx, rows)
        return new_bend, bool(np.abs(new_bend - bend).max() <= 0.1 * self.slop)

    def _bend(self, q, v_new, gap, coef, idx, rows):
        """(2m,) for the one-sided ``rows`` (Euler angles): each gap after the step, at q ⊕ h v⁺ (the
        steppers' integration), minus its linear prediction gap + h·rate(v⁺): the curvature the rows leave
        out. 0 elsewhere, and where it exceeds ``EULER_BEND_MAX`` (the other decomposition or the gimbal:
        a jump of the angles, not a bend)."""
        x, _ = self.coordinates(integrate(self.model, q, v_new, self.dt))
        after = np.concatenate([x - self.lower, self.upper - x])
        bend = np.zeros_like(gap)
        bend[rows] = after[rows] - gap[rows] - self.dt * (coef[rows] * v_new[idx[rows]]).sum(axis=1)
        bend[np.abs(bend) > EULER_BEND_MAX] = 0.0
        return bend

    def one_sided(self, q, v):
        """(coef (2m, 3), idx (2m, 3), gap (2m,), finite, rate, near (2m,) bool, arrival (2m,)): both sides of
        every bound as one-sided rows s·(row · v) ≥ target, s = ±1 (lower, then upper), at q (nq,) with rates of
        v (nv,); ``near``: the bounds within ``margin`` of being reached this step."""
        x, (coef, idx) = self.coordinates(q)
        coef = np.concatenate([coef, -coef])
        idx = np.concatenate([idx, idx])
        gap = np.concatenate([x - self.lower, self.upper - x])
        finite = np.isfinite(gap)
        rate = (coef * v[idx]).sum(axis=1)
        near = finite & (gap + self.dt * np.minimum(rate, 0.0) < self.margin)
        arrival = self._arrival if self._arrival is not None and self._arrival.shape == rate.shape else rate
        return coef, idx, gap, finite, rate, near, arrival

    def record(self, coef, idx, v_new, act, lam) -> None:
        """Keep a step's outcome: the rates it ends with (the next step's arrival), its active rows and impulses."""
        self._arrival = (coef * v_new[idx]).sum(axis=1)
        n = len(self.dof)
        self.last_active = np.where(act < n, act, -1 - (act - n))
        self.last_impulses = lam

    def apply(self, q, v, inertia=None, joint_diag=None):
        """v⁺ (nv,) from the step's end velocity v* (nv,) at configuration q (nq,)."""
        if len(self.dof) == 0:
            return v
        coef, idx, gap, finite, rate, near, arrival = self.one_sided(q, v)
        self.last_active, self.last_impulses, self.last_sweeps = np.zeros(0, np.int64), np.zeros(0), 0
        if not near.any():
            self._arrival = rate
            return v
        W = self._response(q, inertia, joint_diag)
        euler = np.concatenate([self._order, self._order]) > 0
        bend = np.zeros_like(gap)
        for _ in range(EULER_BEND_PASSES if euler.any() else 1):
            v_new, act, lam, near = self._solve_active(v, W, gap, bend, coef, idx, rate, arrival, near, finite)
            if not euler[near].any():
                break
            bend, done = self.bend_again(q, v_new, gap, coef, idx, euler & finite, bend)
            if done:
                break
        self.record(coef, idx, v_new, act, lam)
        return v_new


def check_enforce_limits(enforce) -> bool:
    """The Simulator option ``enforce_limits`` checked: True or False."""
    if not isinstance(enforce, (bool, np.bool_)):
        raise SimulatorOptionError(f"Simulator option 'enforce_limits' must be True or False, got {enforce!r}")
    return bool(enforce)


def limit_stage(scene, dt: float, options: dict | None) -> JointLimits | None:
    """The joint-limit stage of a reduced-coordinate stepper: a ``JointLimits`` when ``options`` is
    not None (limits enforced; the dict holds its keywords) and the scene has finite bounds, else None."""
    if options is None or not JointLimits.needed(scene.model):
        return None
    return JointLimits(scene, dt, **options)


def refuse_limits(scene, options: dict | None, solver: str) -> None:
    """For steppers without a limit stage: SimulatorOptionError when limits are enforced
    (``options`` not None) and the scene has them, naming the limited joints."""
    model = scene.model
    if options is None or not JointLimits.needed(model):
        return
    named = [n for j, n in enumerate(model.joint_names) if _has_bounds(model, j)]
    joints = ", ".join(repr(n) for n in named[:5]) + (" …" if len(named) > 5 else "")
    raise SimulatorOptionError(f"the '{solver}' solver does not enforce joint limits, and scene "
                               f"'{scene.name}' has them (joints {joints}); use 'pcg', 'direct', 'dense' or "
                               "'explicit', or pass enforce_limits=False to ignore them")


def _has_bounds(model, j):
    s = slice(model.v_start[j], model.v_start[j] + model.joint_nv[j])
    return bool(np.isfinite(model.joint_lower[s]).any() or np.isfinite(model.joint_upper[s]).any())
