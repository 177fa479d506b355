"""Stable PD control (Tan et al. 2011) in four ways: MABA in O(n), dense, sparse and PCG (seed 001).

SPD computes the PD torques from the state one step ahead (Eq. 3–4); for an
articulation in generalized coordinates (Eq. 6)

    τ = −K_p ((q ⊖ q̄) + Δt q̇) − K_d (q̇ + Δt q̈ − q̇̄)

and, substituted into M q̈ + C = τ + τ_ext (Eq. 5), the accelerations solve (Eq. 7)

    (M + Δt K_d) q̈ = Q + τ_ext − C,   Q = −K_p ((q ⊖ q̄) + Δt q̇) − K_d (q̇ − q̇̄)   (Eq. 40)

Methods (``method=``):

* ``"maba"`` — the Modified Articulated-Body Algorithm (Appendix A, Eq. 30–46):
  ABA with Dᵢ = Sᵢᵀ Iᴬᵢ Sᵢ + Kᵢ, Kᵢ = Δt K_d,i (Eq. 37–38) and the joint force
  τᵢ replaced by Qᵢ (Eq. 39–40). The engine's ``aba_kernel`` already adds a
  joint-space diagonal to every Dᵢ — the one it reads from the workspace slot
  ``zero_nv`` (zeros for plain forward dynamics) — so MABA *is* ``aba_kernel``
  run on a workspace view whose slot holds K (``SPDWorkspace.ws_spd``), with Q
  as the joint force: the paper's "two modified lines", no second copy of ABA.
  O(n).
* ``"dense"`` — DF: RNEA for C, CRBA for M, dense LLᵀ (Cholesky) of M + Δt K_d,
  two triangular solves. O(n³).
* ``"sparse"`` — SF: the same M + Δt K_d factored by Featherstone's LTDL with
  branch-induced sparsity (``engine.algorithms.ltdl``). O(n d²), d = depth in
  dofs; cubic on a chain.
* ``"pcg"`` — conjugate gradients on the dense M + Δt K_d with the Jacobi
  (diagonal) preconditioner, cold-started from q̈ = 0, stopped at
  ‖r‖ ≤ tol·‖b‖. O(n²) per iteration.

All four return the same q̈ (to round-off, and to ``tol`` for PCG) and the SPD
torques τ of Eq. 6 (the control alone, without τ_ext). MABA computes q̈
without forming τ (the *embedded* use of Sec. 3.4); τ = Q − Δt K_d q̈ is then
one O(n) line. The *standalone* use — τ first, forward dynamics after — is
what ``engine.control.track(..., standalone=True)`` does.

Position errors on joint manifolds: Eq. 6's ``q + Δt q̇ − q̄`` is computed
joint by joint as ``(q ⊖ q̄) + Δt q̇`` with ``q ⊖ q̄ = difference(q̄, q)`` —
the plain coordinate difference for revolute, prismatic and universal
joints; for spherical joints the rotation vector log(q̄⁻¹ ⊗ q), in the
joint's child coordinates like ω; for the free root the SE(3) log of the
target-to-current pose as a body twist [ω; v] (the inverse of the engine's
exact SE(3) ``integrate``). Adding Δt q̇ in the tangent space is the same
first-order prediction q(t + Δt) ≈ q + Δt q̇ that Eq. 4 makes, and keeps τ
exactly linear in the error and q̇ as in Eq. 6. Quaternions in q̄ must have unit
length, as in q (docs/errors.md: one rule everywhere, nothing renormalised).

Gains: K_p, K_d are diagonal (per dof, ≥ 0). A scalar applies to every dof
except a floating base's six root dofs, which get ``root_kp`` / ``root_kd``
(default 0: the root is not tracked). Giving root gains is the "hand-of-God"
root tracking of Sec. 4.1 (there kp = 20000, kd = 2000 on the root and
75000 / 4000 on the internal joints). Arrays of shape (nv,) are used as given.
``dof_gains`` builds such arrays with per-joint overrides.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .._jit import kernel
from ..conjugate_gradient import CG_DONE, CG_PRECONDITION, CG_PRODUCT, cg_begin, cg_iterations, cg_next
from ..algorithms._checks import as_q, as_v, overflow_error
from ..algorithms.aba import aba_kernel
from ..algorithms.crba import composite_inertia_matrix
from ..algorithms.ltdl import ltdl_factor_kernel, ltdl_solve_kernel
from ..algorithms.rnea import rnea_kernel
from ..integrators import configuration_difference, position_error  # noqa: F401  (q ⊖ q̄ lives with q ⊕ v)

METHODS = ("maba", "dense", "sparse", "pcg")
MABA, DENSE, SPARSE, PCG = 0, 1, 2, 3
METHOD_ID = {name: i for i, name in enumerate(METHODS)}
DEFAULT_TOL = 1e-12  # PCG: relative residual

#: Preallocated arrays of one SPD solver (one per model and thread); kernels never allocate.
SPDWorkspace = namedtuple(
    "SPDWorkspace",
    [
        "ws",        # engine Workspace (plain: its zero_nv slot is zero) — RNEA, CRBA, forward dynamics
        "ws_spd",    # the same arrays, but the reduced-diagonal slot is K below (MABA's Dᵢ + Kᵢ)
        "K",         # (nv,) Δt K_d  (Eq. 38)
        "Q",         # (nv,) −K_p e − K_d (q̇ − q̇̄)  (Eq. 40)
        "force",     # (nv,) joint force fed to ABA: Q + τ_ext (MABA), τ + τ_ext (forward dynamics)
        "err",       # (nv,) position error (q ⊖ q̄) + Δt q̇
        "C",         # (nv,) bias forces C(q, q̇) + g − Jᵀ f_ext (DF, SF, PCG)
        "rhs",       # (nv,) right-hand side of Eq. 7
        "M",         # (nv, nv) joint-space inertia (CRBA; entries off the branch pattern stay 0)
        "A",         # (nv, nv) M + Δt K_d, factored in place (DF: LLᵀ, SF: LTDL)
        "r", "z", "p", "Ap",  # (nv,) PCG vectors
        "zero_nv",   # (nv,) zeros (q̈ = 0 for the bias forces)
        "f_ext",     # (n, 6) zeros: SPD takes joint-space τ_ext only
        "no_values", "no_positions",  # empty arrays: CRBA writes the dense M
        "lam",       # (nv,) dof parents λ (branch-induced sparsity)
    ],
)

#: Per-call SPD settings grouped for the kernels: gains (nv,), time step (s), PCG tolerance and cap.
SPDSettings = namedtuple("SPDSettings", ["kp", "kd", "dt", "tol", "max_iter"])


def make_spd_workspace(model) -> SPDWorkspace:
    """A fresh SPDWorkspace for ``model`` (its own engine Workspace, not ``model.data``)."""
    nv, n = model.nv, model.n_bodies
    ws = model.make_workspace()
    K = np.zeros(nv)
    z = np.zeros
    return SPDWorkspace(
        ws, ws._replace(zero_nv=K), K, z(nv), z(nv), z(nv), z(nv), z(nv), z((nv, nv)), z((nv, nv)),
        z(nv), z(nv), z(nv), z(nv), z(nv), z((n, 6)), z(0), np.zeros((0, 0), dtype=np.int64),
        np.ascontiguousarray(model.dof_parent),
    )


def spd_workspace(model) -> SPDWorkspace:
    """The model's default SPD workspace for the calling thread, created on its first use there (as
    ``model.data``)."""
    mine = model._per_thread
    sw = mine.spd
    if sw is None:
        sw = mine.spd = make_spd_workspace(model)
    return sw


@kernel(inline="llvm")
def spd_joint_terms(tree, sw, ctl, q, qd, q_target, qd_target):
    """K = Δt K_d (Eq. 38) and Q = −K_p ((q ⊖ q̄) + Δt q̇) − K_d (q̇ − q̇̄) (Eq. 40), O(n)."""
    position_error(tree, q, qd, q_target, ctl.dt, sw.err)
    for k in range(qd.shape[0]):
        sw.K[k] = ctl.kd[k] * ctl.dt
        sw.Q[k] = -ctl.kp[k] * sw.err[k] - ctl.kd[k] * (qd[k] - qd_target[k])


# ------------------------------------------------------------ the four solvers
@kernel(inline="llvm")
def maba_solve(tree, sw, q, qd, tau_ext, qdd):
    """MABA (Eq. 30–46): ABA with Dᵢ += Kᵢ and joint force Qᵢ + τ_ext,ᵢ; needs spd_joint_terms."""
    for k in range(qd.shape[0]):
        sw.force[k] = sw.Q[k] + tau_ext[k]
    aba_kernel(tree, q, qd, sw.force, sw.f_ext, sw.ws_spd, qdd)


@kernel
def spd_system(tree, sw, q, qd, tau_ext):
    """M (CRBA), C (RNEA with q̈ = 0) and the right-hand side Q + τ_ext − C of Eq. 7."""
    rnea_kernel(tree, q, qd, sw.zero_nv, sw.f_ext, 1.0, sw.ws, sw.C)  # also runs joint_pass for q
    composite_inertia_matrix(tree, sw.ws, tree.link_inertia, sw.M, sw.no_values, sw.no_positions)
    for k in range(qd.shape[0]):
        sw.rhs[k] = sw.Q[k] + tau_ext[k] - sw.C[k]


@kernel
def dense_cholesky_factor(A, n):
    """In place: lower triangle of A (n, n) → L with A = L Lᵀ; returns 0 or the failing row + 1.

    Row-oriented Cholesky–Crout: each entry is a dot product of two contiguous
    row prefixes (vectorises). Reads only the lower triangle.
    """
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if not s > 0.0:
            return j + 1
        d = math.sqrt(s)
        A[j, j] = d
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= A[i, k] * A[j, k]
            A[i, j] = t / d
    return 0


@kernel
def dense_cholesky_solve(L, x):
    """In place: x ← (L Lᵀ)⁻¹ x with L from dense_cholesky_factor."""
    n = x.shape[0]
    for i in range(n):
        t = x[i]
        for k in range(i):
            t -= L[i, k] * x[k]
        x[i] = t / L[i, i]
    for i in range(n - 1, -1, -1):
        t = x[i]
        for k in range(i + 1, n):
            t -= L[k, i] * x[k]
        x[i] = t / L[i, i]


@kernel
def dense_solve(sw, qdd):
    """DF: A = M + Δt K_d (lower triangle), dense LLᵀ, two triangular solves; needs spd_system."""
    n = qdd.shape[0]
    for i in range(n):
        for j in range(i):
            sw.A[i, j] = sw.M[i, j]
        sw.A[i, i] = sw.M[i, i] + sw.K[i]
        qdd[i] = sw.rhs[i]
    bad = dense_cholesky_factor(sw.A, n)
    if bad:
        for i in range(n):
            qdd[i] = math.nan
        return
    dense_cholesky_solve(sw.A, qdd)


@kernel
def sparse_solve(sw, qdd):
    """SF: copy the branch-induced pattern of M + Δt K_d, LTDL factor and solve (RBDA §6.5); needs spd_system."""
    n = qdd.shape[0]
    lam = sw.lam
    for k in range(n):
        sw.A[k, k] = sw.M[k, k] + sw.K[k]
        j = lam[k]
        while j >= 0:
            sw.A[k, j] = sw.M[k, j]
            j = lam[j]
        qdd[k] = sw.rhs[k]
    bad = ltdl_factor_kernel(sw.A, lam)
    if bad:
        for i in range(n):
            qdd[i] = math.nan
        return
    ltdl_solve_kernel(sw.A, lam, qdd)


@kernel
def pcg_solve(sw, tol, max_iter, qdd):
    """PCG with the Jacobi preconditioner on (M + Δt K_d) q̈ = rhs, from q̈ = 0; returns iterations.

    The CG recurrences are ``engine.conjugate_gradient``'s; this supplies the dense product and the
    diagonal. Stops when ‖r‖ ≤ tol·‖rhs‖ (or after max_iter iterations); needs spd_system.
    """
    n = qdd.shape[0]
    M, K, b, r, z, p, Ap = sw.M, sw.K, sw.rhs, sw.r, sw.z, sw.p, sw.Ap
    for k in range(n):
        qdd[k] = 0.0
    request, state = cg_begin(qdd, p)
    while request != CG_DONE:
        if request == CG_PRODUCT:
            for i in range(n):
                s = K[i] * p[i]
                for j in range(n):
                    s += M[i, j] * p[j]
                Ap[i] = s
        elif request == CG_PRECONDITION:
            for k in range(n):
                z[k] = r[k] / (M[k, k] + K[k])
        request, state = cg_next(state, tol, max_iter, qdd, b, r, z, p, Ap)
    return cg_iterations(state)


@kernel
def spd_kernel(tree, sw, ctl, method, q, qd, q_target, qd_target, tau_ext, qdd, tau):
    """q̈ (nv,) of Eq. 7 by ``method`` (MABA / DENSE / SPARSE / PCG) and τ (nv,) of Eq. 6; returns PCG iterations."""
    spd_joint_terms(tree, sw, ctl, q, qd, q_target, qd_target)
    its = 0
    if method == MABA:
        maba_solve(tree, sw, q, qd, tau_ext, qdd)
    else:
        spd_system(tree, sw, q, qd, tau_ext)
        if method == DENSE:
            dense_solve(sw, qdd)
        elif method == SPARSE:
            sparse_solve(sw, qdd)
        else:
            its = pcg_solve(sw, ctl.tol, ctl.max_iter, qdd)
    for k in range(qd.shape[0]):
        tau[k] = sw.Q[k] - sw.K[k] * qdd[k]  # Eq. 6
    return its


# ------------------------------------------------------------ launchers
def _positive_time_step(dt) -> float:
    try:
        dt = float(dt)
    except (TypeError, ValueError):
        raise ValueError(f"dt must be a positive number of seconds, got {dt!r}") from None
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be a positive number of seconds, got {dt}")
    return dt


def _check_gain_values(model, g: np.ndarray, name: str) -> None:
    bad = np.flatnonzero(~np.isfinite(g) | (g < 0))
    if bad.size:
        k = int(bad[0])
        j = model.joint_names[int(model.dof_body[k])] if model.nv else "?"
        raise ValueError(f"{name}[{k}] is {g[k]} (joint '{j}'): gains must be finite and ≥ 0")


def dof_gains(model, value, *, root=0.0, joints=None, name: str = "gain") -> np.ndarray:
    """(nv,) per-dof gains: ``value`` on every dof, ``root`` on a floating base's six root dofs,
    then ``joints`` = {joint name: scalar or per-dof sequence} overrides.

    value: scalar or (nv,) (an array is taken as given, root dofs included).
    Raises ValueError (naming ``name``) for negative or non-finite gains,
    wrong lengths or unknown joint names.
    """
    if np.ndim(value) == 0:
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number or an array of {model.nv} numbers, got {value!r}") from None
        g = np.full(model.nv, v)
        if model.is_floating:
            try:
                g[:6] = float(root)
            except (TypeError, ValueError):
                raise ValueError(f"root {name} must be a number, got {root!r}") from None
    else:
        g = np.array(value, dtype=float).reshape(-1) if np.size(value) else np.zeros(0)
        if g.shape != (model.nv,):
            raise ValueError(f"{name}: expected a number or {model.nv} per-dof values, got shape {np.shape(value)}")
    for jname, jv in (joints or {}).items():
        try:
            sl = model.v_slice(jname)
        except KeyError:
            raise ValueError(f"{name}: no joint named '{jname}'") from None
        vals = np.asarray(jv, dtype=float).reshape(-1)
        if vals.size not in (1, sl.stop - sl.start):
            raise ValueError(f"{name} for joint '{jname}': expected 1 or {sl.stop - sl.start} values, got {vals.size}")
        g[sl] = vals
    _check_gain_values(model, g, name)
    return g


def spd_settings(model, kp, kd, dt, *, root_kp=0.0, root_kd=0.0, tol=DEFAULT_TOL, max_iter=None) -> SPDSettings:
    """Checked SPDSettings: gains as in ``dof_gains``, dt > 0 (s), PCG tol > 0 and max_iter (default 10·nv + 10)."""
    dt = _positive_time_step(dt)
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive number, got {tol}")
    max_iter = 10 * model.nv + 10 if max_iter is None else int(max_iter)
    if max_iter < 1:
        raise ValueError(f"max_iter must be ≥ 1, got {max_iter}")
    return SPDSettings(dof_gains(model, kp, root=root_kp, name="kp"), dof_gains(model, kd, root=root_kd, name="kd"),
                       dt, float(tol), max_iter)


def _method_id(method: str) -> int:
    if method not in METHOD_ID:
        raise ValueError(f"method must be one of {', '.join(repr(m) for m in METHODS)}, got {method!r}")
    return METHOD_ID[method]


def spd(model, q, qd, q_target, kp, kd, dt, tau_ext=None, method: str = "maba", *, qd_target=None,
        root_kp=0.0, root_kd=0.0, tol=DEFAULT_TOL, max_iter=None):
    """Stable PD: accelerations q̈ (nv,) and SPD torques τ (nv,) (Eq. 6–7).

    q: (nq,) configuration; qd: (nv,) velocities; q_target: (nq,) reference
    configuration q̄ (quaternions for spherical/free joints); kp (N·m/rad or
    N/m), kd (N·m·s/rad or N·s/m): scalars or (nv,) per-dof gains ≥ 0 — a
    scalar leaves a floating base's root dofs to ``root_kp`` / ``root_kd``
    (default 0, untracked); dt: time step (s) > 0; tau_ext: optional (nv,)
    other joint forces (N·m, N) acting this step; method: ``"maba"``,
    ``"dense"``, ``"sparse"`` or ``"pcg"``; qd_target: optional (nv,)
    reference velocities q̇̄ (default 0, as in the paper's Eq. 2).
    tol / max_iter: PCG stopping rule (relative residual; default 10·nv + 10).

    Returns (q̈, τ) with M q̈ + C = τ + τ_ext and τ = Q − Δt K_d q̈. Bad input
    raises ValueError naming the argument.
    """
    mid = _method_id(method)
    ctl = spd_settings(model, kp, kd, dt, root_kp=root_kp, root_kd=root_kd, tol=tol, max_iter=max_iter)
    q = as_q(model, q)
    qd = as_v(model, qd, "qd")
    q_target = as_q(model, q_target, "q_target")
    qd_target = np.zeros(model.nv) if qd_target is None else as_v(model, qd_target, "qd_target")
    tau_ext = np.zeros(model.nv) if tau_ext is None else as_v(model, tau_ext, "tau_ext")
    qdd = np.empty(model.nv)
    tau = np.empty(model.nv)
    spd_kernel(model.tree, spd_workspace(model), ctl, mid, q, qd, q_target, qd_target, tau_ext, qdd, tau)
    if not (np.isfinite(qdd).all() and np.isfinite(tau).all()):
        raise overflow_error("spd", "q̈ or τ", (("q", q), ("qd", qd), ("q_target", q_target), ("kp", ctl.kp),
                                                ("kd", ctl.kd), ("tau_ext", tau_ext)))
    return qdd, tau


def spd_torques(model, q, qd, q_target, kp, kd, dt, tau_ext=None, method: str = "maba", **options) -> np.ndarray:
    """Standalone SPD: only the torques τ (nv,) of Eq. 6 (arguments as ``spd``), e.g. to inspect or
    clamp them before a separate forward-dynamics call with τ + τ_ext."""
    return spd(model, q, qd, q_target, kp, kd, dt, tau_ext, method, **options)[1]
