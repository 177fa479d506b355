"""Hard articulation constraints in maximal coordinates (seed 003: Tomcin, Sibbing & Kobbelt 2014).

Every body keeps its own pose (COM x, orientation R of its principal axes) and
velocity (v, ω in world coordinates); joints, loop closures and motors are
constraint rows C(x, R, t) = 0 enforced *exactly* (to a tolerance) by impulses.
One step of length h (Appendix A, the restructured velocity-Verlet, Eq. 9–13):

1. **external impulses**: v₊ = v₋ + h a, ω₊ = ω₋ + h I⁻¹ τ (gravity; τ = 0 here);
   then the velocities are projected onto the joints' velocity constraints
   J v₊ = ċ (motors' rates) and ground contacts are resolved one at a time;
2. **positions**: x' = x + h v₊, q' = q(h ω₊ − h²/2 I⁻¹(ω₊ × I ω₊)) ∘ q (Eq. 13 with
   ω₊ in place of ω, as the appendix chooses for strong rotational motors) —
   repeated inside the **joint correction**: while max |C(x', R')| > tol, solve
   (J M⁻¹ Jᵀ) Δλ = −C / h and add the impulses M⁻¹ Jᵀ Δλ to v₊, ω₊ (a chord Newton
   iteration on the impulses: the matrix factored at the step's start serves every
   iteration — one forward and back substitution each — and is refactored at the
   current positions only when the error stops shrinking fourfold per iteration);
3. **end-of-step velocities**: v₋' = v₊, ω₋' = ω₊ + h/2 (σ*(ω) + σ*(ω₋')) with the
   torque-free gyroscopic acceleration σ* = −I⁻¹(ω × I ω), ω₋' found by Newton's
   method; finally J v = ċ again (velocity constraints).

``integrator="symplectic"`` replaces 1–3 by symplectic Euler: ω' = ω + h I⁻¹(τ − ω × I ω)
(explicit gyroscopic term), q' = exp(h ω') q, with the same joint correction and
projections; the bench compares their largest stable steps.

The constraint matrix J M⁻¹ Jᵀ is factored by the project's sparse LDLᵀ (one
symbolic analysis per pattern, reverse Cuthill–McKee order). A planar loop closed
by a 3D hinge is over-constrained: the tree's hinges already keep the two bodies
in the plane, so 3 of the closure's 5 rows repeat others and J M⁻¹ Jᵀ is singular.
Such closures (every joint on both tree paths to their common ancestor a hinge
parallel to the closure's axis) become *pins*: the 2 in-plane point rows only.
A 1e-12 relative regularization of the diagonal guards against round-off.

Contacts (``scene.set_ground``): after step 1, each penetrating or approaching
contact in turn gets an impulse that stops its normal approach (inelastic) and,
within the friction cone, its sliding, while the joints keep their velocities:
the 3 contact rows are appended to the factored joint system with Appendix C
(``factor_augment``), symmetric for sticking, asymmetric (λ_t = −μ λ_n ŝ) for
sliding. A few sweeps over the contacts make them consistent.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse
import scipy.sparse.csgraph

from ..stages.joint_limits import refuse_limits
from ..stages.prescribed import refuse_drives
from ...algorithms.kinematics import link_poses
from ...contact.shapes import candidate_points, colliding_bodies, ground_contacts
from ...contact.jacobian import tangent_basis
from ...energy import energy
from ...errors import ModelError, SimulationError
from ...joints import JOINT_FLOATS, JOINT_FREE_ROTATIONS, JOINT_FREE_TRANSLATIONS, JOINT_TYPE_NAMES
from ...maximal.state import body_poses, com_state, link_poses_of, reduced_from_com
from ...model import State
from ...spatial import rotation_exp, skew
from ...stepper import StepStats
from ..linalg.factor_augment import LDLFactor
from ..linalg.sparse_ldl import SparseLDL

INTEGRATORS = ("verlet", "symplectic")
BALL, HINGE, WELD, MOTOR, PIN = "ball", "hinge", "weld", "motor", "pin"


def row_kind(jtype: int) -> str | None:
    """The constraint kind of a joint (or closure) type by what it frees: nothing → WELD, one rotation → HINGE,
    three rotations → BALL; None for what this solver has no rows for (sliders, universal joints)."""
    if JOINT_FREE_TRANSLATIONS[jtype] != 0:
        return None
    return {0: WELD, 1: HINGE, 3: BALL}.get(int(JOINT_FREE_ROTATIONS[jtype]))
ROWS = {BALL: 3, HINGE: 5, WELD: 6, MOTOR: 1, PIN: 2}
REGULARIZATION = 1e-12


# ------------------------------------------------------------------ rotations
def _orthonormalize(R):
    U, _, Vt = np.linalg.svd(R)
    return U @ Vt


# ------------------------------------------------------------------ constraints
@dataclass
class Constraint:
    """One joint, loop closure or motor between body a and body b (−1: the world).
    Anchors and axes in the bodies' principal frames (the world's for −1)."""

    name: str
    kind: str
    a: int
    b: int
    ra: np.ndarray
    rb: np.ndarray
    axis_a: np.ndarray = None  # hinge axis / motor axis in a
    axis_b: np.ndarray = None  # the same axis in b
    rel: np.ndarray = None     # weld: R_aᵀ R_b at rest
    ref_a: np.ndarray = None   # motor: a vector ⊥ axis, in a and in b (equal at t = 0)
    ref_b: np.ndarray = None
    angle0: float = 0.0        # motor: angle at t = 0 …
    rate: float = 0.0          # … and its rate (rad/s)

    @property
    def n_rows(self) -> int:
        return ROWS[self.kind]


def _perpendiculars(axis):
    seed = np.array([1.0, 0, 0]) if abs(axis[0]) < 0.9 else np.array([0, 1.0, 0])
    t1 = np.cross(axis, seed)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(axis, t1)


@dataclass
class Bodies:
    """Rigid bodies at their COM on principal axes: mass (n,), principal inertia (n, 3)."""

    mass: np.ndarray
    inertia: np.ndarray

    def inverse_inertia(self, R):
        """World I⁻¹ (n, 3, 3) at orientations R."""
        return np.einsum("nij,nj,nkj->nik", R, 1.0 / self.inertia, R)

    def inertia_world(self, R):
        return np.einsum("nij,nj,nkj->nik", R, self.inertia, R)


class HardConstraintSystem:
    """Bodies and constraints of a scene (tree joints → constraints, loop closures, motors)."""

    def __init__(self, scene, motors=()):
        model = scene.model
        self.model, self.scene = model, scene
        n = model.n_bodies
        self.bodies = Bodies(np.array(model.body_mass, float), np.array(model.body_principal_inertia, float))
        if np.any(self.bodies.mass <= 0):
            bad = model.body_names[int(np.flatnonzero(self.bodies.mass <= 0)[0])]
            raise ModelError(f"hard-constraints: body '{bad}' has no mass (fixed bodies must be welded to a parent)")
        Rb, com = np.array(model.body_rotation), np.array(model.body_com)

        def body_point(i, r_link):  # link-frame point → body frame (the world's stays)
            return np.asarray(r_link, float) if i < 0 else Rb[i].T @ (np.asarray(r_link, float) - com[i])

        def body_axis(i, a_link):
            a = np.asarray(a_link, float) / np.linalg.norm(a_link)
            return a if i < 0 else Rb[i].T @ a

        def link_rotation_to_body(i):
            return np.eye(3) if i < 0 else Rb[i]

        self.constraints: list[Constraint] = []
        for i in range(n):
            jt, p, name = int(model.joint_type[i]), int(model.body_parent[i]), model.joint_names[i]
            if JOINT_FLOATS[jt]:
                continue
            kind = row_kind(jt)
            if kind is None:
                raise ModelError(f"hard-constraints: joint '{name}' is {JOINT_TYPE_NAMES[jt]}; this solver takes "
                                 "fixed, revolute, spherical and free joints")
            ra, rb = body_point(p, model.joint_origin[i]), body_point(i, np.zeros(3))
            if kind == BALL:
                self.constraints.append(Constraint(name, BALL, p, i, ra, rb))
            elif kind == HINGE:
                ax = model.joint_axis[i]
                self.constraints.append(Constraint(name, HINGE, p, i, ra, rb, body_axis(p, model.joint_rotation[i] @ ax),
                                                   body_axis(i, ax)))
            else:  # fixed: child link frame = the parent-side joint frame
                rel = link_rotation_to_body(p).T @ model.joint_rotation[i] @ link_rotation_to_body(i)
                self.constraints.append(Constraint(name, WELD, p, i, ra, rb, rel=rel))
        for lc in scene.loop_closures:
            if row_kind(lc.joint_type) is None:
                raise ModelError(f"hard-constraints: loop closure '{lc.name}' is a {lc.kind}; this solver takes "
                                 "point, hinge and fixed closures")
            a, b = lc.body_a, lc.body_b
            ra, rb = body_point(a, lc.point_a), body_point(b, lc.point_b)
            axis_in_b = lc.rest_rotation.T @ lc.axis_a  # the hinge axis in b's link frame
            rel = link_rotation_to_body(a).T @ lc.rest_rotation @ link_rotation_to_body(b)
            kind = row_kind(lc.joint_type)
            if kind == HINGE and self._planar_loop(a, b, lc.axis_a):
                kind = PIN
            self.constraints.append(Constraint(lc.name, kind, a, b, ra, rb, body_axis(a, lc.axis_a),
                                               body_axis(b, axis_in_b), rel=rel))
        for joint, rate in motors:
            self.add_motor(joint, rate)
        self._pattern = None

    def _planar_loop(self, a: int, b: int, axis_link_a) -> bool:
        """True if every joint between bodies a and b along the tree is a hinge parallel to the closure's
        axis (given in a's link frame), at the initial configuration."""
        model = self.model
        R_l, _ = self.initial_poses()
        axis = (np.eye(3) if a < 0 else R_l[a]) @ np.asarray(axis_link_a, float)
        axis /= np.linalg.norm(axis)

        def path(i):
            out = []
            while i >= 0:
                out.append(i)
                i = int(model.body_parent[i])
            return out

        pa, pb = path(a), path(b)
        common = set(pa) & set(pb)
        for i in [i for i in pa + pb if i not in common]:
            if row_kind(int(model.joint_type[i])) != HINGE:
                return False
            p = int(model.body_parent[i])
            joint_axis = (np.eye(3) if p < 0 else R_l[p]) @ model.joint_rotation[i] @ model.joint_axis[i]
            if np.linalg.norm(np.cross(joint_axis, axis)) > 1e-9:
                return False
        return True

    def add_motor(self, joint: str, rate: float) -> Constraint:
        """Drive the revolute joint ``joint`` at ``rate`` rad/s exactly (a rheonomic constraint)."""
        hinge = next((c for c in self.constraints if c.name == joint), None)
        if hinge is None:
            raise ModelError(f"motor: no joint named '{joint}'")
        if hinge.kind != HINGE:
            raise ModelError(f"motor: joint '{joint}' is a {hinge.kind}; motors drive hinges")
        if not np.isfinite(rate):
            raise ModelError(f"motor on '{joint}': rate must be finite, got {rate}")
        R, _ = self.body_poses(*self.initial_poses())
        ref_a = _perpendiculars(hinge.axis_a)[0]
        Ra = np.eye(3) if hinge.a < 0 else R[hinge.a]
        Rbb = np.eye(3) if hinge.b < 0 else R[hinge.b]
        ref_b = Rbb.T @ (Ra @ ref_a)
        motor = Constraint(f"{joint} motor", MOTOR, hinge.a, hinge.b, hinge.ra, hinge.rb, hinge.axis_a, hinge.axis_b,
                           ref_a=ref_a, ref_b=ref_b, rate=float(rate))
        self.constraints.append(motor)
        self._pattern = None
        return motor

    # --------------------------------------------------------------- state
    def initial_poses(self):
        return link_poses(self.model, self.scene.q0)

    def body_poses(self, R_link, p_link):
        """(R (n, 3, 3), x (n, 3)) of the bodies' principal frames from link poses."""
        return body_poses(self.model, R_link, p_link)

    def link_poses_of(self, R, x):
        return link_poses_of(self.model, R, x)

    @property
    def n_rows(self) -> int:
        return sum(c.n_rows for c in self.constraints)

    # --------------------------------------------------------------- rows
    def _compile(self):
        """Per kind: index arrays and body-frame vectors, and each constraint's first row."""
        starts = np.cumsum([0] + [c.n_rows for c in self.constraints])[:-1]
        groups = {}
        for kind in (BALL, HINGE, WELD, MOTOR, PIN):
            idx = [k for k, c in enumerate(self.constraints) if c.kind == kind]
            cs = [self.constraints[k] for k in idx]
            g = {"row": starts[idx].astype(np.int64), "a": np.array([c.a for c in cs], np.int64),
                 "b": np.array([c.b for c in cs], np.int64), "ra": np.array([c.ra for c in cs]).reshape(-1, 3),
                 "rb": np.array([c.rb for c in cs]).reshape(-1, 3)}
            if kind in (HINGE, MOTOR, PIN):
                g["axis_a"] = np.array([c.axis_a for c in cs]).reshape(-1, 3)
                g["axis_b"] = np.array([c.axis_b for c in cs]).reshape(-1, 3)
                g["t"] = np.array([_perpendiculars(c.axis_a) for c in cs]).reshape(-1, 2, 3)
            if kind == WELD:
                g["rel"] = np.array([c.rel for c in cs]).reshape(-1, 3, 3)
            if kind == MOTOR:
                g["ref_a"] = np.array([c.ref_a for c in cs]).reshape(-1, 3)
                g["ref_b"] = np.array([c.ref_b for c in cs]).reshape(-1, 3)
                g["rate"] = np.array([c.rate for c in cs])
            groups[kind] = g
        self._groups = groups
        self._compiled = len(self.constraints)

    def rows(self, R, x, t: float):
        """C (m,) position errors and J (m, 6n) rows (columns [v; ω] per body, world) at poses R, x.
        Vectorized per constraint kind; the world is body −1 (identity pose, no columns)."""
        if getattr(self, "_compiled", None) != len(self.constraints):
            self._compile()
        n = self.model.n_bodies
        Rw = np.concatenate([R, np.eye(3)[None]])   # index −1 → the world
        xw = np.concatenate([x, np.zeros((1, 3))])
        C = np.empty(self.n_rows)
        ri, ci, vals = [], [], []

        def put(rows, body, lin, ang):  # rows (k,), lin/ang (k, 3) on each row's body (−1: skipped)
            keep = body >= 0
            if not np.any(keep):
                return
            rows, body, block = rows[keep], body[keep], np.concatenate([lin[keep], ang[keep]], axis=1)
            ri.append(np.repeat(rows, 6))
            ci.append((6 * body[:, None] + np.arange(6)).ravel())
            vals.append(block.ravel())

        def anchors(g):  # world anchor offsets, their gap (x_a + w_a) − (x_b + w_b), and [w_a]×, [w_b]×
            wa = np.einsum("kij,kj->ki", Rw[g["a"]], g["ra"])
            wb = np.einsum("kij,kj->ki", Rw[g["b"]], g["rb"])
            return (xw[g["a"]] + wa) - (xw[g["b"]] + wb), skew(wa), skew(wb)

        zeros = np.zeros
        for kind in (BALL, HINGE, WELD):  # the point rows
            g = self._groups[kind]
            if not g["row"].size:
                continue
            a, b = g["a"], g["b"]
            err, Sa, Sb = anchors(g)
            for d in range(3):
                r = g["row"] + d
                C[r] = err[:, d]
                e = np.zeros((len(a), 3))
                e[:, d] = 1.0
                put(r, a, e, -Sa[:, d, :])
                put(r, b, -e, Sb[:, d, :])
        g = self._groups[PIN]
        if g["row"].size:  # the point rows along the two in-plane directions t₁, t₂ (fixed in a)
            a, b = g["a"], g["b"]
            err, Sa, Sb = anchors(g)
            for d in range(2):
                e = np.einsum("kij,kj->ki", Rw[a], g["t"][:, d])
                r = g["row"] + d
                C[r] = np.einsum("ki,ki->k", e, err)
                # d/dt e·err = e·(v_a − [wa]×ω_a − v_b + [wb]×ω_b) + (ω_a × e)·err; the last term vanishes on C = 0
                put(r, a, e, -np.einsum("ki,kij->kj", e, Sa) + np.cross(e, err))
                put(r, b, -e, np.einsum("ki,kij->kj", e, Sb))
        g = self._groups[HINGE]
        if g["row"].size:
            a, b = g["a"], g["b"]
            ab = np.einsum("kij,kj->ki", Rw[b], g["axis_b"])
            for d in range(2):
                tw = np.einsum("kij,kj->ki", Rw[a], g["t"][:, d])
                gd = np.cross(tw, ab)
                r = g["row"] + 3 + d
                C[r] = np.einsum("ki,ki->k", tw, ab)
                put(r, a, zeros((len(a), 3)), gd)
                put(r, b, zeros((len(a), 3)), -gd)
        g = self._groups[WELD]
        if g["row"].size:
            a, b = g["a"], g["b"]
            U, W = Rw[a] @ g["rel"], Rw[b]
            err = 0.5 * np.cross(np.swapaxes(U, 1, 2), np.swapaxes(W, 1, 2)).sum(axis=1)
            for d in range(3):
                r = g["row"] + 3 + d
                C[r] = err[:, d]
                e = np.zeros((len(a), 3))
                e[:, d] = 1.0
                put(r, a, zeros((len(a), 3)), -e)
                put(r, b, zeros((len(a), 3)), e)
        g = self._groups[MOTOR]
        if g["row"].size:
            a, b = g["a"], g["b"]
            axis = np.einsum("kij,kj->ki", Rw[a], g["axis_a"])
            ua = np.einsum("kij,kj->ki", Rw[a], g["ref_a"])
            ub = np.einsum("kij,kj->ki", Rw[b], g["ref_b"])
            angle = np.arctan2(np.einsum("ki,ki->k", np.cross(ua, ub), axis), np.einsum("ki,ki->k", ua, ub))
            C[g["row"]] = (angle - g["rate"] * t + np.pi) % (2 * np.pi) - np.pi
            put(g["row"], a, zeros((len(a), 3)), -axis)
            put(g["row"], b, zeros((len(a), 3)), axis)
        if not vals:  # free bodies only: nothing to enforce
            return C, scipy.sparse.csr_matrix((self.n_rows, 6 * n))
        J = scipy.sparse.csr_matrix((np.concatenate(vals), (np.concatenate(ri), np.concatenate(ci))),
                                    shape=(self.n_rows, 6 * n))
        return C, J

    def rates(self) -> np.ndarray:
        """ċ (m,): the velocity the rows must have (the motors' rates, else 0)."""
        out = np.zeros(self.n_rows)
        row = 0
        for c in self.constraints:
            if c.kind == MOTOR:
                out[row] = c.rate
            row += c.n_rows
        return out

    def inverse_mass(self, R):
        """M⁻¹ (6n × 6n) sparse, blocks [1/m I, I_world⁻¹] per body."""
        n = self.model.n_bodies
        blocks = np.zeros((n, 6, 6))
        blocks[:, :3, :3] = np.eye(3) / self.bodies.mass[:, None, None]
        blocks[:, 3:, 3:] = self.bodies.inverse_inertia(R)
        return scipy.sparse.bsr_matrix((blocks, np.arange(n), np.arange(n + 1)), shape=(6 * n, 6 * n)).tocsr()

    def factor(self, J, Minv) -> LDLFactor:
        """LDLᵀ of J M⁻¹ Jᵀ (+ the redundancy regularization), symbolic analysis reused per pattern."""
        if J.shape[0] == 0:  # free bodies only
            return LDLFactor.factor(np.zeros((0, 0)))
        A = scipy.sparse.csc_matrix(J @ Minv @ J.T)
        A = A + scipy.sparse.diags(REGULARIZATION * np.maximum(A.diagonal(), 1e-300))
        A = scipy.sparse.csc_matrix(A)
        A.sort_indices()
        key = (A.shape, A.indptr.tobytes(), A.indices.tobytes())
        if self._pattern is None or self._pattern[0] != key:
            perm = scipy.sparse.csgraph.reverse_cuthill_mckee(A, symmetric_mode=True)
            self._pattern = (key, SparseLDL(A.indptr, A.indices, A.shape[0], perm))
        ldl = self._pattern[1]
        ldl.factor(A.data)
        return LDLFactor.from_sparse(ldl)


# ------------------------------------------------------------------ stepper
class HardConstraintStepper:
    """``Simulator(scene, "hard-constraints", dt, integrator=…, tol=…, max_iter=…)`` (``engine.stepper``
    contract); reduced (q, q̇) in and out, bodies in maximal coordinates inside. Ground contact is its
    own (Appendix C, inside the step), so the shared ``contact`` options do not apply."""

    divergence_hint = "try a smaller dt"
    contact = None

    def __init__(self, scene, dt: float, *, integrator: str = "verlet", tol: float = 1e-9, max_iter: int = 30,
                 motors=(), contact_sweeps: int = 3, contact=None, limits=None):
        refuse_drives(scene, "hard-constraints")  # no prescribed-joint, motor, breaking or field stages here
        refuse_limits(scene, limits, "hard-constraints")  # no limit stage here
        if integrator not in INTEGRATORS:
            raise ValueError(f"unknown integrator {integrator!r}; expected one of {', '.join(INTEGRATORS)}")
        extras = [e for e, present in (("springs/cables", len(scene.pairs)), ("point forces", len(scene.point_forces)),
                                       ("moving loads", len(scene.moving_loads)),
                                       ("joint springs", np.any(scene.joint_stiffness) or np.any(scene.joint_damping)),
                                       ("body damping", np.any(scene.body_damping))) if present]
        if extras:
            raise ValueError(f"solver 'hard-constraints' simulates gravity, joints, loop closures, motors and ground "
                             f"contact; scene '{scene.name}' also has {', '.join(extras)} — use 'pcg'")
        self.scene, self.model = scene, scene.model
        self.dt, self.integrator, self.tol, self.max_iter = float(dt), integrator, float(tol), int(max_iter)
        self.system = HardConstraintSystem(scene, list(motors) + list(scene.metadata.get("motors", ())))
        self.gravity = np.array(self.model.gravity, float)
        self.contact_sweeps = int(contact_sweeps)
        self._points = (candidate_points(colliding_bodies(self.model, scene.contact_bodies))
                        if scene.ground is not None else None)
        self._state = None  # (R, x, v, w) in maximal coordinates, and the (q, q̇) it was returned as
        self.stats = StepStats()
        self.seconds = {"correction": 0.0, "contact": 0.0}

    # --------------------------------------------------------------- conversions
    def maximal(self, q, qd):
        return com_state(self.model, q, qd)

    def reduced(self, R, x, v, w):
        return reduced_from_com(self.model, R, x, v, w)

    # --------------------------------------------------------------- the step
    def step(self, state, control):
        q, qd, t = state.q, state.qd, state.t
        if self._state is not None and np.array_equal(q, self._state[1]) and np.array_equal(qd, self._state[2]):
            R, x, v, w = self._state[0]
        else:
            R, x, v, w = self.maximal(q, qd)
        R, x, v, w = self.advance(R, x, v, w, t)
        q_new, qd_new = self.reduced(R, x, v, w)
        self._state = ((R, x, v, w), q_new, qd_new)
        return State(q_new, qd_new, t + self.dt)

    def energy(self, state, control) -> float:
        """Kinetic + gravitational energy (J): the solver takes no other forces."""
        return energy(self.model, state.q, state.qd)

    def advance(self, R, x, v, w, t):
        """One step from (R, x, v₋, ω₋) at time t; returns the state at t + h."""
        h, sys, bodies = self.dt, self.system, self.system.bodies
        # 1. external impulses (gravity; torques are zero), and the symplectic variant's gyroscope
        v_p = v + h * self.gravity
        if self.integrator == "symplectic":
            I = bodies.inertia_world(R)
            w_p = w - h * np.einsum("nij,nj->ni", bodies.inverse_inertia(R), np.cross(w, np.einsum("nij,nj->ni", I, w)))
        else:
            w_p = w.copy()
        C, J = sys.rows(R, x, t)
        Minv = sys.inverse_mass(R)
        factor = sys.factor(J, Minv)
        u = self._project(J, Minv, factor, np.hstack([v_p, w_p]).reshape(-1), sys.rates())
        if self._points is not None:
            t0 = time.perf_counter()
            u = self._contacts(R, x, J, Minv, factor, u)
            self.seconds["contact"] += time.perf_counter() - t0
        v_p, w_p = u.reshape(-1, 6)[:, :3].copy(), u.reshape(-1, 6)[:, 3:].copy()
        # 2. positions, with the joint correction: the step's factor of J M⁻¹ Jᵀ is reused by every
        # iteration (a chord Newton method: one factorization per step, one solve per iteration)
        t0 = time.perf_counter()
        I = bodies.inertia_world(R)
        Iinv = bodies.inverse_inertia(R)
        its, err, previous = 0, np.inf, np.inf
        for its in range(1, self.max_iter + 1):
            R1, x1 = self._drift(R, x, v_p, w_p, I, Iinv)
            C, J1 = sys.rows(R1, x1, t + h)
            err = float(np.abs(C).max(initial=0.0))
            if err <= self.tol:
                break
            if err > 0.25 * previous:  # the chord iteration stalls: refactor where we are (full Newton step)
                J, Minv = J1, sys.inverse_mass(R1)
                factor = sys.factor(J, Minv)
            previous = err
            du = (Minv @ (J.T @ factor.solve(-C / h))).reshape(-1, 6)
            v_p, w_p = v_p + du[:, :3], w_p + du[:, 3:]
        else:
            raise SimulationError(f"hard-constraints: the joint correction did not converge at t = {t + h:.4f} s "
                                  f"(largest error {err:.3g} after {self.max_iter} iterations); try a smaller dt")
        self.seconds["correction"] += time.perf_counter() - t0
        # 3. end-of-step velocities, then J v = ċ at the new positions (refined with the same factor)
        w_end = self._gyroscopic(R, R1, w, w_p) if self.integrator == "verlet" else w_p
        u = np.hstack([v_p, w_end]).reshape(-1)
        Minv1 = sys.inverse_mass(R1)
        factor1 = sys.factor(J1, Minv1)
        rates = sys.rates()
        for _ in range(3):  # one solve, then iterative refinement against round-off
            residual = rates - J1 @ u
            if np.abs(residual).max(initial=0.0) <= 1e-12 * max(1.0, np.abs(u).max(initial=0.0)):
                break
            u = u + Minv1 @ (J1.T @ factor1.solve(residual))
        self.stats = StepStats(its, its, 1, self._linear_error(C))
        return R1, x1, u.reshape(-1, 6)[:, :3].copy(), u.reshape(-1, 6)[:, 3:].copy()

    def _linear_error(self, C) -> float:
        """Largest positional row error (m) of C (the point rows of balls, hinges and welds)."""
        out, row = 0.0, 0
        for c in self.system.constraints:
            if c.kind in (BALL, HINGE, WELD, PIN):
                out = max(out, float(np.abs(C[row:row + ROWS[PIN] if c.kind == PIN else row + 3]).max()))
            row += c.n_rows
        return out

    def _drift(self, R, x, v, w, I, Iinv):
        """Step 2 (Eq. 13): x + h v₊ and q(h ω₊ − h²/2 I⁻¹(ω₊ × I ω₊)) ∘ q; symplectic: exp(h ω) R."""
        h = self.dt
        rot = h * w
        if self.integrator == "verlet":
            rot = rot - 0.5 * h * h * np.einsum("nij,nj->ni", Iinv, np.cross(w, np.einsum("nij,nj->ni", I, w)))
        return _orthonormalize(rotation_exp(rot) @ R), x + h * v

    def _gyroscopic(self, R0, R1, w0, w_p):
        """ω₋' = ω₊ + h/2 (σ*(ω₀) + σ*(ω₋')), σ* = −I⁻¹(ω × I ω), by Newton's method (Appendix A)."""
        h, bodies = self.dt, self.system.bodies
        I0, I1, I1inv = bodies.inertia_world(R0), bodies.inertia_world(R1), bodies.inverse_inertia(R1)

        def sigma(Iw, Iinv, w):
            return -np.einsum("nij,nj->ni", Iinv, np.cross(w, np.einsum("nij,nj->ni", Iw, w)))

        base = w_p + 0.5 * h * sigma(I0, bodies.inverse_inertia(R0), w0)
        w = base.copy()
        for _ in range(10):
            F = w - base - 0.5 * h * sigma(I1, I1inv, w)
            if np.abs(F).max(initial=0.0) < 1e-14 * max(1.0, np.abs(w).max(initial=0.0)):
                break
            Iw = np.einsum("nij,nj->ni", I1, w)
            dsigma = -I1inv @ (skew(w) @ I1 - skew(Iw))  # ∂σ*/∂ω
            Jn = np.eye(3) - 0.5 * h * dsigma
            w = w - np.linalg.solve(Jn, F[..., None])[..., 0]
        return w

    @staticmethod
    def _project(J, Minv, factor, u, rates):
        """u + M⁻¹Jᵀμ with (J M⁻¹ Jᵀ) μ = ċ − J u: the velocity constraints hold."""
        mu = factor.solve(rates - J @ u)
        return u + Minv @ (J.T @ mu)

    # --------------------------------------------------------------- contact
    def _contacts(self, R, x, J, Minv, factor, u):
        """Ground contacts one at a time on the factored joint system (Appendix C); returns new u."""
        h, sys = self.dt, self.system
        R_l, p_l = sys.link_poses_of(R, x)
        found = ground_contacts(self.model, R_l, p_l, self.scene.ground, 0.02, points=self._points)
        if len(found) == 0:
            return u
        n6 = u.shape[0]
        tangents = tangent_basis(found.normal)
        rows = []
        for c in range(len(found)):
            b, r = int(found.body[c]), found.point[c] - x[found.body[c]]
            Jc = np.zeros((3, n6))
            for k, d in enumerate((found.normal[c], tangents[c, 0], tangents[c, 1])):
                Jc[k, 6 * b:6 * b + 3] = d
                Jc[k, 6 * b + 3:6 * b + 6] = np.cross(r, d)
            rows.append(Jc)
        JMinv = J @ Minv
        for _ in range(self.contact_sweeps):
            for c in range(len(found)):
                Jc = rows[c]
                uc = Jc @ u
                depth = found.depth[c]
                target = depth / h if depth < 0 else 0.2 * max(depth - 2e-4, 0.0) / h
                if uc[0] >= target - 1e-12:
                    continue  # not approaching: no impulse
                A12 = np.asarray(JMinv @ Jc.T)          # J M⁻¹ J_cᵀ (joint rows × 3)
                A22 = Jc @ (Minv @ Jc.T)
                b2 = np.array([target - uc[0], -uc[1], -uc[2]])
                lam_j, lam_c = factor.augment(A12, A12.T, A22).solve(np.zeros(J.shape[0]), b2)  # sticking
                mu = found.friction[c]
                if np.hypot(lam_c[1], lam_c[2]) > mu * lam_c[0]:  # sliding: λ_t = −μ λ_n ŝ (asymmetric rows)
                    slip = uc[1:] / max(np.linalg.norm(uc[1:]), 1e-12)
                    A21 = np.vstack([A12.T[0], np.zeros((2, J.shape[0]))])
                    A22s = np.array([A22[0], [mu * slip[0], 1.0, 0.0], [mu * slip[1], 0.0, 1.0]])
                    lam_j, lam_c = factor.augment(A12, A21, A22s).solve(np.zeros(J.shape[0]),
                                                                        np.array([target - uc[0], 0.0, 0.0]))
                if lam_c[0] <= 0.0:
                    continue
                u = u + Minv @ (J.T @ lam_j + Jc.T @ lam_c)
        return u
