"""RedMax linearly implicit step (thesis 000, Eq. 2.13–2.15) with three linear solvers.

One step from (q, q̇) at time t, with h = dt:

    M̃ q̇⁺ = M q̇ + h (f_r + Jᵀ (f_m − M_m J̇ q̇))                        (2.13)
    M̃   = Jᵀ (M_m + h D_m + h² K_m) J + h D_r + h² K_r                   (2.14)
    q⁺  = q ⊕ h q̇⁺

K = −∂f/∂x and D = −∂f/∂v (positive for springs and dampers). The bias
Jᵀ(f_m − M_m J̇ q̇) − Coriolis − gravity is RNEA's two passes on the step's
kinematics; M q̇ one inward pass (redmax_step.py).
Linear damping forces enter only through D (no right-hand side term,
Baraff–Witkin). K_m keeps only the springs' material (Gauss–Newton) part by
default so that M̃ is symmetric positive definite for any stiffness;
``geometric_stiffness="springs"`` adds their symmetrized geometric terms of
Eq. 2.37/2.41 (closer to the thesis, but M̃ may then lose definiteness under
large tensions). ``geometric_stiffness="joints"`` adds the geometric stiffness
of the joints — the tension along chains, ``geometric_stiffness.py`` — to each
body's block (``"all"``: both; False, this class's default: neither, the
thesis's step; the solver registry turns ``"joints"`` on for ``engine.Simulator``).
``energy_guard=True`` (on in ``engine.Simulator``) keeps a step from creating energy on scenes without
closures, contact and limits (``energy_guard.py``); ``newton_iterations=k`` refines the step towards
backward Euler on the incremental potential (``incremental_potential.py``; off).
Loop closures impose G q̇⁺ = −C/h so that the next position error vanishes
to first order. The direct solvers use the dual problem (Eq. 2.42 / 3.2) with
one back-substitution per constraint row. PCG instead runs one projected CG
(iterates kept on G q̇ = −C/h by projecting every residual in the
preconditioner's metric), where the thesis runs l + 1 PCG solves;
``closure_method="dual"`` restores the thesis's way for comparison. A
post-stabilization projection of q⁺ (Newton steps in the metric of the block
Jacobi preconditioner P, the same for all solvers) removes the remaining drift.

Linear solvers: ``"pcg"`` (projected block Jacobi preconditioned CG, never
forming J), ``"direct"`` (M̃ assembled each step on its fixed structural pattern and
factored by ``direct.DirectSolver``: symmetric factorization, analysis once, the fastest
installed of PARDISO / the engine's LDLᵀ (rows ordered leaf-to-root so the tree part has no
fill-in) / dense LAPACK; ``direct_backends`` restricts or names the choice, CHOLMOD included),
``"dense"`` (dense M̃, LAPACK Cholesky).
"""
from __future__ import annotations

import itertools
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph

from ..._jit import compiled_for
from ...algorithms._flat import FlatModel
from ...algorithms.aba import articulated_inertia_pass
from ...algorithms.crba import NO_POSITIONS, NO_VALUES, composite_inertia_matrix
from ...algorithms.kinematics import joint_pass, world_pass
from ...algorithms.minv import minv
from ...contact.handler import contact_stage
from ..stages.joint_limits import limit_stage
from ...forces.evaluator import ForceEvaluator
from ...integrators import integrate
from ...errors import SimulatorOptionError
from ...model import State
from ...stepper import StepStats
from ..linalg.block_jacobi import block_jacobi_solve, block_jacobi_solve_rows, pcg_solve
from ..stages.loop_closures import closure_arrays, constraint_jacobian, constraint_rows
from ..stages.geometric_stiffness import JointGeometricStiffness, parse_geometric_stiffness
from ..stages.energy_guard import make_energy_guard
from ..stages.prescribed import PrescribedMotion, project
from ..stages.servos import Servos
from .incremental_potential import make_refinement
from ..linalg.reduced_operators import system_product
from ..linalg.pair_couplings import add_pair_couplings
from .redmax_step import assemble_step_system, force_arrays, pcg_step, system_buffer, tension_buffer
from ..linalg.direct import DirectSolver

LINEAR_SOLVERS = ("pcg", "direct", "dense")
CLOSURE_METHODS = ("projected", "dual")
ORDERINGS = ("leaf-to-root", "rcm")  # the direct solver's elimination orders
PARALLEL_MIN_DOFS = 200  # below this, one PCG solve is cheaper than a thread hand-off


class RedMaxStepper:
    """The RedMax step of one scene (``engine.stepper`` contract): holds its preallocated buffers.

    contact: options of the contact stage (``engine.contact.handler.contact_stage``), used when
    the scene has a ground or body contacts; limits: options of the joint-limit stage
    (``engine.solvers.stages.joint_limits.limit_stage``; None: limits not enforced)."""

    divergence_hint = "try a smaller dt"

    def __init__(self, scene, dt: float, linear_solver: str = "pcg", *, tol: float = 1e-8, max_iter: int = 500,
                 ordering: str = "leaf-to-root", post_stabilize: bool = True, geometric_stiffness=False,
                 threads: int = 2, closure_method: str = "projected", contact: dict | None = None,
                 limits: dict | None = None, newton_iterations: int = 0, energy_guard: bool = False,
                 direct_backends="auto"):
        if linear_solver not in LINEAR_SOLVERS:
            raise ValueError(f"unknown linear solver {linear_solver!r}; expected one of {', '.join(LINEAR_SOLVERS)}")
        if closure_method not in CLOSURE_METHODS:
            raise SimulatorOptionError(f"Simulator option 'closure_method' must be one of {', '.join(CLOSURE_METHODS)}, "
                                       f"got {closure_method!r}")
        if ordering not in ORDERINGS:  # (used by the direct solver only, checked for every solver)
            raise SimulatorOptionError(f"Simulator option 'ordering' must be one of {', '.join(ORDERINGS)}, "
                                       f"got {ordering!r}")
        self.closure_method = closure_method
        self.scene = scene
        self.model = model = scene.model
        self.dt = float(dt)
        self.linear_solver = linear_solver
        self.iterative = linear_solver == "pcg"  # its solves can stop at max_iter (the Simulator counts those)
        self.tol, self.max_iter = float(tol), int(max_iter)
        self.ordering = ordering
        self.post_stabilize = post_stabilize
        # joints: K⁺ of geometric_stiffness.py in the body blocks A; springs: their own geometric terms
        self.joint_stiffness, self.geometric_stiffness = parse_geometric_stiffness(geometric_stiffness)
        self._joint_gs = JointGeometricStiffness(scene.model, inertial=True) if self.joint_stiffness else None
        self.threads = max(1, int(threads))
        self._pool = None
        n, nv = model.n_bodies, model.nv
        # this stepper's own kinematics and solver workspace: views into a FlatModel's buffer, which the
        # one-call step hands to its kernel whole (with the tree's two buffers) instead of 31 arrays
        self._flat = FlatModel(model)
        self.ws = self._flat.ws
        self.forces = fe = ForceEvaluator(scene, self.geometric_stiffness)  # the forces stage: f, K, D
        self.pairs, self.K, self.D, self.wrench = fe.pairs, fe.K, fe.D, fe.wrench  # filled in place by fe
        m = len(self.pairs[0])
        self._lnk = [np.zeros((n, 6)) for _ in range(2)]
        self.qd_guess = scene.qd0.copy()
        self._cols_idx = np.zeros(nv, dtype=np.int64)
        self._cols_idx_b = np.zeros(nv, dtype=np.int64)
        self._cols_vec = np.zeros((nv, 6))
        self._cols_vec_b = np.zeros((nv, 6))
        self._perm = np.arange(nv)[::-1].copy()  # leaf-to-root
        self._no_rows = np.zeros((0, nv))
        self._closures = closure_arrays(scene.loop_closures)  # fixed for the stepper's lifetime
        self._csc = None
        self.direct_backends = direct_backends  # DirectSolver's backends= ("auto": the fastest installed)
        self.direct_solver = None  # built with the structural pattern
        self.stats = StepStats()
        self.contact = contact_stage(scene, self.dt, contact)  # v⁺ = contact.apply(q, v*, metric) (ground contact)
        if self.contact is not None and len(self._closures.n_rot):
            self.contact.closure_rows = self._closure_rows_at  # contact impulses keep the closures' velocities
        self.limits = limit_stage(scene, self.dt, limits)  # then joint limits, in the same metric
        # prescribed joints: rows beside the closures' (stages/prescribed.py); motors: bounded rows after the solve
        self.prescribed = PrescribedMotion(scene, self.dt)
        self.servos = Servos(scene, self.dt)
        self._presc_rows = (np.zeros(0, np.int64), np.zeros(0))
        self._presc_end = 0.0
        self.row_impulses = np.zeros(0)  # each closure row's impulse of the last step (N·s or N·m·s)
        self._closures_breakable = any(b.kind == "closure" for b in scene.breakable)
        # the per-step kernels' buffers (redmax_step.py); r = h D_r + h² K_r is fixed for the run
        h = self.dt
        self._force_arrays = force_arrays(fe, model)
        gs = self._joint_gs if self._joint_gs is not None else JointGeometricStiffness(model)
        self._tension_buffer, self._tension_arrays = tension_buffer(gs, model)
        # SystemArrays, PCG's scratch and pcg_step's energies (E(q, q̇), E(q⁺, q̇⁺) for the energy guard) in one buffer
        self._system_buffer, self._system, self._vec, self._energies = system_buffer(
            model, m, h * fe.joint_damping + h * h * fe.joint_stiffness)
        self.A, self.coupling = self._system.A, self._system.coupling
        self._pf_K = np.zeros((0, 6, 6))
        self._no_point_forces = (np.zeros(0, dtype=np.int64), np.zeros((0, 3)), np.zeros((0, 3)), self._pf_K)
        # one kernel call per step when nothing but the PCG solve acts on the velocities
        self._one_call = (linear_solver == "pcg" and len(self._closures.n_rot) == 0 and self.contact is None
                          and self.limits is None and not self.prescribed and not self.servos)
        self._pcg_step_kernel = None  # pcg_step's entry point, resolved at the first step
        self._q_shape = (model.nq,)
        # no spring joins two moving bodies: the block Jacobi preconditioner is M̃ itself
        self._exact_preconditioner = not bool(np.any((self.pairs.body_a >= 0) & (self.pairs.body_b >= 0)))
        # backward Euler by Newton on the incremental potential from the linear step's rates
        self._newton = make_refinement(self, newton_iterations)
        self._energy_guard = make_energy_guard(self, energy_guard)  # passive scenes: no step creates energy
        self._one_call = self._one_call and self._newton is None

    # ------------------------------------------------------------ forces
    def reduced_forces(self, q, rest=None):
        """f_r = −K_r (q ⊖ q_rest) (nv,) and r = h D_r + h² K_r (rest: (nq,), default the scene's)."""
        fe, h = self.forces, self.dt
        rest = self.scene.joint_rest if rest is None else rest
        return fe.joint_forces(q, rest), h * fe.joint_damping + h * h * fe.joint_stiffness

    def evaluate(self, q, qd, control, articulated=False):
        """Kinematics at (q, q̇) and every force: fills wrench, A, coupling and the step's right-hand
        side (``assemble_step_system``; articulated: also the preconditioner's inward pass);
        returns (f_r, r)."""
        fe, sa, ta = self.forces, self._system, self._tension_arrays
        gs = self._joint_gs
        closure_forces = gs is not None and gs.closure_wrench is not None
        if closure_forces:
            ta.closure_wrench[:] = gs.closure_wrench
        pf_body, pf_point, pf_force, pf_K = self._point_forces(control)
        fe.spring_energy, fe.point_force_energy = assemble_step_system(
            self.model.tree, self.ws, self.pairs, self._force_arrays, ta, sa, _floats(q), _floats(qd),
            _floats(control.joint_rest), pf_body, pf_point, pf_force, pf_K, self.dt, self.geometric_stiffness,
            gs is not None, gs is not None and gs.inertial, closure_forces, articulated)
        fe.point_force_body, fe.point_force_K = pf_body, pf_K
        return sa.f_r.copy(), sa.reduced_diag.copy()

    def _point_forces(self, control):
        """(body, point, force, K scratch) of the control's point forces as the kernels take them."""
        body, point, force = control.point_forces
        k = len(body)
        if k == 0:
            return self._no_point_forces
        if self._pf_K.shape[0] != k:
            self._pf_K = np.zeros((k, 6, 6))
        return (np.ascontiguousarray(body, dtype=np.int64).reshape(k),
                np.ascontiguousarray(point, dtype=float).reshape(k, 3),
                np.ascontiguousarray(force, dtype=float).reshape(k, 3), self._pf_K)

    def energy(self, state, control) -> float:
        """Kinetic + gravitational + spring (+ joint spring, point force) potential energy (J)."""
        return self.forces.energy(state, control, self.ws)

    def step_energy(self, state, control, start: bool = False):
        """``energy(state, control)`` as the energy guard already has it (J): E(q⁺, q̇⁺) of the step that returned
        ``state`` (the step kernel's, or the guard's own after a clamp), equal to ``energy`` to round-off; None
        without a guard or when ``state`` or ``control`` are not that step's (compared bytewise, as the guard does).
        start=True: E(q, q̇) at that step's start instead (the one-call step's own; None on the general path)."""
        if self._energy_guard is None or (start and not self._one_call):
            return None
        e1 = self._energy_guard.last_energy(state, control)
        if e1 is None:
            return None
        return float(self._energies[0]) if start else e1

    # ------------------------------------------------------------- solves
    def _prepare_solver(self, reduced_diag, articulated_done=False):
        model, ws = self.model, self.ws
        self._r = reduced_diag
        if self.linear_solver == "pcg":
            if not articulated_done:
                articulated_inertia_pass(model.tree, ws, self.A, reduced_diag)
            self._solve = self._pcg
        else:
            Mt = self.assemble_dense() if self.linear_solver == "dense" else None
            if self.linear_solver == "dense":
                self._chol = scipy.linalg.cho_factor(Mt, lower=True, check_finite=False)
                self._solve = lambda b, x0: (scipy.linalg.cho_solve(self._chol, b, check_finite=False), 0)
            else:
                self._factor_sparse()
                self._solve = self._sparse_solve

    def _pcg(self, b, x0, constraints=None):
        """PCG from x0; ``constraints`` = (G, Y, Sinv) makes it projected CG (x0 must be feasible)."""
        ws, tree = self.ws, self.model.tree
        x = x0.copy()
        r, z, p, Ap = self._vec
        y, w = self._lnk
        G, Y, Sinv = constraints if constraints is not None else (self._no_rows, self._no_rows, np.zeros((0, 0)))
        its = pcg_solve(tree, ws, self.A, self.pairs[0], self.pairs[1], self.coupling, self._r, b, x, self.tol,
                        self.max_iter, r, z, p, Ap, y, w, G, Y, Sinv, np.empty(G.shape[0]))
        return x, its

    def system_product(self, x):
        """M̃ x for the current step's system (after evaluate + _prepare_solver)."""
        out = np.empty(self.model.nv)
        y, w = self._lnk
        system_product(self.model.tree, self.ws, self.A, self.pairs[0], self.pairs[1], self.coupling, self._r,
                       np.ascontiguousarray(x, float), y, w, out)
        return out

    def preconditioner_solve(self, x):
        out = np.empty(self.model.nv)
        block_jacobi_solve(self.model.tree, self.ws, np.ascontiguousarray(x, float), out)
        return out

    def assemble_dense(self):
        """M̃ (nv, nv) dense (Eq. 2.14)."""
        model = self.model
        M = np.zeros((model.nv, model.nv))
        composite_inertia_matrix(model.tree, self.ws, self.A, M, NO_VALUES, NO_POSITIONS)
        add_pair_couplings(model.tree, self.ws, self.pairs[0], self.pairs[1], self.coupling, M, NO_VALUES,
                           NO_POSITIONS, self._cols_idx, self._cols_vec, self._cols_idx_b, self._cols_vec_b)
        M[np.diag_indices_from(M)] += self._r
        return M

    def _tree_pattern(self):
        pat = getattr(self, "_pattern", None)
        if pat is None:
            lam = [int(a) for a in self.model.dof_parent]
            ancestors = []  # of each dof, nearest first (parents come before children: lam[d] < d)
            for d, a in enumerate(lam):
                ancestors.append([a] + ancestors[a] if a >= 0 else [])
            lens = np.fromiter((len(x) for x in ancestors), np.int64, len(lam))
            desc = np.repeat(np.arange(len(lam), dtype=np.int64), lens)
            anc = np.fromiter(itertools.chain.from_iterable(ancestors), np.int64, int(lens.sum()))
            diag = np.arange(len(lam), dtype=np.int64)  # the diagonal, then (d, a) and (a, d) pairs
            pat = self._pattern = (np.concatenate([diag, desc, anc]), np.concatenate([diag, anc, desc]))
        return pat

    def _structural_pattern(self):
        """CSC pattern of M̃ for the whole run: ancestor pairs of the tree plus, for every
        spring joining two bodies, all (ancestor dof of a, ancestor dof of b) pairs."""
        if getattr(self, "_csc", None) is None:
            model, nv = self.model, self.model.nv
            r0, c0 = self._tree_pattern()
            rows, cols = [r0, np.arange(nv)], [c0, np.arange(nv)]

            def dofs_up(body):
                out = []
                j = body
                while j >= 0:
                    out += range(model.v_start[j], model.v_start[j] + model.joint_nv[j])
                    j = model.body_parent[j]
                return np.array(out, dtype=np.int64)

            for a, b in zip(self.pairs[0], self.pairs[1]):
                if a >= 0 and b >= 0:
                    da, db = dofs_up(int(a)), dofs_up(int(b))
                    R, C = np.repeat(da, len(db)), np.tile(db, len(da))  # every (da, db) pair (meshgrid, cheaper)
                    rows += [R, C]
                    cols += [C, R]
            # CSC, duplicates merged and rows sorted within columns: the unique (column, row) keys, in order
            keys = np.unique(np.concatenate(cols) * nv + np.concatenate(rows))
            col_of, indices = keys // nv, keys % nv
            indptr = np.concatenate([[0], np.cumsum(np.bincount(col_of, minlength=nv))]).astype(np.int64)
            self._positions = np.full((nv, nv), -1, dtype=np.int64)  # (row, col) → index into the CSC values
            self._positions[indices, col_of] = np.arange(len(keys))
            self._diag_positions = self._positions[np.arange(nv), np.arange(nv)].copy()
            self._values = np.zeros(len(keys))
            if self.ordering == "leaf-to-root":
                perm = self._perm
            else:
                pat = scipy.sparse.csc_matrix((np.ones(len(keys)), indices, indptr), shape=(nv, nv))
                perm = scipy.sparse.csgraph.reverse_cuthill_mckee(pat, symmetric_mode=True)
            self._csc = (indices, col_of)
            self._direct_matrix = scipy.sparse.csc_matrix((self._values, indices, indptr), shape=(nv, nv))
            self.direct_solver = DirectSolver(self.direct_backends, perm=perm)
        return self._csc

    def assemble_sparse_values(self):
        """M̃'s values on the structural pattern (CSC order), assembled without a dense matrix."""
        model = self.model
        self._structural_pattern()
        v = self._values
        v[:] = 0.0
        composite_inertia_matrix(model.tree, self.ws, self.A, NO_VALUES.reshape(0, 0), v, self._positions)
        add_pair_couplings(model.tree, self.ws, self.pairs[0], self.pairs[1], self.coupling, NO_VALUES.reshape(0, 0),
                           v, self._positions, self._cols_idx, self._cols_vec, self._cols_idx_b, self._cols_vec_b)
        v[self._diag_positions] += self._r
        return v

    def _factor_sparse(self):
        """Numeric factorization of M̃ on the fixed pattern (its analysis done on the first step)."""
        self._direct_matrix.data = self.assemble_sparse_values()  # same index arrays: the analysis is reused
        self.direct_solver.factor(self._direct_matrix)

    def _sparse_solve(self, b, x0):
        return self.direct_solver.solve(b), 0

    # --------------------------------------------------------------- step
    def step(self, state, control):
        """One RedMax step from ``state`` under ``control``; returns the state at t + h and records
        iterations and constraint error in ``stats``."""
        if self._one_call:
            return self._pcg_step(state, control)
        model, h = self.model, self.dt
        q, qd = state.q, state.qd
        pcg = self.linear_solver == "pcg"
        _, reduced_diag = self.evaluate(q, qd, control, articulated=pcg)  # leaves the step's kinematics in ws
        rhs = self._system.rhs  # Eq. 2.15
        solve_start = time.perf_counter()  # the linear-solver-dependent part (StepStats.solve_seconds)
        self._prepare_solver(reduced_diag, articulated_done=pcg)
        self._presc_rows = self.prescribed.rows(q, state.t) if self.prescribed else (np.zeros(0, np.int64), np.zeros(0))
        self._presc_end = state.t + h
        closures = len(self._closures.n_rot) > 0 or len(self._presc_rows[0]) > 0
        if not closures:
            qd_new, its = self._solve(rhs, self.qd_guess)
            total_its, max_its, solves = its, its, 1
            if self._newton is not None:
                qd_new, total_its, solves = self._newton.refine(q, qd, qd_new, control, total_its, solves)
        else:
            qd_new, (total_its, max_its, solves) = self._solve_with_closures(rhs)
            if self._joint_gs is not None or self._closures_breakable:  # their forces add tension in the next step
                residual = self.system_product(qd_new) - rhs
                Y, Sinv = self._projection
                self.row_impulses = (Sinv @ (Y @ residual))[:len(self._closure_rows[1])]
                if self._joint_gs is not None:
                    self._joint_gs.record_closures(model, *self._closure_rows, Y, Sinv, residual, h)
        self.qd_guess = qd_new
        solve_seconds = time.perf_counter() - solve_start
        fixed = self._fixed_rows if closures else None
        if self.servos:
            qd_new = self.servos.apply(q, qd_new, self.A, self._r, fixed)
        if self.contact is not None:
            qd_new = self.contact.apply(q, qd_new, (self.A, self._r))  # contact in the step's metric M̃
            if len(self._presc_rows[0]):  # contact may have pushed a prescribed joint: its rows again
                W = minv(model, q, inertia=self.A, joint_diag=self._r, ws=self.servos.ws)
                qd_new = project(qd_new, W, *self._presc_rows, fixed[:len(fixed) - len(self._presc_rows[0])])
        if self.limits is not None:
            self.limits.hold(self.prescribed.unit_rows(self._presc_rows[0]) if len(self._presc_rows[0]) else None)
            qd_new = self.limits.apply(q, qd_new, self.A, self._r)
        q_new = integrate(model, q, qd_new, h)
        if self._energy_guard is not None:
            qd_new = self._energy_guard.apply(state, q_new, qd_new, control)
        constraint_error = 0.0
        if closures and self.post_stabilize:
            q_new, constraint_error = self._project(q_new)
        if self.contact is not None:  # last: no contact deeper than the stage allows at the step's end (its
            q_new = self.contact.stabilize(q_new)  # projection keeps the closures, to first order)
        # per linear solve, the most any solve of this step took
        self.stats = StepStats(max_its, total_its, solves, constraint_error, solve_seconds)
        return State(q_new, qd_new, state.t + h)

    def _pcg_step(self, state, control):
        """``step`` in one kernel call (``redmax_step.pcg_step``): no closures, contact or limits."""
        pf = self._point_forces(control)
        q, qd, rest = _floats(state.q), _floats(state.qd), _floats(control.joint_rest)
        if q.shape != self._q_shape or qd.shape != self.qd_guess.shape or rest.shape != self._q_shape:
            # the compiled entry point reads what it is given: refuse before it reads out of bounds
            raise ValueError(f"RedMax step: q and joint_rest must have shape {self._q_shape} and qd "
                             f"{self.qd_guess.shape}; got {q.shape}, {rest.shape} and {qd.shape}")
        qd_new = self.qd_guess.copy()
        q_new = np.empty_like(q)
        if self._pcg_step_kernel is None:  # the arguments that stay the same from step to step (fixed from here)
            flat, gs = self._flat, self._joint_gs
            self._step_args = (flat.ints, flat.floats, flat.work, self.pairs, self._force_arrays, self._tension_buffer,
                               self._system_buffer, self.dt, self.geometric_stiffness, gs is not None,
                               gs is not None and gs.inertial, self._exact_preconditioner, self.tol, self.max_iter,
                               self._energy_guard is not None)
            self._pcg_step_kernel = compiled_for(pcg_step, (q, qd, rest, *pf, qd_new, q_new, *self._step_args))
            self._r = self._system.reduced_diag
        start = time.perf_counter()
        its = self._pcg_step_kernel(q, qd, rest, *pf, qd_new, q_new, *self._step_args)
        # the solve is inside the kernel: without couplings it is one exact block solve (no other linear solver
        # can beat it, 0 s); with couplings the whole call is the bound the advisor gets (StepStats.solve_seconds)
        solve_seconds = 0.0 if self._exact_preconditioner else time.perf_counter() - start
        self.forces.point_force_body, self.forces.point_force_K = pf[0], pf[3]
        self.qd_guess = qd_new
        if self._energy_guard is not None:
            qd_new = self._energy_guard.apply(state, q_new, qd_new, control, self._energies)
        self.stats = StepStats(its, its, 1, 0.0, solve_seconds)
        return State(q_new, qd_new, state.t + self.dt)

    def _closure_rows_at(self, q, ws):
        """(bodies (l, 2), link-frame rows (l, 12)) of the loop closures at q (kinematics into ws)."""
        joint_pass(self.model.tree, np.ascontiguousarray(q, dtype=float), ws)
        world_pass(self.model.tree, ws)
        bodies, rows, _ = constraint_rows(self._closures, ws)
        return bodies, rows

    def _solve_with_closures(self, rhs):
        """Velocities with G q̇ = −C/h (Eq. 2.42). PCG: one projected CG run in the metric of the
        preconditioner P. ``closure_method="dual"`` and the direct solvers: Eq. 3.2,
        (G M̃⁻¹ Gᵀ) λ = G M̃⁻¹ f̃ + C/h, q̇ = M̃⁻¹ f̃ − M̃⁻¹Gᵀ λ, with l extra solves."""
        model, ws = self.model, self.ws
        bodies, rows, C = constraint_rows(self._closures, ws)
        G = np.empty((len(C), model.nv))
        constraint_jacobian(model.tree, ws, bodies, rows, self._lnk[1], G)
        self._closure_rows = (bodies, rows)
        dofs, rates = self._presc_rows
        target = -C / self.dt
        if len(dofs):  # prescribed joints: unit rows with their rates (stages/prescribed.py)
            G = np.vstack([G, self.prescribed.unit_rows(dofs)])
            target = np.concatenate([target, rates])
        self._fixed_rows = G
        if self.linear_solver != "pcg":  # P also serves as the post-stabilization metric
            articulated_inertia_pass(model.tree, ws, self.A, self._r)
        Y = np.empty_like(G)
        block_jacobi_solve_rows(model.tree, ws, G, Y)
        Sinv = _constraint_inverse(G @ Y.T)
        self._projection = (Y, Sinv)
        if self.linear_solver == "pcg" and self.closure_method == "projected":
            x0 = self.qd_guess + Y.T @ (Sinv @ (target - G @ self.qd_guess))  # feasible start
            x, its = self._pcg(rhs, x0, (G, Y, Sinv))
            return x, (its, its, 1)
        u0, total = self._solve(rhs, self.qd_guess)
        guesses = getattr(self, "_Y_guess", None)
        if guesses is None or guesses.shape != G.T.shape:
            guesses = np.zeros_like(G.T)
        MinvGT, col_its = self._solve_columns(np.ascontiguousarray(G.T), guesses)
        self._Y_guess = MinvGT
        lam = _constraint_inverse(G @ MinvGT) @ (G @ u0 - target)
        return u0 - MinvGT @ lam, (total + sum(col_its), max([total] + col_its), 1 + len(col_its))

    def _solve_columns(self, B, X0):
        """M̃⁻¹ B column by column: the l independent solves of Eq. 3.2.

        PCG runs them on ``threads`` Python threads (the kernels release the GIL),
        each with private scratch arrays; the factorization is shared read-only.
        The direct and dense solvers back-substitute all columns in one call.
        """
        if self.linear_solver != "pcg":
            if self.linear_solver == "dense":
                return scipy.linalg.cho_solve(self._chol, B, check_finite=False), [0] * B.shape[1]
            return self.direct_solver.solve(B), [0] * B.shape[1]
        l = B.shape[1]
        if self.threads == 1 or l < 2 or self.model.nv < PARALLEL_MIN_DOFS:  # hand-off costs more than small solves
            cols = [self._pcg(B[:, k], X0[:, k]) for k in range(l)]
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.threads)
            chunks = [range(t, l, self.threads) for t in range(self.threads)]
            parts = list(self._pool.map(lambda ks: [(k, self._pcg_private(B[:, k], X0[:, k])) for k in ks], chunks))
            cols = [None] * l
            for part in parts:
                for k, res in part:
                    cols[k] = res
        return np.column_stack([c[0] for c in cols]), [c[1] for c in cols]

    def _pcg_private(self, b, x0):
        """PCG with thread-private scratch (the shared workspace's factorization is only read)."""
        model = self.model
        n, nv = model.n_bodies, model.nv
        z = np.zeros
        ws = self.ws._replace(pA=z((n, 6)), a=z((n, 6)), u=z(nv), tmp6=z(6), tmp6b=z(6))
        x = x0.copy()
        its = pcg_solve(model.tree, ws, self.A, self.pairs[0], self.pairs[1], self.coupling, self._r, b, x, self.tol,
                        self.max_iter, z(nv), z(nv), z(nv), z(nv), z((n, 6)), z((n, 6)), self._no_rows, self._no_rows,
                        z((0, 0)), z(0))
        return x, its

    def _project(self, q):
        """Post-stabilization: q ← q ⊕ (−P⁻¹Gᵀ (G P⁻¹Gᵀ)⁺ C(q)), Newton steps in the metric of the
        block Jacobi preconditioner P (an SPD stand-in for M̃ that every solver can afford) with the
        step's slightly stale G, until max|C| < 1e-10 (at most 8; convergence is linear). The last
        kinematics pass is that of the returned q (no extra pass for its error).
        Returns (q, the largest remaining |C|)."""
        model, ws = self.model, self.ws
        Y, Sinv = self._projection
        for it in range(9):
            joint_pass(model.tree, q, ws)
            world_pass(model.tree, ws)
            _, _, C = constraint_rows(self._closures, ws)
            if len(self._presc_rows[0]):  # the prescribed joints' rows come last in G: their errors too
                C = np.concatenate([C, self.prescribed.errors(q, self._presc_end)[1]])
            error = float(np.abs(C).max()) if len(C) else 0.0
            if error < 1e-10 or it == 8:
                return q, error
            q = integrate(model, q, -Y.T @ (Sinv @ C), 1.0)


def _floats(x):
    """x as a contiguous float64 array (no copy when it already is one)."""
    return np.ascontiguousarray(x, dtype=float)


def _constraint_inverse(S):
    """(G W Gᵀ)⁺ for the small dense l × l matrix S (W SPD). The pseudo-inverse handles redundant
    constraints (e.g. two point closures on a planar chain), where λ is not unique but Gᵀλ is."""
    w, V = np.linalg.eigh(S)
    keep = w > 1e-12 * max(w.max(initial=0.0), 1e-300)
    return (V[:, keep] / w[keep]) @ V[:, keep].T

