"""Baraff's linear-time Lagrange-multiplier dynamics in maximal coordinates (seed 002; Baraff 1996).

Each body keeps its own pose and twist; joints become *primary* constraints
J φ̇ = rhs (``maximal_rows``) and the accelerations and multipliers solve

    H [φ̇; −λ] = [f; rhs],   H = [[M, Jᵀ], [J, 0]]                       (seed 002, Sec. 3)

with M the bodies' (constant, link-frame) spatial inertias and f gravity and
gyroscopic forces. Three solvers of this system (``METHODS``):

* ``"sparse"`` — H ordered children-before-parents along the constraint tree
  and factored by block LDLᵀ without fill-in, O(n) (Sec. 3.1, 3.3; ``tree_ldl``);
* ``"dense"``  — the same H, all constraints included, by a dense symmetric
  factorization (LAPACK ``sytrf``), O(n³) (Sec. 3.2);
* ``"naive"``  — λ from J M⁻¹ Jᵀ λ = rhs − J M⁻¹ f with a general dense solver (Sec. 2.2).

*Auxiliary* constraints (loop closures, fixed points; rows Jᵃ) are added to
the sparse solver by constraint anticipation (Sec. 4): with K = Jᵃᵀ, each
column M̂⁻¹ kᵢ — the accelerations a unit force kᵢ causes once the primary
constraints respond — is one O(n) solve with the factors of H, then
(Jᵃ M̂⁻¹ K) μ = rhsᵃ − Jᵃ φ̇₀ (Eq. 8) and φ̇ = φ̇₀ + M̂⁻¹ K μ (Eq. 7): O(nk + k³).
The dense and naive solvers take all constraints together.

Stabilization: Baumgarte feedback on every row (rates ``alpha``, ``beta``) and,
by default, post-stabilization after each step: positions, then velocities,
are projected back onto the constraints with the step's factorization
(a minimal-mass-norm correction M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹ applied to the errors).
Integrators: symplectic Euler (default), the seed's forward Euler, and RK4
(for cross-checks against reduced coordinates).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..stages.joint_limits import refuse_limits
from ..stages.prescribed import refuse_drives
from ...algorithms.kinematics import link_poses
from ...energy import energy
from ...errors import ModelError
from ...integrators import integrate_kernel
from ...joints import JOINT_FLOATS, JOINT_FREE_ROTATIONS, JOINT_FREE_TRANSLATIONS, JOINT_TYPE_NAMES
from ...maximal.closures import closure_constraints
from ...maximal.planar_rows import PIN, SLIDER, WELD, planar_constraints
from ...maximal.rows import joint_constraints
from ...maximal.state import FreeBodies, maximal_state, planar_reduced_state, planar_state, reduced_state
from ...model import State
from ...stepper import StepStats
from ..linalg.baraff_kkt import METHODS, BaraffSolver, TreeNodes

INTEGRATORS = ("symplectic", "euler", "rk4")


@dataclass
class MaximalSystem:
    """Bodies (link-frame spatial inertias), primary constraints (a forest) and auxiliary ones."""

    inertia: np.ndarray          # (n, d, d): 3D spatial inertias about the link origins (d = 6); 2D diag(m, m, I) (d = 3)
    gravity: np.ndarray          # (3,) world
    primary: object              # JointConstraints (3D) or PlanarConstraints (2D)
    aux: object
    body_names: list
    primary_names: list
    aux_names: list

    @property
    def body_dim(self) -> int:
        return int(self.inertia.shape[1])

    @property
    def planar(self) -> bool:
        return self.body_dim == 3

    def __post_init__(self):
        n = self.inertia.shape[0]
        for i in range(n):
            w = np.linalg.eigvalsh(0.5 * (self.inertia[i] + self.inertia[i].T))
            if not np.all(np.isfinite(w)) or w.min() <= 1e-12 * max(w.max(), 1e-300):
                raise ModelError(f"body '{self.body_names[i]}': its mass matrix is singular (zero mass or a zero "
                                 "moment of inertia); maximal coordinates need every body's full inertia")
        for cons, names in ((self.primary, self.primary_names), (self.aux, self.aux_names)):
            for k, (a, b) in enumerate(cons.bodies):
                for x in (a, b):
                    if not -1 <= x < n:
                        raise ModelError(f"constraint '{names[k]}': references body {x}, but there are only {n} bodies")
                if a == b:
                    raise ModelError(f"constraint '{names[k]}': connects body '{self._name(a)}' to itself")
        self._order_nodes()

    def _name(self, i):
        return "world" if i < 0 else self.body_names[i]

    @property
    def n_bodies(self) -> int:
        return self.inertia.shape[0]

    # ------------------------------------------------------------ ordering
    def _order_nodes(self):
        """Nodes (bodies and primary constraints) children-before-parents (seed 002 Sec. 3.1)."""
        n, c = self.n_bodies, self.primary
        adj = [[] for _ in range(n)]
        world = [[] for _ in range(n)]
        root_of = list(range(n))

        def find(x):
            while root_of[x] != x:
                root_of[x] = root_of[root_of[x]]
                x = root_of[x]
            return x

        for k, (a, b) in enumerate(c.bodies):
            if a < 0 or b < 0:
                world[b if a < 0 else a].append(k)
                continue
            ra, rb = find(a), find(b)
            if ra == rb:
                raise ModelError(
                    f"primary constraint '{self.primary_names[k]}' closes a loop of primary constraints between "
                    f"'{self._name(a)}' and '{self._name(b)}'; primary constraints must form a tree — add it as an "
                    "auxiliary constraint (a loop closure) instead")
            root_of[ra] = rb
            adj[a].append((b, k))
            adj[b].append((a, k))
        comp_world = {}
        for v in range(n):
            for k in world[v]:
                r = find(v)
                if r in comp_world:
                    raise ModelError(
                        f"primary constraint '{self.primary_names[k]}' closes a loop through the world with "
                        f"'{self.primary_names[comp_world[r]]}'; primary constraints must form a tree — add it as an "
                        "auxiliary constraint (a fixed point or loop closure) instead")
                comp_world[r] = k
        # each tree is rooted at its body tied to the world (that world constraint is the tree's root node)
        roots = {}
        for r, k in comp_world.items():
            a, b = c.bodies[k]
            roots[r] = b if a < 0 else a
        seen = [False] * n
        parent_con, parent_body = [-1] * n, [-1] * n
        m = len(c.bodies)
        nodes = []  # (kind 0 body / 1 constraint, index, parent key, side of the rows that touch the parent)
        for start in range(n):
            comp = find(start)
            r = roots.get(comp, start)
            if seen[r]:
                continue
            seen[r] = True
            bfs, queue = [], [r]
            while queue:
                v = queue.pop(0)
                bfs.append(v)
                for w, k in adj[v]:
                    if not seen[w]:
                        seen[w] = True
                        parent_con[w], parent_body[w] = k, v
                        queue.append(w)
            kw = comp_world.get(comp, -1)
            for v in reversed(bfs):  # children before parents
                k = parent_con[v] if v != r else kw
                nodes.append((0, v, (1, k) if k >= 0 else None, 1 if k >= 0 and c.bodies[k, 1] == v else 0))
                if v != r and k >= 0:
                    u = parent_body[v]
                    nodes.append((1, k, (0, u), 1 if c.bodies[k, 1] == u else 0))
            if kw >= 0:
                nodes.append((1, kw, None, 0))
        where = {(kd, ix): i for i, (kd, ix, _, _) in enumerate(nodes)}
        N = len(nodes)
        kind = [kd for kd, _, _, _ in nodes]
        index = [ix for _, ix, _, _ in nodes]
        parent = np.array([where[key] if key is not None else -1 for _, _, key, _ in nodes], dtype=np.int64)
        up_side = np.array([sd for _, _, _, sd in nodes], dtype=np.int64)
        node_of_body = np.array([where[(0, v)] for v in range(n)], dtype=np.int64)
        node_of_con = np.array([where[(1, k)] for k in range(m)], dtype=np.int64)
        d = self.body_dim
        dim = np.array([d if kd == 0 else int(c.rows[ix]) for kd, ix in zip(kind, index)], dtype=np.int64)
        self.node_kind = np.array(kind, dtype=np.int64)
        self.node_index = np.array(index, dtype=np.int64)
        self.node_parent, self.node_dim, self.node_up_side = parent, dim, up_side
        self.node_offset = np.concatenate([[0], np.cumsum(dim)[:-1]]).astype(np.int64) if N else np.zeros(0, np.int64)
        self.nodes = TreeNodes(self.node_kind, self.node_index, parent, up_side, dim, self.node_offset)
        self.node_of_body, self.node_of_con = node_of_body, node_of_con
        self.n_unknowns = int(dim.sum())
        # where each body's 6 unknowns and each primary row sit in the node-ordered vector
        self.body_slots = self.node_offset[node_of_body][:, None] + np.arange(d)
        self.row_slots = np.array([self.node_offset[node_of_con[k]] + r for k in range(m) for r in range(int(c.rows[k]))],
                                  dtype=np.int64)

    # ------------------------------------------------------------ from a scene
    @classmethod
    def from_scene(cls, scene) -> "MaximalSystem":
        """The scene's tree joints as primary constraints, its loop closures as auxiliary ones."""
        model = scene.model
        keep = [i for i in range(model.n_bodies) if not JOINT_FLOATS[model.joint_type[i]]]
        I3 = np.eye(3)
        primary = joint_constraints(
            model.joint_type[keep], model.joint_axis[keep],
            [(model.body_parent[i], i) for i in keep],
            model.tree.tree_E[keep], model.tree.tree_r[keep],
            [I3] * len(keep), np.zeros((len(keep), 3)))
        aux = closure_constraints(scene.loop_closures)
        return cls(np.ascontiguousarray(model.tree.link_inertia), np.asarray(model.gravity, float), primary, aux,
                   list(model.body_names), [model.joint_names[i] for i in keep],
                   [lc.name for lc in scene.loop_closures])


# ------------------------------------------------------------------ stepper
class BaraffStepper:
    """Steps a ``MaximalSystem`` in time (state: ``qmax`` (7n) poses, ``phi`` (n, 6) link twists).

    method: ``METHODS``. integrator:

    * ``"symplectic"`` (default): semi-implicit Euler, φ⁺ = φ + h φ̇, pose ⊕ h φ⁺, with the multipliers
      chosen so that φ⁺ satisfies the constraints (the KKT system of Sec. 3 with right-hand side
      −J φ / h − β² h e instead of the acceleration-level −c): stable on closed loops and mildly
      dissipative, like the engine's implicit RedMax step;
    * ``"euler"``: the seed's forward Euler (pose ⊕ h φ, then φ⁺) with the acceleration-level
      constraints J φ̇ + c = 0 of Eq. 3 plus Baumgarte feedback;
    * ``"rk4"``: classical RK4 on the same acceleration-level system (accurate; used to check
      maximal against reduced coordinates).

    The acceleration-level form with semi-implicit Euler gains energy on closed loops (the
    velocity-product term c, evaluated at the old velocities, pumps energy into the loop), which is
    why the default imposes the constraints on the new velocities instead.
    alpha, beta: Baumgarte rates (1/s; default 0). post_stabilize: project positions, then
    velocities, back onto the constraints after each step (to ``tol``, at most ``max_projections``
    Newton steps with fresh rows).
    """

    def __init__(self, system: MaximalSystem, dt: float, *, method: str = "sparse", integrator: str = "symplectic",
                 alpha: float = 0.0, beta: float = 0.0, post_stabilize: bool = True, tol: float = 1e-10,
                 max_projections: int = 5):
        if integrator not in INTEGRATORS:
            raise ValueError(f"unknown integrator {integrator!r}; expected one of {', '.join(INTEGRATORS)}")
        if not (dt > 0 and np.isfinite(dt)):
            raise ValueError(f"dt must be a positive number of seconds, got {dt}")
        if alpha < 0 or beta < 0:
            raise ValueError(f"Baumgarte rates must be ≥ 0, got alpha={alpha}, beta={beta}")
        self.system, self.dt, self.integrator = system, float(dt), integrator
        self.solver = BaraffSolver(system, method, alpha, beta)
        self.beta_v = float(beta) ** 2 * self.dt  # position feedback of the velocity-level form (rate β² h)
        self.post_stabilize, self.tol, self.max_projections = post_stabilize, float(tol), int(max_projections)
        self._free = FreeBodies(system.n_bodies)
        self.constraint_error = 0.0
        self.solve_seconds = 0.0  # time in factor + solve (the seed's timing)
        self.last_multipliers = (np.zeros(system.primary.n_rows), np.zeros(system.aux.n_rows))

    def accelerations(self, qmax, phi, *, velocity_level: bool = False):
        """φ̇ at (qmax, φ): J φ̇ = rhs with the seed's acceleration-level rhs (−c and Baumgarte terms), or,
        with ``velocity_level``, the rhs −J φ / h that makes φ + h φ̇ satisfy the constraints."""
        s = self.solver
        s.evaluate(qmax, phi)
        t0 = time.perf_counter()
        if velocity_level:
            h = self.dt
            acc, lam, mu = s.solve(None, -s.verr / h - self.beta_v * s.err, -s.verr_a / h - self.beta_v * s.err_a)
        else:
            acc, lam, mu = s.solve()
        self.solve_seconds += time.perf_counter() - t0
        self.last_multipliers = (lam, mu)
        return acc

    def _advance(self, qmax, v, h):
        if self.system.planar:  # (x, y, θ) += h (ẋ, ẏ, ω)
            return qmax + h * v.reshape(-1)
        out = qmax.copy()
        integrate_kernel(self._free.joint_type, self._free.q_start, self._free.v_start, out,
                         np.ascontiguousarray(v.reshape(-1)), h, out)
        return out

    def step(self, qmax, phi):
        """One step from (qmax, φ); returns the new (qmax, φ)."""
        h = self.dt
        if self.integrator == "symplectic":  # constraints imposed on the new velocities (stable, mildly dissipative)
            phi_new = phi + h * self.accelerations(qmax, phi, velocity_level=True)
            q_new = self._advance(qmax, phi_new, h)
        elif self.integrator == "euler":
            phi_new = phi + h * self.accelerations(qmax, phi)
            q_new = self._advance(qmax, phi, h)
        else:  # RK4 on the Lie group (velocity stages combined, one exponential), as engine.rk4_step
            k1v, k1a = phi, self.accelerations(qmax, phi)
            k2v = phi + 0.5 * h * k1a
            k2a = self.accelerations(self._advance(qmax, k1v, 0.5 * h), k2v)
            k3v = phi + 0.5 * h * k2a
            k3a = self.accelerations(self._advance(qmax, k2v, 0.5 * h), k3v)
            k4v = phi + h * k3a
            k4a = self.accelerations(self._advance(qmax, k3v, h), k4v)
            q_new = self._advance(qmax, (k1v + 2 * k2v + 2 * k3v + k4v) / 6.0, h)
            phi_new = phi + h * (k1a + 2 * k2a + 2 * k3a + k4a) / 6.0
        if self.post_stabilize:
            q_new, phi_new = self.project(q_new, phi_new)
        else:
            self.solver.evaluate(q_new, phi_new, forces=False)
        self.constraint_error = self.max_error()
        return q_new, phi_new

    def max_error(self) -> float:
        s = self.solver
        return float(max(np.abs(s.err).max(initial=0.0), np.abs(s.err_a).max(initial=0.0)))

    def project(self, qmax, phi):
        """Post-stabilization: Newton steps Δ = −M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹ e on the poses until |e| ≤ tol, then the
        velocity projection φ −= M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹ J φ (minimal kinetic-energy corrections)."""
        s, zero_f = self.solver, np.zeros((self.system.n_bodies, self.system.body_dim))
        for _ in range(self.max_projections):
            s.evaluate(qmax, phi, forces=False)
            if self.max_error() <= self.tol:
                break
            delta, _, _ = s.solve(zero_f, -s.err, -s.err_a)
            qmax = self._advance(qmax, delta, 1.0)
        s.evaluate(qmax, phi, forces=False)
        dphi, _, _ = s.solve(zero_f, -s.verr, -s.verr_a)
        return qmax, phi + dphi


class SceneStepper:
    """``Simulator(scene, "baraff", method=…)`` (``engine.stepper`` contract): a scene's tree and loop
    closures stepped in maximal coordinates; ``step(state, control)`` takes and returns the reduced
    state, so the Simulator, energy and users see the same (q, q̇) as with the other solvers. Handles
    gravity, joints and loop closures (no contact: ``contact`` options are refused with a scene that has it)."""

    divergence_hint = "try a smaller dt"
    contact = None

    def __init__(self, scene, dt, *, method="sparse", integrator="symplectic", alpha=0.0, beta=0.0,
                 post_stabilize=True, tol=1e-10, max_projections=5, planar=None, contact=None, limits=None):
        refuse_drives(scene, "baraff")  # no prescribed-joint, motor, breaking or field stages here
        refuse_limits(scene, limits, "baraff")  # no limit stage here
        extras = [f"{len(scene.pairs)} springs/cables" if len(scene.pairs) else "",
                  f"{len(scene.point_forces)} point forces" if len(scene.point_forces) else "",
                  f"{len(scene.moving_loads)} moving loads" if scene.moving_loads else "",
                  "joint springs" if np.any(scene.joint_stiffness) or np.any(scene.joint_damping) else "",
                  "body damping" if np.any(scene.body_damping) else ""]
        extras = [e for e in extras if e]
        if extras:
            raise ValueError(f"solver 'baraff' simulates gravity, joints and loop closures only; scene "
                             f"'{scene.name}' also has {', '.join(extras)} — use 'pcg', 'direct' or 'dense'")
        if scene.ground is not None or scene.body_contact is not None:
            raise ValueError("the 'baraff' solver has no contact; use 'pcg', 'direct', 'dense' or 'explicit'")
        self.model = scene.model
        if planar is None:  # 3 DoF per body whenever the scene stays in the xy plane (seed 002's setting)
            planar = not planar_problem(scene)
        self.planar = bool(planar)
        self.system = planar_system(scene) if self.planar else MaximalSystem.from_scene(scene)
        self.stepper = BaraffStepper(self.system, dt, method=method, integrator=integrator, alpha=alpha, beta=beta,
                                     post_stabilize=post_stabilize, tol=tol, max_projections=max_projections)
        self._last = None  # (q, q̇) returned last, and the maximal state behind them
        self.stats = StepStats()

    def step(self, state, control):
        q, qd = state.q, state.qd
        if self._last is None or not (np.array_equal(q, self._last[0]) and np.array_equal(qd, self._last[1])):
            qmax, phi = (planar_state if self.planar else maximal_state)(self.model, q, qd)  # (re)start from (q, q̇)
        else:
            qmax, phi = self._last[2], self._last[3]
        qmax, phi = self.stepper.step(qmax, phi)
        if self.planar:
            q_new, qd_new = planar_reduced_state(self.model, qmax, phi)
        else:
            s = self.stepper.solver
            q_new, qd_new = reduced_state(self.model, s.R, s.p, phi)
        self._last = (q_new, qd_new, qmax, phi)
        self.stats = StepStats(constraint_error=self.stepper.constraint_error)
        return State(q_new, qd_new, state.t + self.stepper.dt)

    def energy(self, state, control) -> float:
        """Kinetic + gravitational energy (J): the solver takes no other forces."""
        return energy(self.model, state.q, state.qd)


# ------------------------------------------------------------------ planar (2D)
def planar_kind(jtype: int) -> int | None:
    """The planar row kind of a joint (or closure) type by what it frees: nothing → WELD; one rotation, or a
    ball's three (in the plane only the one about z moves) → PIN; one translation → SLIDER; None otherwise
    (a universal joint, or a free one: the floating root has no row)."""
    rot, trans = int(JOINT_FREE_ROTATIONS[jtype]), int(JOINT_FREE_TRANSLATIONS[jtype])
    if trans == 0:
        return {0: WELD, 1: PIN, 3: PIN}.get(rot)
    return SLIDER if (rot, trans) == (0, 1) else None


def planar_problem(scene) -> str:
    """"" if the scene moves in the xy plane (hinges about z, sliders in the plane, gravity in the
    plane, links rotated about z only), else why not."""
    model = scene.model
    if abs(model.gravity[2]) > 1e-12:
        return "gravity has a z component"
    R, _ = link_poses(model, scene.q0)
    for i in range(model.n_bodies):
        if abs(R[i, 2, 2] - 1.0) > 1e-9:
            return f"body '{model.body_names[i]}' is rotated out of the xy plane"
        jt = int(model.joint_type[i])
        par = int(model.body_parent[i])
        Rj = (R[par] if par >= 0 else np.eye(3)) @ model.joint_rotation[i]
        axis = Rj @ model.joint_axis[i]
        if JOINT_FLOATS[jt]:
            continue
        kind = planar_kind(jt) if JOINT_FREE_ROTATIONS[jt] < 3 else None  # (a ball in the tree moves out of plane)
        if kind == PIN and abs(abs(axis[2]) - 1.0) > 1e-9:
            return f"joint '{model.joint_names[i]}' does not hinge about z"
        if kind == SLIDER and abs(axis[2]) > 1e-9:
            return f"joint '{model.joint_names[i]}' slides out of the plane"
        if kind is None:
            return f"joint '{model.joint_names[i]}' is {JOINT_TYPE_NAMES[jt]}"
    for lc in scene.loop_closures:
        if planar_kind(lc.joint_type) not in (PIN, WELD):
            return f"loop closure '{lc.name}' is a {lc.kind} joint"
    return ""


def planar_system(scene) -> MaximalSystem:
    """The scene's tree and closures in 2D maximal coordinates (3 DoF per body, seed 002 Sec. 2.1)."""
    why = planar_problem(scene)
    if why:
        raise ModelError(f"scene '{scene.name}' is not planar: {why}")
    model = scene.model
    n = model.n_bodies
    com = model.body_com  # link frame
    R0, _ = link_poses(model, scene.q0)
    theta0 = np.arctan2(R0[:, 1, 0], R0[:, 0, 0])
    inertia = np.zeros((n, 3, 3))
    for i in range(n):
        Ic = model.body_rotation[i] @ np.diag(model.body_principal_inertia[i]) @ model.body_rotation[i].T
        inertia[i] = np.diag([model.body_mass[i], model.body_mass[i], Ic[2, 2]])
    rows, names = [], []
    for i in range(n):
        jt, par = int(model.joint_type[i]), int(model.body_parent[i])
        if JOINT_FLOATS[jt]:
            continue
        kind = planar_kind(jt)
        origin = model.joint_origin[i]
        ra = origin[:2] - com[par, :2] if par >= 0 else origin[:2]
        axis = (model.joint_rotation[i] @ model.joint_axis[i])[:2]  # in the parent link (= COM) frame
        a0 = theta0[i] - (theta0[par] if par >= 0 else 0.0)
        rows.append((kind, (par, i), (ra, -com[i, :2]), axis, a0))
        names.append(model.joint_names[i])
    aux = []
    for lc in scene.loop_closures:
        pts = []
        for body, pt in ((lc.body_a, lc.point_a), (lc.body_b, lc.point_b)):
            pts.append(np.asarray(pt[:2], float) - (com[body, :2] if body >= 0 else 0.0))
        a0 = (theta0[lc.body_b] if lc.body_b >= 0 else 0.0) - (theta0[lc.body_a] if lc.body_a >= 0 else 0.0)
        aux.append((planar_kind(lc.joint_type), (lc.body_a, lc.body_b), pts, (1.0, 0.0), a0))

    def pack(items):
        if not items:
            return planar_constraints(np.zeros(0), np.zeros((0, 2)), np.zeros((0, 2, 2)), np.zeros((0, 2)), np.zeros(0))
        return planar_constraints(*[np.array([it[k] for it in items], dtype=float) for k in range(5)])

    return MaximalSystem(inertia, np.asarray(model.gravity, float), pack(rows), pack(aux), list(model.body_names),
                         names, [lc.name for lc in scene.loop_closures])
