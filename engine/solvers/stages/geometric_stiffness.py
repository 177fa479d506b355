"""Geometric stiffness of the joints for the RedMax linearly implicit step (issue #22).

The step (thesis 000, Eq. 2.13) treats only the springs' K implicitly. The
reduced force of a world-fixed force f_i acting at a body point x_i(q) is
Q = Σ_i J_iᵀ f_i, and its derivative with f held fixed,

    K_joint = −∂(Jᵀ f)/∂q = −Σ_i f_i · ∂²x_i/∂q∂q,

is the *geometric stiffness of the joints* (Tournier et al. 2015, "Stable
Constrained Dynamics"; thesis §2.4 names it and leaves it out). Gravity
builds tension along a hanging chain, and this term is its stiffness: a
chain of N links has modes of frequency ~√(N g / ℓ) that an explicit
treatment of gravity cannot step at 1/30 s.

Segments. For rotational dofs j, k (world axes s_j, s_k, both upstream of
x_i, k upstream of or equal to j): ∂²x_i/∂q_j∂q_k = s_k × (s_j × (x_i − p_j)),
p_j the joint's point. The lever x_i − p_j is a sum of *segments*: on every
body l, from its joint point p_l to each child's joint point (d = the child's
origin) carrying the total force F_c of the child's subtree, and from p_l to
its centre of mass carrying its own weight m_l g. With T_l = Σ_σ d_σ F_σᵀ over
body l's segments (link coordinates) and M_l = tr(T_l) I − T_l,

    K_joint[j, k] = s_kᵀ (Σ_{l in subtree of j} M_l) s_j      (k upstream of j)

(exact for 1-dof joints; ``exact_joint_stiffness``, checked against finite
differences of the generalized gravity force in tests/test_geometric_stiffness.py).

Projection (what the solvers use). M_l is not symmetric in general, and the
ordered sum above is not of the form Wᵀ M W. The step uses instead

    K⁺ = Σ_l J_ω,lᵀ Π(sym M_l) J_ω,l

with J_ω,l the angular rows of body l's Jacobian (its angular velocity) and
Π the projection of the 3 × 3 symmetric part onto its non-negative
eigenvalues — the *tension part*: a taut segment (F_σ along d_σ, pulling)
gives M_σ = (d_σ·F_σ)(I − d̂d̂ᵀ) ⪰ 0, exactly Tournier's λ/ℓ (I − uuᵀ) for a
rod; compressed segments (an upright chain) are dropped. K⁺ is symmetric
positive semi-definite, so M̃ stays SPD, and it equals K_joint whenever every
segment's force lies along it (a chain hanging at rest in a plane). Because
K⁺ is block diagonal in maximal coordinates, it is added to each body's
own block A_l (its angular 3 × 3) as h² Π(sym M_l): the PCG product
Jᵀ A J, the projected block Jacobi preconditioner (exact for it) and the
direct/dense assemblies all carry it at no extra cost per product.

Forces included: gravity and the inertial (d'Alembert) force −m a of each
body's centre of mass, with a its velocity-product (centripetal, Coriolis)
acceleration at q̈ = 0 — the tension a swinging or whipping chain adds; both
act at the centre of mass and are transmitted upstream. Also the force part
of every maximal wrench of the step (springs, cables, point forces),
transmitted through the joints to the bodies upstream; the lever-arm term of
a spring on its own body is the springs' own geometric term (Eq. 2.37/2.41),
selected separately (``"springs"``). Loop-closure forces (a rope pinned at
both ends) enter as they were in the previous step (``record_closures``).
Not included: contact forces, whose tension stays explicit. ``exact_joint_stiffness`` covers gravity
(and the transmitted wrench forces) only, which is what the finite differences check.
"""
from __future__ import annotations

import math

import numpy as np

from ..._jit import kernel
from ...errors import SimulatorOptionError
from ...spatial import transform_motion

# geometric_stiffness option → (joints, springs)
MODES = {False: (False, False), None: (False, False), "off": (False, False), True: (True, False),
         "joints": (True, False), "springs": (False, True), "all": (True, True)}


def parse_geometric_stiffness(value):
    """(joints, springs) flags for the ``geometric_stiffness`` option of the RedMax solvers.

    ``"joints"`` / True (default): the joints' geometric stiffness K⁺ of this module;
    ``"springs"``: only the springs' own symmetrized geometric terms (Eq. 2.37/2.41);
    ``"all"``: both; False / ``"off"``: neither (the thesis's step)."""
    try:
        return MODES[value]
    except (KeyError, TypeError):
        raise SimulatorOptionError(f"Simulator option 'geometric_stiffness' must be one of False, True, 'joints', 'springs', 'all', 'off'; "
                         f"got {value!r}") from None


@kernel(inline="llvm", refcounts=False)
def com_acceleration(w, al, c, out):
    """out (3,) = classical acceleration of the body point c (link coordinates) for the body's
    twist w = [ω; v₀] and spatial acceleration al = [α; a₀]: a₀ + α × c + ω × (v₀ + ω × c)."""
    u0 = w[3] + w[1] * c[2] - w[2] * c[1]
    u1 = w[4] + w[2] * c[0] - w[0] * c[2]
    u2 = w[5] + w[0] * c[1] - w[1] * c[0]
    out[0] = al[3] + al[1] * c[2] - al[2] * c[1] + w[1] * u2 - w[2] * u1
    out[1] = al[4] + al[2] * c[0] - al[0] * c[2] + w[2] * u0 - w[0] * u2
    out[2] = al[5] + al[0] * c[1] - al[1] * c[0] + w[0] * u1 - w[1] * u0


@kernel(inline=True)
def body_velocity_product(tree, ws, i, com, acc6, out):
    """acc6[i] = Xup acc6[parent] + c_i, body i's spatial acceleration at q̈ = 0 (parents first), and
    out (3,) = the classical acceleration of its centre of mass com (link coordinates) from it."""
    p = tree.parent[i]
    if p >= 0:
        transform_motion(ws.Xup_E[i], ws.Xup_r[i], acc6[p], acc6[i])
    else:
        for k in range(6):
            acc6[i, k] = 0.0
    for k in range(6):
        acc6[i, k] += ws.c[i, k]
    com_acceleration(ws.v[i], acc6[i], com, out)


@kernel(inline="llvm")
def segment_tensors(tree, ws, mass, com, gravity, wrench, inertial, acc6, own, F, T):
    """T[l] (n, 3, 3) = Σ_σ d_σ F_σᵀ over body l's segments, link coordinates of l (see module doc).

    mass (n,), com (n, 3) link coordinates, gravity (3,) world; wrench (n, 6) the maximal
    wrenches [n; f] in link coordinates (only f is used); ``inertial``: add −m a at each centre of
    mass, a its velocity-product acceleration at q̈ = 0 (needs velocity_pass). Scratch: acc6 (n, 6)
    spatial accelerations at q̈ = 0, own (n, 3) each body's weight (+ inertial force) in link
    coordinates, F (n, 3) left holding each subtree's total force in world coordinates.
    Needs joint_pass and world_pass."""
    n = tree.parent.shape[0]
    acc = np.zeros(3)
    for i in range(n):  # own forces at the centre of mass; spatial accelerations a_i = Xup a_p + c_i
        E = ws.X0_E[i]  # world → link i
        if inertial:
            body_velocity_product(tree, ws, i, com[i], acc6, acc)
        for a in range(3):
            own[i, a] = mass[i] * (E[a, 0] * gravity[0] + E[a, 1] * gravity[1] + E[a, 2] * gravity[2] - acc[a])
        for a in range(3):
            F[i, a] = (E[0, a] * (own[i, 0] + wrench[i, 3]) + E[1, a] * (own[i, 1] + wrench[i, 4])
                       + E[2, a] * (own[i, 2] + wrench[i, 5]))
    for i in range(n - 1, -1, -1):
        p = tree.parent[i]
        if p >= 0:
            for a in range(3):
                F[p, a] += F[i, a]
    for i in range(n):  # own segment: joint → centre of mass
        for a in range(3):
            for b in range(3):
                T[i, a, b] = com[i, a] * own[i, b]
    for c in range(n):  # the segment from the parent's joint to the child's, carrying the child's subtree
        p = tree.parent[c]
        if p < 0:
            continue
        E = ws.X0_E[p]
        f0 = E[0, 0] * F[c, 0] + E[0, 1] * F[c, 1] + E[0, 2] * F[c, 2]
        f1 = E[1, 0] * F[c, 0] + E[1, 1] * F[c, 1] + E[1, 2] * F[c, 2]
        f2 = E[2, 0] * F[c, 0] + E[2, 1] * F[c, 1] + E[2, 2] * F[c, 2]
        for a in range(3):
            d = ws.Xup_r[c, a]
            T[p, a, 0] += d * f0
            T[p, a, 1] += d * f1
            T[p, a, 2] += d * f2


@kernel(inline="llvm", refcounts=False)
def _eigenvector(M, lam, v):
    """Unit eigenvector v of the symmetric 3 × 3 M for its simple eigenvalue lam: the longest cross
    product of two rows of M − lam I."""
    best = -1.0
    for r in range(3):
        s = (r + 1) % 3
        a0, a1, a2 = M[r, 0], M[r, 1], M[r, 2]
        b0, b1, b2 = M[s, 0], M[s, 1], M[s, 2]
        if r == 0:
            a0 -= lam
            b1 -= lam
        elif r == 1:
            a1 -= lam
            b2 -= lam
        else:
            a2 -= lam
            b0 -= lam
        c0 = a1 * b2 - a2 * b1
        c1 = a2 * b0 - a0 * b2
        c2 = a0 * b1 - a1 * b0
        nn = c0 * c0 + c1 * c1 + c2 * c2
        if nn > best:
            best = nn
            v[0], v[1], v[2] = c0, c1, c2
    nrm = math.sqrt(best) if best > 0 else 1.0
    for k in range(3):
        v[k] /= nrm


@kernel(inline="llvm", refcounts=False)
def psd_part(M, v, out):
    """out = Π(M) for a symmetric 3 × 3 M: its eigenvalues below 0 set to 0 (closed form:
    trigonometric eigenvalues, eigenvectors by cross products; v (3,) scratch)."""
    p1 = M[0, 1] ** 2 + M[0, 2] ** 2 + M[1, 2] ** 2
    q = (M[0, 0] + M[1, 1] + M[2, 2]) / 3.0
    p2 = (M[0, 0] - q) ** 2 + (M[1, 1] - q) ** 2 + (M[2, 2] - q) ** 2 + 2.0 * p1
    for a in range(3):
        for b in range(3):
            out[a, b] = M[a, b]
    if p2 == 0.0:  # a multiple of I
        if q < 0.0:
            for a in range(3):
                out[a, a] = 0.0
        return
    p = math.sqrt(p2 / 6.0)
    b00, b11, b22 = (M[0, 0] - q) / p, (M[1, 1] - q) / p, (M[2, 2] - q) / p
    b01, b02, b12 = M[0, 1] / p, M[0, 2] / p, M[1, 2] / p
    r = 0.5 * (b00 * (b11 * b22 - b12 * b12) - b01 * (b01 * b22 - b12 * b02) + b02 * (b01 * b12 - b11 * b02))
    r = min(1.0, max(-1.0, r))
    phi = math.acos(r) / 3.0
    hi = q + 2.0 * p * math.cos(phi)
    lo = q + 2.0 * p * math.cos(phi + 2.0 * math.pi / 3.0)
    mid = 3.0 * q - hi - lo
    tol = 1e-13 * p
    if lo >= -tol:
        return
    if hi <= tol:
        for a in range(3):
            for b in range(3):
                out[a, b] = 0.0
        return
    if mid >= -tol:  # one negative eigenvalue: remove it
        _eigenvector(M, lo, v)
        for a in range(3):
            for b in range(3):
                out[a, b] -= lo * v[a] * v[b]
        return
    _eigenvector(M, hi, v)  # only the largest is positive
    for a in range(3):
        for b in range(3):
            out[a, b] = hi * v[a] * v[b]


@kernel(inline="llvm")
def add_tension_blocks(T, scale, A):
    """A[l, :3, :3] += scale · Π(tr(T_l) I − sym T_l) for every body (Π: clamp eigenvalues at 0)."""
    n = T.shape[0]
    M = np.empty((3, 3))
    P = np.empty((3, 3))
    v = np.empty(3)
    for i in range(n):
        tr = T[i, 0, 0] + T[i, 1, 1] + T[i, 2, 2]
        for a in range(3):
            for b in range(3):
                M[a, b] = -0.5 * (T[i, a, b] + T[i, b, a])
            M[a, a] += tr
        psd_part(M, v, P)
        for a in range(3):
            for b in range(3):
                A[i, a, b] += scale * P[a, b]


_SIX = np.arange(6)


class JointGeometricStiffness:
    """Scratch and one call per step: ``add(model, wrench, h, A)`` adds h² K⁺ to the body blocks A."""

    def __init__(self, model, inertial=False):
        self.inertial = bool(inertial)
        n = model.n_bodies
        self.F = np.zeros((n, 3))
        self.acc6 = np.zeros((n, 6))
        self.own = np.zeros((n, 3))
        self.closure_wrench = None  # the last step's loop-closure forces, link wrenches (n, 6)
        self.T = np.zeros((n, 3, 3))
        self._mass = np.ascontiguousarray(model.body_mass, float)
        self._com = np.ascontiguousarray(model.body_com, float)
        self._gravity = np.ascontiguousarray(model.gravity, float)

    def record_closures(self, model, row_bodies, rows, Y, Sinv, residual, h, impulse=None):
        """Keep the loop-closure forces of the step just solved for the next step's tension.

        residual = M̃ q̇⁺ − f̃ = Gᵀ μ, the constraint impulse in joint space (G (l, nv) the rows'
        J-transposes); with Y = (P⁻¹Gᵀ)ᵀ and Sinv = (G P⁻¹ Gᵀ)⁺ of the step, μ = Sinv Y residual
        (redundant rows are fine: Gᵀμ is what counts; ``impulse``: Sinv Y residual when the caller has it);
        the force on each row's bodies is rows_k μ_k / h."""
        impulse = Sinv @ (Y @ residual) if impulse is None else impulse
        mu = (impulse / h)[:len(rows)]  # (rows after the closures', e.g. prescribed joints, apply no wrench)
        # Σ over each body's rows, the a sides' in row order, then the b sides': one bincount adds them in that
        # order, as np.add.at side by side did (the same bits, a tenth of the time)
        bodies = row_bodies.T  # (2, l)
        on = bodies >= 0
        parts = (rows.reshape(-1, 2, 6) * mu[:, None, None]).transpose(1, 0, 2)[on]
        index = bodies[on][:, None] * 6 + _SIX
        self.closure_wrench = np.bincount(index.ravel(), parts.ravel(), 6 * model.n_bodies).reshape(-1, 6)

    def add(self, model, wrench, h, A, ws=None):
        """A (n, 6, 6) += h² Π(sym M_l) on each angular block; needs the step's joint_pass/world_pass
        in ``ws`` (the stepper's workspace; default ``model.data``)."""
        if self.closure_wrench is not None:
            wrench = wrench + self.closure_wrench
        segment_tensors(model.tree, model.data if ws is None else ws, self._mass, self._com, self._gravity,
                        wrench, self.inertial, self.acc6, self.own, self.F, self.T)
        add_tension_blocks(self.T, h * h, A)


def tension_blocks(model, wrench=None) -> np.ndarray:
    """Π(sym M_l) (n, 3, 3) at the model's current kinematics (link coordinates): K⁺ = Σ J_ωᵀ Π J_ω."""
    n = model.n_bodies
    out = np.zeros((n, 6, 6))
    JointGeometricStiffness(model).add(model, np.zeros((n, 6)) if wrench is None else wrench, 1.0, out)
    return out[:, :3, :3].copy()


def exact_joint_stiffness(model, wrench=None, inertial=False) -> np.ndarray:
    """K_joint = −∂(Jᵀ f)/∂q (nv, nv), unprojected, at the model's current kinematics, for trees of
    1-dof joints (revolute, prismatic: a prismatic dof has no angular axis and contributes 0 as s_k;
    its own lever terms are not covered). Dense numpy reference for the tests; O(n²)."""
    tree, ws = model.tree, model.data
    n, nv = model.n_bodies, model.nv
    if np.any(model.tree.joint_nv > 1):
        raise ValueError("exact_joint_stiffness: only trees of 1-dof joints")
    gs = JointGeometricStiffness(model)
    segment_tensors(tree, ws, gs._mass, gs._com, np.ascontiguousarray(model.gravity, float),
                    np.zeros((n, 6)) if wrench is None else wrench, inertial, gs.acc6, gs.own, gs.F, gs.T)
    Mw = np.empty((n, 3, 3))  # M_l in world coordinates
    for i in range(n):
        E = ws.X0_E[i]
        Mw[i] = E.T @ (np.trace(gs.T[i]) * np.eye(3) - gs.T[i]) @ E
    sub = Mw.copy()  # Σ over each body's subtree
    for i in range(n - 1, -1, -1):
        if tree.parent[i] >= 0:
            sub[tree.parent[i]] += sub[i]
    axis = np.zeros((nv, 3))
    for i in range(n):
        for d in range(tree.joint_nv[i]):
            axis[tree.v_start[i] + d] = ws.X0_E[i].T @ ws.S[tree.v_start[i] + d, :3]
    dof_body = np.repeat(np.arange(n), tree.joint_nv)
    K = np.zeros((nv, nv))
    for j in range(nv):
        k = j
        while k >= 0:  # k upstream of or equal to j
            K[j, k] = K[k, j] = axis[k] @ sub[dof_body[j]] @ axis[j]
            k = model.dof_parent[k]
    return K
