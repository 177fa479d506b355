"""The loop-closure stage of the RedMax step (thesis 000, Eq. 2.42 / 3.2; issue #31): velocities with
G q̇⁺ = −C/h, then the configuration back onto C(q) = 0.

* **Velocities.** PCG runs one projected CG (iterates kept on G q̇ = −C/h by projecting every residual in the
  metric of the block Jacobi preconditioner P); the direct solvers and ``closure_method="dual"`` solve the
  dual problem of the thesis, (G M̃⁻¹ Gᵀ) λ = G M̃⁻¹ f̃ + C/h, q̇ = M̃⁻¹ f̃ − M̃⁻¹ Gᵀ λ, with one solve per row.
* **Straight or nearly straight loops** (a taut rope bridge: its closure's row along the deck vanishes when
  the deck is straight, and a sag of d shortens it by only ~d²). Three things keep them solvable:

  1. a *proximal* (Tikhonov) regularization of the l × l constraint matrices, (S + μ I)⁻¹ with
     μ = ``PROXIMAL`` × the largest eigenvalue of S (as Pinocchio 3's proximal constrained dynamics regularizes
     its Delassus matrix): directions S cannot see get no impulse larger than their target over μ, instead of a
     near-division by zero; the others are solved to a relative 1e-8. (PCG's projector stays the exact
     pseudo-inverse, which CG needs; the regularized inverse gives its feasible start and the dual's λ.)
  2. an *augmented-Lagrangian iteration on the closure forces*: the joints' geometric stiffness carries the
     closures' forces (the tension they put into the loop, ``geometric_stiffness.record_closures``) from the
     step before; on a nearly straight loop (an eigenvalue of G P⁻¹ Gᵀ below ``ILL_CONDITIONED`` of the
     largest), when the forces this step's solve finds differ from those by more than ``FORCE_RTOL`` of their
     size, the step is solved again with the new forces (at most ``MAX_FORCE_PASSES`` solves). A taut loop's
     tension is what makes its sag stiff, and a lagging tension lets a straight deck jitter. The first solve
     starts from the forces of the same solve in the last two steps extrapolated to this one where they follow
     a trend (``predict_forces``).
  3. a *globalized* post-stabilization (``project``): Gauss–Newton steps q ← q ⊕ −P⁻¹Gᵀ (G P⁻¹ Gᵀ + μ)⁻¹ C(q)
     with a backtracking line search on max|C|, the Jacobian rebuilt at the iterate whenever the step's own
     (built at the step's start) stops contracting the error; the contacts the step pressed held where they are
     (their normal rows in G, Cline and Pai 2003): the projection moves no body into what it rests on (to first order).

  The error is held to ``POSITION_TOL`` (1e-10 m/rad) wherever the loop allows it; on a taut loop, whose
  straight configuration the rows cannot see, to well below 1e-4 m (docs/redmax.md, *Loop closures*).
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.linalg

from ...algorithms.aba import articulated_inertia_pass
from ...algorithms.kinematics import joint_pass, world_pass
from ...integrators import integrate_kernel
from ..linalg.block_jacobi import block_jacobi_solve_rows, pcg_solve
from .loop_closures import constraint_jacobian, constraint_rows_kernel, contact_normal_rows, pressed_contacts

PROXIMAL = 1e-10         # μ relative to the largest eigenvalue of G W Gᵀ
ILL_CONDITIONED = 1e-4   # G P⁻¹ Gᵀ with an eigenvalue below this (relative) is a nearly straight loop
FORCE_RTOL = 0.05        # closure forces that moved more than this (relative) are solved again
MAX_FORCE_PASSES = 4     # solves per step at most when they do
POSITION_TOL = 1e-10     # m / rad: post-stabilization stops below this
MAX_PROJECTIONS = 40     # Gauss–Newton steps of the post-stabilization at most (a straight loop: C ~ d², a step
#                          halves the sag d and quarters C, so 1e-3 → 1e-10 takes ~12; well-conditioned ones ≤ 3)
PARALLEL_MIN_DOFS = 200  # below this, one PCG solve is cheaper than a thread hand-off


def constraint_inverse(S, proximal: float = PROXIMAL, eigen=None):
    """(S + μ I)⁻¹ on the range of the small dense l × l matrix S = G W Gᵀ (W SPD), μ = proximal × its largest
    eigenvalue; directions with eigenvalues below 1e-12 of the largest (redundant rows: two point closures on a
    planar chain, where λ is not unique but Gᵀλ is) are left out, as by a pseudo-inverse. proximal=0: the
    pseudo-inverse. eigen: S's ``np.linalg.eigh`` when the caller has it."""
    w, V = np.linalg.eigh(S) if eigen is None else eigen
    top, k = _spectrum(w)
    if k:  # (a copy, as a boolean mask takes: the product's operands keep their layout, and its bits)
        w, V = w[k:], V[:, k:].copy()
    return (V / (w + proximal * top)) @ V.T


def nearly_straight(eigen) -> bool:
    """Whether S = G W Gᵀ, by its ``eigh``, has a direction it barely sees (relative eigenvalue in
    [1e-12, ILL_CONDITIONED)): a loop pulled (nearly) straight, where a sag of d moves the closure by ~d²."""
    w = eigen[0]
    top, k = _spectrum(w)
    return k < len(w) and float(w[k]) < ILL_CONDITIONED * top


def _spectrum(w):
    """(top, k) of eigenvalues w in ascending order (``eigh``'s): top the largest (at least 1e-300), w[k:] those above
    1e-12 of it — the ones kept. Read off the order: no reductions or masks of a few µs each, twice a step."""
    top = max(float(w[-1]), 0.0, 1e-300) if len(w) else 1e-300
    return top, int(np.searchsorted(w, 1e-12 * top, side="right"))


class ClosureSolve:
    """The closure stage of one ``RedMaxStepper`` (module doc); ``stepper.closure_method`` picks the velocity
    solve for PCG. After ``velocities``, the stepper's ``_closure_rows`` (bodies, rows) and ``_projection``
    (Y = (P⁻¹Gᵀ)ᵀ, Sinv) describe the step's rows."""

    def __init__(self, stepper):
        self.s = stepper
        self._pool = None
        self._Y_guess = None
        self._Sinv_start = None  # (G P⁻¹ Gᵀ + μ)⁻¹ of the step's rows at its start
        self.straight = False  # the last solve's loop was nearly straight (``nearly_straight``)
        self._solve_t, self._stage = None, 0  # control.t of the last solve and its index within its step
        self._recorded = {}  # stage → [(control.t, closure forces)] of its last three solves (``predict_forces``)
        self._n_rows = stepper._closures.n_rows
        self._k = stepper.kernels  # the stepper's kernels' entry points (``_jit.EntryPoints``)

    # ----------------------------------------------------------- velocities
    def velocities(self, rhs, h):
        """q̇⁺ with G q̇⁺ = −C/h (h: the step the positions move by) from the stepper's evaluated system;
        returns (q̇⁺, (total iterations, most of one solve, solves))."""
        s, k = self.s, self._k
        model, ws = s.model, s.ws
        bodies, rows, C = self._rows()
        G = np.empty((len(C), model.nv))
        k(constraint_jacobian, model.tree, ws, bodies, rows, s._lnk[1], G)
        s._closure_rows = (bodies, rows)
        target = -C / h
        dofs, rates = s._presc_rows
        if len(dofs):  # prescribed joints: unit rows with their rates, after the closures' (stages/prescribed.py)
            G = np.vstack([G, s.prescribed.unit_rows(dofs)])
            target = np.concatenate([target, rates])
        s._fixed_rows = G
        if s.linear_solver != "pcg":  # P also serves as the post-stabilization metric
            k(articulated_inertia_pass, model.tree, ws, s.A, s._r)
        Y = np.empty_like(G)
        k(block_jacobi_solve_rows, model.tree, ws, G, Y)
        S = G @ Y.T
        eigen = np.linalg.eigh(S)
        self.straight = nearly_straight(eigen)
        s._projection = (Y, constraint_inverse(S, 0.0, eigen))
        # the proximal term matters only where S barely sees a direction: elsewhere μ / λ_min < 1e-6
        self._Sinv_start = constraint_inverse(S, eigen=eigen) if self.straight else s._projection[1]
        # the feasible start, by the regularized inverse: G x₀ = target up to what S barely sees. Every solver then
        # solves the constrained step exactly to the rows' reachable target G x₀, so they agree to round-off
        x0 = s.qd_guess + Y.T @ (self._Sinv_start @ (target - G @ s.qd_guess))
        if s.linear_solver == "pcg" and s.closure_method == "projected":
            x, its = s._pcg(rhs, x0, (G, Y, s._projection[1]))  # CG keeps G x = G x₀
            return x, (its, its, 1)
        u0, total = s._solve(rhs, s.qd_guess)
        guesses = self._Y_guess
        if guesses is None or guesses.shape != G.T.shape:
            guesses = np.zeros_like(G.T)
        MinvGT, col_its = self._solve_columns(np.ascontiguousarray(G.T), guesses)
        self._Y_guess = MinvGT
        lam = constraint_inverse(G @ MinvGT, 0.0) @ (G @ u0 - G @ x0)
        return u0 - MinvGT @ lam, (total + sum(col_its), max([total] + col_its), 1 + len(col_its))

    def _solve_columns(self, B, X0):
        """M̃⁻¹ B column by column: the l independent solves of Eq. 3.2.

        PCG runs them on ``threads`` Python threads (the kernels release the GIL), each with private scratch
        arrays; the factorization is shared read-only. The direct and dense solvers back-substitute all columns
        in one call."""
        s = self.s
        if s.linear_solver != "pcg":
            if s.linear_solver == "dense":
                return scipy.linalg.cho_solve(s._chol, B, check_finite=False), [0] * B.shape[1]
            return s.direct_solver.solve(B), [0] * B.shape[1]
        l = B.shape[1]
        if s.threads == 1 or l < 2 or s.model.nv < PARALLEL_MIN_DOFS:  # hand-off costs more than small solves
            cols = [s._pcg(B[:, k], X0[:, k]) for k in range(l)]
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=s.threads)
            chunks = [range(t, l, s.threads) for t in range(s.threads)]
            parts = list(self._pool.map(lambda ks: [(k, self._pcg_private(B[:, k], X0[:, k])) for k in ks], chunks))
            cols = [None] * l
            for part in parts:
                for k, res in part:
                    cols[k] = res
        return np.column_stack([c[0] for c in cols]), [c[1] for c in cols]

    def _pcg_private(self, b, x0):
        """PCG with thread-private scratch (the shared workspace's factorization is only read)."""
        s = self.s
        model = s.model
        n, nv = model.n_bodies, model.nv
        z = np.zeros
        ws = s.ws._replace(pA=z((n, 6)), a=z((n, 6)), u=z(nv), tmp6=z(6), tmp6b=z(6))
        x = x0.copy()
        its = pcg_solve(model.tree, ws, s.A, s.pairs[0], s.pairs[1], s.coupling, s._r, b, x, s.tol, s.max_iter,
                        z(nv), z(nv), z(nv), z(nv), z((n, 6)), z((n, 6)), s._no_rows, s._no_rows, z((0, 0)), z(0))
        return x, its

    # ------------------------------------------------------ closure forces
    def predict_forces(self, t):
        """Set the closure forces a solve at control time t starts its tension from; returns the stepper's joint
        geometric stiffness (None: off). They are the last solve's (``record_closures``) but on a nearly straight
        loop whose forces follow a trend: there the forces the same solve of the step (its index among the solves
        at one t: TR-BDF2 has two) found in the last two steps, dt apart, extrapolated linearly to this one — when
        that extrapolation foresaw the last step's forces better than the step before's did (a loop ringing as its
        load lands, the rigid-tower bridge's first steps, keeps the last forces). A heavy car on a flexible bridge
        changes the deck's tension by a median 4.5 % a step (up to 90 % as it lands), so the last step's forces
        sent 43 % of the steps to a second solve (``forces_moved``); the extrapolation is off by a median 0.4 %,
        beyond FORCE_RTOL on ~11 % of steps. The check is the same: only the first solve's start changes."""
        gs, dt = self.s._joint_gs, self.s.dt
        if gs is not None and gs.closure_wrench is not None and self._solve_t is not None:
            past = self._recorded.setdefault(self._stage, [])  # the last solve's forces, under its stage, after
            if past and not math.isclose(self._solve_t - past[-1][0], dt, rel_tol=1e-6):  # its run of steps dt apart
                past.clear()
            past.append((self._solve_t, gs.closure_wrench))
            del past[:-3]
        self._stage = self._stage + 1 if t == self._solve_t else 0
        self._solve_t = t
        past = self._recorded.get(self._stage, ())
        if not self.straight or len(past) < 3 or not math.isclose(t - past[-1][0], dt, rel_tol=1e-6):
            return gs
        (_, before), (_, last), (_, now) = past
        trend, step = (last - before).ravel(), (now - last).ravel()
        miss = step - trend  # what the extrapolation to the last step missed by; the last forces missed by step
        if miss @ miss < step @ step:
            gs.closure_wrench = now + step.reshape(now.shape)  # (a new array: the recorded ones stay as they are)
        return gs

    def forces_moved(self, before) -> bool:
        """Whether to solve again: the loop is nearly straight (``nearly_straight``; elsewhere the forces of the
        step before serve) and the closure forces just recorded (``record_closures``) differ from ``before``
        (the ones this solve's tension used; None: none yet) by more than FORCE_RTOL of their size."""
        if not self.straight:
            return False
        now = self.s._joint_gs.closure_wrench
        size = float(np.abs(now).max(initial=0.0))
        if before is None:
            return size > 0.0
        return float(np.abs(now - before).max(initial=0.0)) > FORCE_RTOL * size

    # ----------------------------------------------------- post-stabilization
    def project(self, q):
        """Post-stabilization: Gauss–Newton steps q ← q ⊕ α (−P⁻¹Gᵀ (G P⁻¹Gᵀ + μ)⁻¹ C(q)) in the metric of the block
        Jacobi preconditioner P (an SPD stand-in for M̃ that every solver can afford), α halved until max|C|
        falls (at most 5 times), until max|C| < POSITION_TOL (at most MAX_PROJECTIONS steps). The step's own G
        (from its start) serves while it contracts the error at least fourfold per step; else G and P are
        rebuilt at the iterate. Returns (q, the largest remaining |C|); the workspace ends at the returned q.

        The contacts the step's contact stage pressed are held where they are: their normal rows join G with a
        zero target (Cline and Pai 2003, "Post-Stabilization for Rigid Body Simulation with Contact and
        Constraints": one projection onto every active constraint). A closure projection blind to them moves
        its bodies into what they rest on — a crate landing on a rope bridge's middle hinge turns the planks
        there by ~0.3 rad in a 1/48 s step, the closure ends ~1 cm open, and its projection pushed the deck
        10–15 cm into the crate; the contact's projection then broke the closure by up to 0.7 m and the next
        step's target −C/h fed that back as energy (docs/redmax.md, *Loop closures*). What the held contacts
        leave of C the next step's velocity target takes, where contact is unilateral."""
        s = self.s
        model = s.model
        Y, _ = s._projection
        Sinv = self._Sinv_start
        bodies, rows, C = self._errors(q)
        held = pressed_contacts(s.contact.last, s.ws) if s.contact is not None else None
        error = float(np.abs(C).max()) if len(C) else 0.0
        fresh = held is not None  # the step's own G has no contact rows: built at every iterate
        for _ in range(MAX_PROJECTIONS):
            if error < POSITION_TOL:
                break
            if fresh:
                Y, Sinv = self._rows_at(bodies, rows, held)
            direction = -Y.T @ (Sinv[:, :len(C)] @ C)  # (the held contacts' rows, last, aim at no motion)
            alpha = 1.0
            for _ in range(6):
                q_try = q.copy()
                self._k(integrate_kernel, model.joint_type, model.q_start, model.v_start, q_try, direction, alpha,
                        q_try)
                b_try, r_try, C_try = self._errors(q_try)
                e_try = float(np.abs(C_try).max())
                if e_try < error:
                    break
                alpha *= 0.5
            else:  # no decrease along this direction: rebuild at q, or stop if it was fresh already
                self._errors(q)
                if fresh:
                    break
                fresh = True
                continue
            fresh = fresh or e_try > 0.25 * error
            q, bodies, rows, C, error = q_try, b_try, r_try, C_try, e_try
        return q, error

    def _rows_at(self, bodies, rows, held):
        """(Y = (P⁻¹Gᵀ)ᵀ, (G P⁻¹ Gᵀ + μ)⁻¹) at the kinematics in the workspace: G the closures' rows (bodies, rows),
        the prescribed joints' and the held contacts' normal rows (``pressed_contacts``; None: none), in that
        order."""
        s, k = self.s, self._k
        model, ws = s.model, s.ws
        k(articulated_inertia_pass, model.tree, ws, s.A, s._r)  # P at q (A holds body-fixed blocks)
        parts = [np.empty((len(rows), model.nv))]
        k(constraint_jacobian, model.tree, ws, bodies, rows, s._lnk[1], parts[0])
        if len(s._presc_rows[0]):
            parts.append(s.prescribed.unit_rows(s._presc_rows[0]))
        if held is not None:
            contact_bodies, contact_rows = contact_normal_rows(held, ws)
            parts.append(np.empty((len(contact_rows), model.nv)))
            k(constraint_jacobian, model.tree, ws, contact_bodies, np.ascontiguousarray(contact_rows, float), s._lnk[1],
              parts[-1])
        G = np.vstack(parts) if len(parts) > 1 else parts[0]
        Y = np.empty_like(G)
        k(block_jacobi_solve_rows, model.tree, ws, G, Y)
        return Y, constraint_inverse(G @ Y.T)

    def _errors(self, q):
        """(bodies, rows, C) of the closures at q, after the kinematics passes at q into the workspace; C ends with
        the prescribed joints' errors when the step has any (their rows come last in G)."""
        s, k = self.s, self._k
        k(joint_pass, s.model.tree, np.ascontiguousarray(q, float), s.ws)
        k(world_pass, s.model.tree, s.ws)
        bodies, rows, C = self._rows()
        if len(s._presc_rows[0]):
            C = np.concatenate([C, s.prescribed.errors(q, s._presc_end)[1]])
        return bodies, rows, C

    def _rows(self):
        """``loop_closures.constraint_rows`` at the link poses in the workspace, through the entry points."""
        l, ws = self._n_rows, self.s.ws
        row_bodies, rows, errs = np.empty((l, 2), np.int64), np.empty((l, 12)), np.empty(l)
        self._k(constraint_rows_kernel, *self.s._closures, ws.X0_E, ws.X0_r, row_bodies, rows, errs)
        return row_bodies, rows, errs
