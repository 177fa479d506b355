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
``integrator=`` picks the time integrator built from this solve (``redmax_schemes.py``: ``"euler"``, this
class's default and the thesis's; ``"bdf2"``, the default of ``engine.Simulator``; ``"tr-bdf2"``, ``"blend"``);
``energy_guard`` its energy budget (``energy_guard.py``: True, the integrator's own policy — "cap" for Euler,
"hold" for the others —, False, "cap" or "hold"; off in this class by default); ``newton_iterations=k``
refines the Euler step towards backward Euler on the incremental potential (``incremental_potential.py``; off).
Loop closures impose G q̇⁺ = −C/h so that the next position error vanishes
to first order (``stages/closure_solve.py``: PCG by one projected CG run, where the thesis runs l + 1
solves, the direct solvers by the dual problem of Eq. 2.42 / 3.2, ``closure_method="dual"`` the thesis's
way for PCG too; then a post-stabilization of q⁺).

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

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph

from ..._jit import EntryPoints, compiled_for
from ...algorithms._flat import FlatModel
from ...algorithms.aba import articulated_inertia_pass
from ...algorithms.kinematics import joint_pass, world_pass
from ...algorithms.crba import NO_POSITIONS, NO_VALUES, composite_inertia_matrix
from ...algorithms.minv import minv
from ...contact.handler import contact_stage
from ..stages.joint_limits import limit_stage
from ...forces.evaluator import ForceEvaluator
from ...errors import SimulatorOptionError
from ...model import State
from ...stepper import StepStats
from ..linalg.block_jacobi import block_jacobi_solve, pcg_solve
from ..stages.closure_solve import MAX_FORCE_PASSES, ClosureSolve
from ..stages.loop_closures import closure_arrays, constraint_rows
from ..stages.geometric_stiffness import JointGeometricStiffness, parse_geometric_stiffness
from ..stages.energy_guard import make_energy_guard
from ...integrators import configuration_difference, integrate, integrate_kernel
from ..stages.prescribed import BDF2History, PrescribedMotion, project
from ..stages.servos import Servos
from .incremental_potential import make_refinement
from .redmax_impacts import ImpactCheck
from .redmax_schemes import SCHEMES, History, parse_integrator
from ..linalg.reduced_operators import system_product
from ..linalg.pair_couplings import add_pair_couplings
from .redmax_step import assemble_step_system, force_arrays, pcg_step, system_buffer, tension_buffer
from ..linalg.direct import DirectSolver

LINEAR_SOLVERS = ("pcg", "direct", "dense")
CLOSURE_METHODS = ("projected", "dual")
ORDERINGS = ("leaf-to-root", "rcm")  # the direct solver's elimination orders


class RedMaxStepper:
    """The RedMax step of one scene (``engine.stepper`` contract): holds its preallocated buffers.

    contact: options of the contact stage (``engine.contact.handler.contact_stage``), used when
    the scene has a ground or body contacts; limits: options of the joint-limit stage
    (``engine.solvers.stages.joint_limits.limit_stage``; None: limits not enforced)."""

    divergence_hint = "try a smaller dt"

    def __init__(self, scene, dt: float, linear_solver: str = "pcg", *, tol: float = 1e-8, max_iter: int = 500,
                 ordering: str = "leaf-to-root", post_stabilize: bool = True, geometric_stiffness=False,
                 threads: int = 2, closure_method: str = "projected", contact: dict | None = None,
                 limits: dict | None = None, newton_iterations: int = 0, energy_guard=False,
                 direct_backends="auto", integrator: str = "euler"):
        if linear_solver not in LINEAR_SOLVERS:
            raise ValueError(f"unknown linear solver {linear_solver!r}; expected one of {', '.join(LINEAR_SOLVERS)}")
        if closure_method not in CLOSURE_METHODS:
            raise SimulatorOptionError(f"Simulator option 'closure_method' must be one of {', '.join(CLOSURE_METHODS)}, "
                                       f"got {closure_method!r}")
        if ordering not in ORDERINGS:  # (used by the direct solver only, checked for every solver)
            raise SimulatorOptionError(f"Simulator option 'ordering' must be one of {', '.join(ORDERINGS)}, "
                                       f"got {ordering!r}")
        self.closure_method = closure_method
        self.integrator, policy = parse_integrator(integrator, energy_guard)
        if newton_iterations and self.integrator != "euler":
            raise SimulatorOptionError(f"Simulator option 'newton_iterations' refines the implicit Euler step; it "
                                       f"needs integrator='euler', got integrator={integrator!r}")
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
        self.kernels = EntryPoints()  # the per-step kernels' compiled entry points (``_jit.EntryPoints``)
        self.contact = contact_stage(scene, self.dt, contact)  # v⁺ = contact.apply(q, v*, metric) (ground contact)
        if self.contact is not None and len(self._closures.n_rot):
            self.contact.closure_rows = self._closure_rows_at  # contact impulses keep the closures' velocities
        self.limits = limit_stage(scene, self.dt, limits)  # then joint limits, in the same metric
        # prescribed joints: rows beside the closures' (stages/prescribed.py); motors: bounded rows after the solve
        self.prescribed = PrescribedMotion(scene, self.dt)
        self.servos = Servos(scene, self.dt)
        self._presc_rows, self._joined = (np.zeros(0, np.int64), np.zeros(0)), None  # (_joined: solve's)
        self._presc_end = 0.0
        self.row_impulses = np.zeros(0)  # each closure row's impulse of the last step (N·s or N·m·s)
        self._closures_breakable = any(b.kind == "closure" for b in scene.breakable)
        # the per-step kernels' buffers (redmax_step.py); r = h D_r + h² K_r is fixed for the run
        h = self.dt
        self._force_arrays = force_arrays(fe, model)
        gs = self._joint_gs if self._joint_gs is not None else JointGeometricStiffness(model)
        self._tension_buffer, self._tension_arrays = tension_buffer(gs, model)
        # SystemArrays, PCG's scratch and pcg_step's energies (E(q, q̇), T⁺, V⁺, P⁺ for the energy guard) in one buffer
        self._system_buffer, self._system, self._vec, self._energies = system_buffer(
            model, m, h * fe.joint_damping + h * h * fe.joint_stiffness)
        self.A, self.coupling = self._system.A, self._system.coupling
        self._pf_K = np.zeros((0, 6, 6))
        self._no_point_forces = (np.zeros(0, dtype=np.int64), np.zeros((0, 3)), np.zeros((0, 3)), self._pf_K)
        # one kernel call per step when nothing but the PCG solve acts on the velocities
        self._one_call = (linear_solver == "pcg" and len(self._closures.n_rot) == 0 and self.contact is None
                          and self.limits is None and not self.prescribed and not self.servos)
        self._pcg_step_kernel = None  # pcg_step's entry point, resolved at the first step
        self._assemble_entry = None  # assemble_step_system's (_assemble)
        self._q_shape = (model.nq,)
        # no spring joins two moving bodies: the block Jacobi preconditioner is M̃ itself
        self._exact_preconditioner = not bool(np.any((self.pairs.body_a >= 0) & (self.pairs.body_b >= 0)))
        # backward Euler by Newton on the incremental potential from the linear step's rates
        self._newton = make_refinement(self, newton_iterations)
        self.prescribed_moved = False  # a prescribed joint moved in the last solve (the energy budget's; solve)
        self._energy_guard = make_energy_guard(self, policy is not None, policy)  # the step's energy budget
        self._one_call = self._one_call and self._newton is None and self.integrator in ("euler", "bdf2")
        # drives (prescribed joints, motors) set their own motion: BDF2 aims the prescribed rows from its extrapolated
        # start at q̄(t + h) and bounds the motors' impulses by their force over its solve's step (solve), and its
        # history restarts where a prescribed motion jumps (prescribed.BDF2History); the two-stage schemes take
        # Euler steps on such scenes (the energy budget: make_energy_guard)
        self._drives = bool(self.prescribed) or bool(self.servos)
        self._scheme = SCHEMES["euler" if self._drives and self.integrator != "bdf2" else self.integrator]
        self._bdf2 = self.integrator == "bdf2"
        self._history = BDF2History(History(), self.prescribed) if self.prescribed else History()  # BDF2's last step
        self._no_presc = (np.zeros(0, np.int64), np.zeros(0))
        self._impact = False  # the last solve's contact or limit impulses stopped or started a motion (solve)
        self._impacts = ImpactCheck(self) if self._bdf2 and (self.contact is not None or self.limits is not None) \
            else None
        self._bounce_credit = 0.0  # J: what a gap's bounce may give back of the energy its closing took (solve)
        self._zero_v = np.zeros(model.nv)
        self._closure_solve = ClosureSolve(self)
        self._solve_step = h  # the h of r = h D_r + h² K_r in the system buffer
        self._q_solve, self._v_solve = np.zeros(model.nq), np.zeros(model.nv)  # BDF2's extrapolated state (kernel)

    # ------------------------------------------------------------ forces
    def reduced_forces(self, q, rest=None):
        """f_r = −K_r (q ⊖ q_rest) (nv,) and r = h D_r + h² K_r (rest: (nq,), default the scene's)."""
        fe, h = self.forces, self.dt
        rest = self.scene.joint_rest if rest is None else rest
        return fe.joint_forces(q, rest), h * fe.joint_damping + h * h * fe.joint_stiffness

    def evaluate(self, q, qd, control, articulated=False, h=None):
        """Kinematics at (q, q̇) and every force: fills wrench, A, coupling and the step's right-hand
        side (``assemble_step_system``; articulated: also the preconditioner's inward pass) for a solve of
        step h (default: the stepper's dt); returns (f_r, r)."""
        self._assemble(q, qd, control, articulated, h)
        sa = self._system
        return sa.f_r.copy(), sa.reduced_diag.copy()

    def _assemble(self, q, qd, control, articulated, h):
        """``evaluate`` without copying its results out (the step's own solves read them in place)."""
        h = self.dt if h is None else float(h)
        self._set_solve_step(h)
        fe, sa, ta = self.forces, self._system, self._tension_arrays
        gs = self._joint_gs
        closure_forces = gs is not None and gs.closure_wrench is not None
        if closure_forces:
            ta.closure_wrench[:] = gs.closure_wrench
        pf_body, pf_point, pf_force, pf_K = self._point_forces(control)
        q, qd, rest = _floats(q), _floats(qd), _floats(control.joint_rest)
        args = (self.model.tree, self.ws, self.pairs, self._force_arrays, ta, sa, q, qd, rest, pf_body, pf_point,
                pf_force, pf_K, h, self.geometric_stiffness, gs is not None, gs is not None and gs.inertial,
                closure_forces, bool(articulated))
        # its compiled entry point (numba's typing of the 19 arguments skipped: ≈ 8 µs a call) when the arrays that
        # change from call to call are of the types it was compiled for — contiguous float64 (_floats,
        # _point_forces), 1-D, writeable and aligned; anything else through numba's own dispatch
        if (q.ndim == 1 and qd.ndim == 1 and rest.ndim == 1 and q.flags.behaved and qd.flags.behaved
                and rest.flags.behaved and pf_body.flags.behaved and pf_point.flags.behaved and pf_force.flags.behaved):
            entry = self._assemble_entry
            if entry is None:
                entry = self._assemble_entry = compiled_for(assemble_step_system, args)
        else:
            entry = assemble_step_system
        fe.spring_energy, fe.point_force_energy = entry(*args)
        fe.point_force_body, fe.point_force_K = pf_body, pf_K

    def _set_solve_step(self, h):
        """r = h D_r + h² K_r of a solve of step h in the system buffer (rewritten only when h changes)."""
        if h != self._solve_step:
            fe = self.forces
            self._system.reduced_diag[:] = h * fe.joint_damping + h * h * fe.joint_stiffness
            self._solve_step = h

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
        return self.forces.energy(state, control)

    def step_energy(self, state, control, start: bool = False):
        """``energy(state, control)`` as the energy guard already has it (J): E(q⁺, q̇⁺) of the step that returned
        ``state`` (the step kernel's, or the guard's own after it scaled the rates), equal to ``energy`` to
        round-off; None without a guard or when ``state`` or ``control`` are not that step's (compared bytewise, as
        the guard does). start=True: E(q, q̇) at that step's start instead (the guard's start of its budget)."""
        if self._energy_guard is None:
            return None
        e1 = self._energy_guard.last_energy(state, control)
        if e1 is None:
            return None
        return float(self._energy_guard.start_energy) if start else e1

    # ------------------------------------------------------------- solves
    def _prepare_solver(self, reduced_diag, articulated_done=False):
        model, ws = self.model, self.ws
        self._r = reduced_diag = _floats(reduced_diag)  # (the entry points' type: contiguous float64)
        if self.linear_solver == "pcg":
            if not articulated_done:
                self.kernels(articulated_inertia_pass, model.tree, ws, self.A, reduced_diag)
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
        x = np.array(x0, dtype=float)  # (a copy; contiguous float64 arrays, as the entry point reads them)
        G, Y, Sinv = constraints if constraints is not None else (self._no_rows, self._no_rows, np.zeros((0, 0)))
        its = self.kernels(pcg_solve, self.model.tree, self.ws, self.A, self.pairs[0], self.pairs[1], self.coupling,
                           self._r, _floats(b), x, self.tol, self.max_iter, *self._vec, *self._lnk, _floats(G),
                           _floats(Y), _floats(Sinv), np.empty(G.shape[0]))
        return x, its

    def system_product(self, x):
        """M̃ x for the current step's system (after evaluate + _prepare_solver)."""
        out = np.empty(self.model.nv)
        y, w = self._lnk
        self.kernels(system_product, self.model.tree, self.ws, self.A, self.pairs[0], self.pairs[1], self.coupling,
                     self._r, _floats(x), y, w, out)
        return out

    def preconditioner_solve(self, x):
        out = np.empty(self.model.nv)
        block_jacobi_solve(self.model.tree, self.ws, np.ascontiguousarray(x, float), out)
        return out

    def assemble_dense(self):
        """M̃ (nv, nv) dense (Eq. 2.14)."""
        model = self.model
        M, k = np.zeros((model.nv, model.nv)), self.kernels
        k(composite_inertia_matrix, model.tree, self.ws, self.A, M, NO_VALUES, NO_POSITIONS)
        k(add_pair_couplings, model.tree, self.ws, self.pairs[0], self.pairs[1], self.coupling, M, NO_VALUES,
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
        v, k, no_matrix = self._values, self.kernels, NO_VALUES.reshape(0, 0)
        v[:] = 0.0
        k(composite_inertia_matrix, model.tree, self.ws, self.A, no_matrix, v, self._positions)
        k(add_pair_couplings, model.tree, self.ws, self.pairs[0], self.pairs[1], self.coupling, no_matrix, v,
          self._positions, self._cols_idx, self._cols_vec, self._cols_idx_b, self._cols_vec_b)
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
        """One RedMax step from ``state`` under ``control`` by the stepper's integrator (``redmax_schemes.py``);
        returns the state at t + h and records iterations and constraint error in ``stats``."""
        if self._one_call:
            return self._pcg_step(state, control)
        (q_new, constraint_error), qd_new, impulse_loss, report, smooth = self._scheme(self, state, control)
        if self._energy_guard is not None:
            qd_new = self._energy_guard.apply(state, q_new, qd_new, control, impulse_loss=impulse_loss,
                                              impulsive=not smooth)
        q_stepped = q_new
        if self.contact is not None:  # last: no contact deeper than the stage allows at the step's end (its projection
            moved = self.contact.stabilize(q_new, self._joined)  # keeps the closures to first order, and the bounds on
            if moved is not q_new and len(self._closures.n_rot):  # the dense space), the closures made again (their
                moved, constraint_error = self.onto_closures(moved)  # contacts held: closure_solve), no joint past a
            q_new = moved if self.limits is None else self.limits.at_step_end(moved, moved is not q_new)  # bound
        if self._bdf2:
            start = state
            if q_new is not q_stepped and not self._impact:  # a projection's move is no motion: the history moves
                # with it, or BDF2 would extrapolate a third of the push (lifting a body pushed out of the floor)
                back = configuration_difference(self.model, state.q, q_stepped)
                start = State(integrate(self.model, q_new, -back, 1.0), state.qd, state.t)
            self._history.record(start, q_new, qd_new, not self._impact)
        total_its, max_its, solves, solve_seconds = report
        # per linear solve, the most any solve of this step took
        self.stats = StepStats(max_its, total_its, solves, constraint_error, solve_seconds)
        return State(q_new, qd_new, state.t + self.dt)

    def solve(self, q, qd, control, h_solve, h_move):
        """The linearly implicit solve of Eq. 2.13–2.15 with step h_solve from (q (nq,), q̇ (nv,)) — loop closures
        aiming at q ⊕ h_move q̇⁺ (C → 0 there), their forces iterated into the tension (``closure_solve.py``) —,
        then contact and joint limits in the step's metric M̃. Returns (q̇⁺ of the solve, q̇⁺ after contact and limits
        (the same array when they did nothing), the energy their impulses took — E(q ⊕ h_m q̇*, q̇*) −
        E(q ⊕ h_m q̇⁺, q̇⁺), the step without and with them (J, when the energy budget holds the energy; else 0;
        ≥ 0 but for a bounce, which gives back what the closing of its gap took) —,
        (total iterations, most of one solve, solves, solve seconds))."""
        pcg = self.linear_solver == "pcg"
        # prescribed joints: unit rows with their rates beside the closures' (stages/prescribed.py)
        self._presc_rows = self.prescribed.rows(q, control.t, h_move) if self.prescribed else self._no_presc
        self._presc_end = control.t + self.dt  # (drives step by Euler or BDF2: both end there)
        self.prescribed_moved = self._energy_guard is not None and len(self._presc_rows[0]) > 0 and \
            not self.prescribed.still(control.t, self._presc_rows[1])  # (the budget's: energy_guard.py)
        closures = len(self._closures.n_rot) > 0 or len(self._presc_rows[0]) > 0
        gs = self._closure_solve.predict_forces(control.t) if closures else self._joint_gs  # the tension's first guess
        total = most = solves = 0
        solve_seconds = 0.0
        for _ in range(MAX_FORCE_PASSES if closures and gs is not None else 1):
            used = None if not closures or gs is None or gs.closure_wrench is None else gs.closure_wrench.copy()
            self._assemble(q, qd, control, pcg, h_solve)  # leaves the step's kinematics in ws
            rhs = self._system.rhs  # Eq. 2.15
            solve_start = time.perf_counter()  # the linear-solver-dependent part (StepStats.solve_seconds)
            self._prepare_solver(self._system.reduced_diag.copy(), articulated_done=pcg)
            if not closures:
                qd_new, its = self._solve(rhs, self.qd_guess)
                t, m, n = its, its, 1
                if self._newton is not None:
                    qd_new, t, n = self._newton.refine(q, qd, qd_new, control, t, n)
            else:
                qd_new, (t, m, n) = self._closure_solve.velocities(rhs, h_move)
            solve_seconds += time.perf_counter() - solve_start
            total, most, solves = total + t, max(most, m), solves + n
            self.qd_guess = qd_new
            if not closures or (gs is None and not self._closures_breakable):
                break
            residual = self.system_product(qd_new) - rhs
            Y, Sinv = self._projection
            # each closure row's impulse over the stepper's dt (breakable closures): the solve's multiplier is its
            # force over h_solve (BDF2 solves over 2/3 of the step)
            impulse = Sinv @ (Y @ residual)
            self.row_impulses = impulse[:len(self._closure_rows[1])] * (self.dt / h_solve)
            if gs is None:
                break
            # their forces add tension to this solve (again, if they moved) and to the next step's
            gs.record_closures(self.model, *self._closure_rows, Y, Sinv, residual, h_solve, impulse)
            if not self._closure_solve.forces_moved(used):
                break
        smooth = qd_new
        fixed = self._fixed_rows if closures else None
        if self.servos:  # motors: bounded rows in the step's metric, closures and prescribed rows kept
            qd_new = self.servos.apply(q, qd_new, self.A, self._r, fixed, h_move)  # impulses ≤ force × h_move
        free = qd_new
        self._joined = self.limits and self.limits.for_contact(len(self._presc_rows[0]) > 0)  # limits_contact.py
        if self.contact is not None:  # (the joined limit stage steps by h_move too; else contact's dt is set twice)
            with _step_of(self.contact, h_move), _step_of(self._joined or self.contact, h_move):
                qd_new = self.contact.apply(q, qd_new, (self.A, self._r), self._joined)  # in the step's metric M̃
            if len(self._presc_rows[0]):  # contact may have pushed a prescribed joint: its rows again
                W = minv(self.model, q, inertia=self.A, joint_diag=self._r, ws=self.servos.ws)
                qd_new = project(qd_new, W, *self._presc_rows, fixed[:len(fixed) - len(self._presc_rows[0])])
        if self.limits is not None and not (self.contact is not None and self.contact.limits_joined):
            self.limits.hold(self.prescribed.unit_rows(self._presc_rows[0]) if len(self._presc_rows[0]) else None)
            with _step_of(self.limits, h_move):
                qd_new = self.limits.apply(q, qd_new, self.A, self._r)
        loss = 0.0
        credit, self._bounce_credit = self._bounce_credit, 0.0  # J: e² of what the last solve's gap closing took
        # BDF2 goes on across contact and limit rows that only hold the bodies (resting, sliding); an impact, a
        # bounce or an approach the next extrapolated start would carry past a surface restarts it (redmax_impacts)
        self._impact = qd_new is not free and self._impacts is not None and \
            self._impacts.impacted(q, qd, free, qd_new, h_move)
        if qd_new is not smooth and np.array_equal(qd_new, smooth):
            qd_new = smooth  # the stages had rows but no impulse: a smooth step
        elif qd_new is not smooth and self._energy_guard is not None and self._energy_guard.policy == "hold":
            # what the impulses took: the energy the step would end with without them, less what it ends with
            # (an impact's approach energy, friction's work; nothing for a resting contact, which cancels the
            # step's own acceleration: without it the body would fall and its energy stay the same)
            guard = self._energy_guard
            without = sum(guard.kinetic_and_potential(self._moved(q, smooth, h_move), smooth, control))
            taken = without - sum(guard.kinetic_and_potential(self._moved(q, qd_new, h_move), qd_new, control))
            # a bounce off a gap the last solve closed (contact/handler.py) gives back e² of the approach energy that
            # solve was charged (Newton's restitution on the normal speed): a negative loss, else the budget would
            # cap the rebound at the energy the closing left (a 2 m drop at e = 0.81 rose 0.03 m, not 1.31 m)
            loss = max(taken, -credit if self.contact is not None and self.contact.bouncing else 0.0)
            if taken < 0.0 and self._pushing_back():  # the energy a push-out adds is a position correction's
                loss = taken  # (Baumgarte: its rate moves a deep contact out, no motion): it stands
            if self.contact is not None and self.contact.bounce_pending:
                self._bounce_credit = self.contact.bounce_restitution ** 2 * max(loss, 0.0)
        return smooth, qd_new, loss, (total, most, solves, solve_seconds)

    def _pushing_back(self) -> bool:
        """A contact of the last contact solve deeper than the post-stabilization leaves any (``stabilize_depth``):
        something undid its projection (joint limits, ``limits.within``) or the run started so, and the contact's
        push-out (Baumgarte, ``contact/handler.py``) is doing a position correction; the energy that push adds is not
        the motion's, and the budget "hold" lets it stand (``energy_guard.py``) instead of scaling the rates down to
        take it off again (a dog held 0.19 m deep by its joint limits, its rates scaled to 0 step after step)."""
        last = None if self.contact is None else self.contact.last
        return last is not None and len(last.contacts) > 0 and \
            float(last.contacts.depth.max()) > self.contact.stabilize_depth

    def onto_closures(self, q):
        """(q, the largest closure error (m/rad)): q back onto the loop closures (``closure_solve.project``), or as
        it is without closures or with ``post_stabilize=False``."""
        if (len(self._closures.n_rot) == 0 and len(self._presc_rows[0]) == 0) or not self.post_stabilize:
            return q, 0.0
        return self._closure_solve.project(q)

    def _closure_rows_at(self, q, ws):
        """(bodies (l, 2), link-frame rows (l, 12)) of the loop closures at q (kinematics into ws)."""
        joint_pass(self.model.tree, np.ascontiguousarray(q, dtype=float), ws)
        world_pass(self.model.tree, ws)
        bodies, rows, _ = constraint_rows(self._closures, ws)
        return bodies, rows

    def _moved(self, q, v, h):
        """q ⊕ h v (nq,), without ``integrate``'s input checks (q and v are the step's own)."""
        out = np.array(q, dtype=float)
        m = self.model
        integrate_kernel(m.joint_type, m.q_start, m.v_start, out, _floats(v), float(h), out)
        return out

    def _pcg_step(self, state, control):
        """``step`` in one kernel call (``redmax_step.pcg_step``): no closures, contact or limits; Euler or BDF2."""
        pf = self._point_forces(control)
        q, qd, rest = _floats(state.q), _floats(state.qd), _floats(control.joint_rest)
        if q.shape != self._q_shape or qd.shape != self.qd_guess.shape or rest.shape != self._q_shape:
            # the compiled entry point reads what it is given: refuse before it reads out of bounds
            raise ValueError(f"RedMax step: q and joint_rest must have shape {self._q_shape} and qd "
                             f"{self.qd_guess.shape}; got {q.shape}, {rest.shape} and {qd.shape}")
        prev = self._history.extrapolation(state) if self._bdf2 else None
        bdf2 = prev is not None
        q_prev, qd_prev = prev if bdf2 else (q, qd)
        h = 2.0 * self.dt / 3.0 if bdf2 else self.dt
        self._set_solve_step(h)
        qd_new = self.qd_guess.copy()
        q_new = np.empty_like(q)
        guard = self._energy_guard
        if self._pcg_step_kernel is None:  # the arguments that stay the same from step to step (fixed from here)
            flat, gs = self._flat, self._joint_gs
            self._step_args = (flat.ints, flat.floats, flat.work, self.pairs, self._force_arrays, self._tension_buffer,
                               self._system_buffer, self.geometric_stiffness, gs is not None,
                               gs is not None and gs.inertial, self._exact_preconditioner, self.tol, self.max_iter,
                               0 if guard is None else (2 if guard.policy == "hold" else 1))
            self._pcg_step_kernel = compiled_for(pcg_step, (q, qd, q_prev, qd_prev, rest, *pf, qd_new, q_new,
                                                            self._q_solve, self._v_solve, h, bdf2, *self._step_args))
            self._r = self._system.reduced_diag
        start = time.perf_counter()
        its = self._pcg_step_kernel(q, qd, q_prev, qd_prev, rest, *pf, qd_new, q_new, self._q_solve, self._v_solve,
                                    h, bdf2, *self._step_args)
        # the solve is inside the kernel: without couplings it is one exact block solve (no other linear solver
        # can beat it, 0 s); with couplings the whole call is the bound the advisor gets (StepStats.solve_seconds)
        solve_seconds = 0.0 if self._exact_preconditioner else time.perf_counter() - start
        self.forces.point_force_body, self.forces.point_force_K = pf[0], pf[3]
        self.qd_guess = qd_new
        if guard is not None:
            qd_new = guard.apply(state, q_new, qd_new, control, self._energies)
        if self._bdf2:
            self._history.record(state, q_new, qd_new, True)
        self.stats = StepStats(its, its, 1, 0.0, solve_seconds)
        return State(q_new, qd_new, state.t + self.dt)


class _step_of:
    """``with _step_of(stage, h):`` the contact or limit stage takes the step h for its targets (the positions
    move by h q̇⁺: BDF2's and the trapezoidal stages' steps differ from the stepper's dt)."""

    def __init__(self, stage, h):
        self.stage, self.h = stage, float(h)

    def __enter__(self):
        self.saved, self.stage.dt = self.stage.dt, self.h

    def __exit__(self, *exc):
        self.stage.dt = self.saved


def _floats(x):
    """x as a contiguous float64 array (no copy when it already is one)."""
    return np.ascontiguousarray(x, dtype=float)
