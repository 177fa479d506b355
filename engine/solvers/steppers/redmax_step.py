"""The RedMax step's per-step work in one kernel call (issue #21: small-model overhead).

``assemble_system`` does, on one kinematics pass at (q, q̇), everything the
step needs before its linear solve (``engine.solvers.steppers.redmax``, Eq. 2.13–2.15):

1. joint, world and velocity passes;
2. the forces stage (``engine.forces``): spring/cable/damper wrenches with their
   K, D blocks, point forces, joint springs f_r = −K_r (q ⊖ q_rest);
3. the body blocks A and couplings of M̃ (``assemble_blocks``) and, when on, the
   joints' geometric stiffness h² K⁺ (``geometric_stiffness``);
4. the right-hand side M q̇ + h (f_r − bias): the bias C + g − Jᵀ f_m is RNEA's two
   passes on the kinematics above, M q̇ = Jᵀ (M_m v) one inward pass (v = J q̇);
5. optionally the preconditioner's articulated inertias (PCG).

``pcg_step`` adds the PCG solve and q⁺ = q ⊕ h q̇⁺: the whole step of a scene
without loop closures, contact or enforced limits in one call, made through
``_jit.compiled_for`` (numba's per-call argument typing skipped). A Python step
built from the separate stages made about 70 calls (each paying numba's
argument checks on the grouped model arrays) and ran the kinematics passes
four times; the results are the same up to rounding (the bias and M q̇ were
two full RNEA calls, each redoing the kinematics).

The stepper's buffers travel in three groups (namedtuples, built once per stepper):
``ForceArrays`` (the force evaluator's outputs), ``TensionArrays`` (the joints'
geometric stiffness scratch) and ``SystemArrays`` (A, couplings, r, f_r, bias, rhs).
The last two live in one buffer each (``tension_buffer``, ``system_buffer``), which
``pcg_step`` takes whole with the tree and workspace of a ``FlatModel``: fewer arrays
to hand over per call, and views inside that carry no reference counts.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from ..._jit import borrowed, contiguous_view, kernel
from ...algorithms._flat import unpack_tree, unpack_workspace
from ...algorithms.aba import articulated_inertia_pass
from ...algorithms.kinematics import joint_pass, velocity_pass, world_pass
from ...algorithms.rnea import rnea_passes
from ...forces.point_force import point_force_kernel
from ...forces.point_pair import point_pair_kernel
from ...integrators import integrate_kernel, position_error
from ...spatial import inertia_times
from ..linalg.block_jacobi import block_jacobi_solve, pcg_solve
from ...forces.energy import damping_power, scene_energy
from ..stages.geometric_stiffness import add_tension_blocks, segment_tensors
from ..linalg.reduced_operators import jacobian_transpose_product

# wrench, wrench_damping (n, 6); K, D (m, 12, 12); active (m,); body_damping_blocks (n, 6, 6);
# joint_stiffness, joint_damping (nv,); spring_v: dofs with joint springs; difference, zero_v (nv,) scratch / zeros
ForceArrays = namedtuple("ForceArrays", "wrench wrench_damping K D active body_damping_blocks joint_stiffness "
                                        "joint_damping spring_v difference zero_v")
# segment_tensors' inputs and scratch; closure_wrench (n, 6): the last step's loop-closure forces;
# wrench_total (n, 6) scratch: wrench + closure_wrench
TensionArrays = namedtuple("TensionArrays", "mass com gravity closure_wrench wrench_total acc6 own F T")
# A (n, 6, 6), coupling (m, 6, 6), reduced_diag r (nv,) = h D_r + h² K_r (constant), f_r, bias, rhs (nv,),
# y, w (n, 6) scratch, no_rows (0, nv), no_inverse (0, 0), no_lam (0,): the empty constraint rows of plain PCG
SystemArrays = namedtuple("SystemArrays", "A coupling reduced_diag f_r bias rhs y w no_rows no_inverse no_lam")


def force_arrays(fe, model) -> ForceArrays:
    """The ForceArrays view of a ``ForceEvaluator`` (shares its output arrays)."""
    return ForceArrays(fe.wrench, fe.wrench_damping, fe.K, fe.D, fe.active, fe.body_damping_blocks,
                       fe.joint_stiffness, np.ascontiguousarray(fe.joint_damping, float), fe._spring_v,
                       np.zeros(model.nv), np.zeros(model.nv))


@kernel(inline=True)
def tension_offsets(n):
    """Where ``tension_buffer`` puts the TensionArrays fields (their order), then the buffer's length."""
    return (0, n, 4 * n, 4 * n + 3, 10 * n + 3, 16 * n + 3, 22 * n + 3, 25 * n + 3, 28 * n + 3, 37 * n + 3)


def tension_buffer(gs, model):
    """(buffer, TensionArrays): a ``JointGeometricStiffness``'s tension arrays as views into one buffer
    of the stepper's own (the masses, centres of mass and gravity copied from ``gs``; scratch of its own),
    which ``pcg_step`` takes whole (``unpack_tension``) instead of 9 arrays."""
    n = model.n_bodies
    o = tension_offsets(n)
    buf = np.zeros(o[9])
    shapes = ((n,), (n, 3), (3,), (n, 6), (n, 6), (n, 6), (n, 3), (n, 3), (n, 3, 3))
    ta = TensionArrays(*(buf[o[k]:o[k + 1]].reshape(shape) for k, shape in enumerate(shapes)))
    ta.mass[:], ta.com[:], ta.gravity[:] = gs._mass, gs._com, gs._gravity
    return buf, ta


@kernel(inline=True)
def unpack_tension(buf, n):
    """``tension_buffer``'s TensionArrays as borrowed views."""
    o = tension_offsets(n)
    return TensionArrays(contiguous_view(buf, o[0], (n,)), contiguous_view(buf, o[1], (n, 3)),
                         contiguous_view(buf, o[2], (3,)), contiguous_view(buf, o[3], (n, 6)),
                         contiguous_view(buf, o[4], (n, 6)), contiguous_view(buf, o[5], (n, 6)),
                         contiguous_view(buf, o[6], (n, 3)), contiguous_view(buf, o[7], (n, 3)),
                         contiguous_view(buf, o[8], (n, 3, 3)))


@kernel(inline=True)
def system_offsets(n, nv, m):
    """Where ``system_buffer`` puts A, coupling, reduced_diag, f_r, bias, rhs, y, w, the empty rows (all
    three at one offset), PCG's r, z, p, Ap and the guard's energies (4,); then the buffer's length."""
    o_c = 36 * n
    o_rd = o_c + 36 * m
    o_y = o_rd + 4 * nv
    o_r = o_y + 12 * n
    o_e = o_r + 4 * nv
    return (0, o_c, o_rd, o_rd + nv, o_rd + 2 * nv, o_rd + 3 * nv, o_y, o_y + 6 * n, o_r, o_r, o_r + nv,
            o_r + 2 * nv, o_r + 3 * nv, o_e, o_e + 4)


def system_buffer(model, n_pairs: int, reduced_diag):
    """(buffer, SystemArrays, [r, z, p, Ap], energies): the stepper's own float arrays as views into one
    buffer, which ``pcg_step`` takes whole (``unpack_system``) instead of 16 arrays."""
    n, nv = model.n_bodies, model.nv
    o = system_offsets(n, nv, n_pairs)
    buf = np.zeros(o[14])

    def view(k, shape):
        return buf[o[k]:o[k] + math.prod(shape)].reshape(shape)  # (not np.prod: ≈ 1.5 µs a call)

    sa = SystemArrays(view(0, (n, 6, 6)), view(1, (n_pairs, 6, 6)), view(2, (nv,)), view(3, (nv,)), view(4, (nv,)),
                      view(5, (nv,)), view(6, (n, 6)), view(7, (n, 6)), view(8, (0, nv)), view(8, (0, 0)),
                      view(8, (0,)))
    sa.reduced_diag[:] = reduced_diag
    return buf, sa, [view(9 + k, (nv,)) for k in range(4)], view(13, (4,))


@kernel(inline=True)
def unpack_system(buf, n, nv, m):
    """``system_buffer``'s arrays as borrowed views: (SystemArrays, r, z, p, Ap, energies)."""
    o = system_offsets(n, nv, m)
    sa = SystemArrays(contiguous_view(buf, o[0], (n, 6, 6)), contiguous_view(buf, o[1], (m, 6, 6)),
                      contiguous_view(buf, o[2], (nv,)), contiguous_view(buf, o[3], (nv,)),
                      contiguous_view(buf, o[4], (nv,)), contiguous_view(buf, o[5], (nv,)),
                      contiguous_view(buf, o[6], (n, 6)), contiguous_view(buf, o[7], (n, 6)),
                      contiguous_view(buf, o[8], (0, nv)), contiguous_view(buf, o[8], (0, 0)),
                      contiguous_view(buf, o[8], (0,)))
    return (sa, contiguous_view(buf, o[9], (nv,)), contiguous_view(buf, o[10], (nv,)),
            contiguous_view(buf, o[11], (nv,)), contiguous_view(buf, o[12], (nv,)), contiguous_view(buf, o[13], (4,)))


@kernel(inline="llvm", refcounts=False)
def assemble_blocks(link_inertia, body_damping_blocks, h, pair_a, pair_b, K, D, pf_body, pf_K, A, coupling):
    """A = I + h D_body + own blocks of every pair and point force; coupling[s] = (hD + h²K)_ab."""
    n = link_inertia.shape[0]
    for i in range(n):
        for r in range(6):
            for c in range(6):
                A[i, r, c] = link_inertia[i, r, c] + h * body_damping_blocks[i, r, c]
    h2 = h * h
    for s in range(pair_a.shape[0]):
        a = pair_a[s]
        b = pair_b[s]
        for r in range(6):
            for c in range(6):
                if a >= 0:
                    A[a, r, c] += h * D[s, r, c] + h2 * K[s, r, c]
                if b >= 0:
                    A[b, r, c] += h * D[s, 6 + r, 6 + c] + h2 * K[s, 6 + r, 6 + c]
                coupling[s, r, c] = h * D[s, r, 6 + c] + h2 * K[s, r, 6 + c] if (a >= 0 and b >= 0) else 0.0
    for s in range(pf_body.shape[0]):
        b = pf_body[s]
        for r in range(6):
            for c in range(6):
                A[b, r, c] += h2 * pf_K[s, r, c]


@kernel(refcounts=False)
def assemble_step_system(tree, ws, pairs, fa, ta, sa, q, qd, rest, pf_body, pf_point, pf_force, pf_K, h,
                         springs_geometric, joint_tension, inertial, closure_forces, articulated):
    """``assemble_system`` as a kernel of its own (the steps that do more than ``pcg_step``)."""
    return assemble_system(tree, ws, pairs, fa, ta, sa, q, qd, rest, pf_body, pf_point, pf_force, pf_K, h,
                           springs_geometric, joint_tension, inertial, closure_forces, articulated)


@kernel(inline=True)
def kinematics_and_forces(tree, ws, pairs, fa, q, qd, pf_body, pf_point, pf_force, pf_K, springs_geometric):
    """``ForceEvaluator.evaluate`` in a kernel: the kinematics at (q, q̇) into ws, the springs' and point
    forces' wrenches, K and D into fa (pf_K: the point forces' K); returns (spring, point-force) energy (J)."""
    joint_pass(tree, q, ws)
    world_pass(tree, ws)
    velocity_pass(tree, q, qd, ws)
    for i in range(tree.parent.shape[0]):
        for k in range(6):
            fa.wrench[i, k] = 0.0
            fa.wrench_damping[i, k] = 0.0
    spring_energy = point_pair_kernel(ws.X0_E, ws.X0_r, ws.v, pairs, springs_geometric, fa.wrench,
                                      fa.wrench_damping, fa.K, fa.D, fa.active)
    point_energy = 0.0
    if pf_body.shape[0] > 0:
        point_energy = point_force_kernel(ws.X0_E, ws.X0_r, pf_body, pf_point, pf_force, springs_geometric,
                                          fa.wrench, pf_K)
    return spring_energy, point_energy


@kernel(inline=True)
def assemble_system(tree, ws, pairs, fa, ta, sa, q, qd, rest, pf_body, pf_point, pf_force, pf_K, h,
                    springs_geometric, joint_tension, inertial, closure_forces, articulated):
    """Stages 1–5 of the module docstring at (q (nq,), q̇ (nv,)) with joint-spring rest ``rest`` (nq,)
    and point forces (body (k,), point (k, 3) link frame, force (k, 3) world; pf_K (k, 6, 6) out).

    Fills fa (wrenches, K, D), sa.A, sa.coupling, sa.f_r, sa.bias, sa.rhs and leaves ws holding
    the kinematics at q (v at q̇). joint_tension: add h² K⁺ (inertial: with the d'Alembert forces;
    closure_forces: with ta.closure_wrench); articulated: run the preconditioner's inward pass.
    Returns (spring energy, point-force energy) (J)."""
    spring_energy, point_energy = kinematics_and_forces(tree, ws, pairs, fa, q, qd, pf_body, pf_point, pf_force,
                                                       pf_K, springs_geometric)
    n = tree.parent.shape[0]
    nv = qd.shape[0]
    assemble_blocks(tree.link_inertia, fa.body_damping_blocks, h, pairs.body_a, pairs.body_b, fa.K, fa.D, pf_body,
                    pf_K, sa.A, sa.coupling)
    if joint_tension:
        wrench = fa.wrench
        if closure_forces:
            wrench = ta.wrench_total
            for i in range(n):
                for k in range(6):
                    wrench[i, k] = fa.wrench[i, k] + ta.closure_wrench[i, k]
        segment_tensors(tree, ws, ta.mass, ta.com, ta.gravity, wrench, inertial, ta.acc6, ta.own, ta.F, ta.T)
        add_tension_blocks(ta.T, h * h, sa.A)
    # joint springs: f_r = −K_r (q ⊖ q_rest) on the sprung dofs
    for k in range(nv):
        sa.f_r[k] = 0.0
    if fa.spring_v.shape[0] > 0:
        position_error(tree, q, fa.zero_v, rest, 0.0, fa.difference)
    for j in range(fa.spring_v.shape[0]):
        d = fa.spring_v[j]
        sa.f_r[d] = -fa.joint_stiffness[d] * fa.difference[d]
    # bias = C q̇ + g − Jᵀ f_m (RNEA at q̈ = 0 on these kinematics); M q̇ = Jᵀ (M_m v)
    rnea_passes(tree, fa.zero_v, fa.wrench, 1.0, ws, sa.bias)
    w = sa.w
    for i in range(n):
        inertia_times(tree.link_inertia[i], ws.v[i], w[i])
    jacobian_transpose_product(tree, ws, w, sa.rhs)
    for k in range(nv):  # Eq. 2.15
        sa.rhs[k] = sa.rhs[k] + h * (sa.f_r[k] - sa.bias[k])
    if articulated:
        articulated_inertia_pass(tree, ws, sa.A, sa.reduced_diag)
    return spring_energy, point_energy


@kernel(inline=True)
def bdf2_start(tree, q, qd, q_prev, qd_prev, zero_v, q_solve, v_solve):
    """BDF2's extrapolated start (``redmax_schemes.py``): q_solve = q ⊕ (q ⊖ q⁻)/3, v_solve = (4 q̇ − q̇⁻)/3."""
    position_error(tree, q, zero_v, q_prev, 0.0, v_solve)  # v_solve first holds q ⊖ q⁻, the last step's displacement
    integrate_kernel(tree.joint_type, tree.q_start, tree.v_start, q, v_solve, 1.0 / 3.0, q_solve)
    for k in range(qd.shape[0]):
        v_solve[k] = (4.0 * qd[k] - qd_prev[k]) / 3.0


@kernel
def bdf2_start_flat(ints, floats, q, qd, q_prev, qd_prev, zero_v, q_solve, v_solve):
    """``bdf2_start`` on a ``FlatModel``'s buffers (three plain arrays to hand over instead of the tree's
    namedtuple, whose argument check costs more than the arithmetic)."""
    bdf2_start(unpack_tree(ints, floats), q, qd, q_prev, qd_prev, zero_v, q_solve, v_solve)


@kernel
def pcg_step(q, qd, q_prev, qd_prev, rest, pf_body, pf_point, pf_force, pf_K, x, q_out, q_solve, v_solve, h, bdf2,
             ints, floats, work, pairs, fa, tension, system, springs_geometric, joint_tension, inertial,
             exact_preconditioner, tol, max_iter, guard):
    """The whole RedMax PCG step without loop closures, contact or enforced limits: implicit Euler, or BDF2.

    ints, floats, work: a ``FlatModel``'s buffers (the tree, and the workspace the step runs in: three
    arguments to hand over instead of 31 arrays, unpacked here as borrowed views); system: the stepper's
    ``system_buffer`` (SystemArrays, PCG's scratch r, z, p, Ap (nv,) and energies (4,)); tension: its
    ``tension_buffer`` (TensionArrays).
    (q, q̇) (nq,), (nv,): the state; h: the solve's step (r in the system buffer must be h D_r + h² K_r). bdf2:
    the step is BDF2's (``redmax_schemes.py``): the solve runs from q̃ = q ⊕ (q ⊖ q⁻)/3, q̇̃ = (4 q̇ − q̇⁻)/3
    ((q⁻, q̇⁻) = (q_prev, qd_prev)) with h = 2/3 of the stepper's dt; else from (q, q̇) (implicit Euler). q_solve
    (nq,), v_solve (nv,): scratch for that state.
    x (nv,): enters as PCG's warm start, leaves as q̇⁺; q_out (nq,) = q_solve ⊕ h q̇⁺. exact_preconditioner: no
    spring couples two moving bodies, so P = M̃ (block_jacobi.py) and x = P⁻¹ b is the solution PCG reaches in
    its one iteration (counted as one). guard (the energy budget, ``energy_guard.py``; 0: none, 1: "cap", 2:
    "hold"): also fill energies with E(q, q̇) (implicit Euler only; NaN for BDF2, whose start is not the state),
    T(q⁺, q̇⁺), V(q⁺) (J; ``forces.energy.scene_energy``, the scene's one energy) and, for "hold", the dampers' power
    q̇⁺ᵀ D q̇⁺ (W) — which the guard would otherwise get by redoing the kinematics passes; the second leaves ws at
    (q⁺, q̇⁺) (the force arrays stay at the solve's state). Returns PCG's iteration count."""
    # borrowed arrays (_jit.borrowed): the per-body views below then update no reference counts
    tree = unpack_tree(ints, floats)
    ws = unpack_workspace(ints, work)
    sa, r, z, p, Ap, energies = unpack_system(system, ints[0], ints[1], pairs.body_a.shape[0])
    ta = unpack_tension(tension, ints[0])
    pairs, fa = borrowed((pairs, fa))
    q, qd, q_prev, qd_prev, rest = borrowed((q, qd, q_prev, qd_prev, rest))
    pf_body, pf_point, pf_force, pf_K = borrowed((pf_body, pf_point, pf_force, pf_K))
    x, q_out, q_solve, v_solve = borrowed((x, q_out, q_solve, v_solve))
    nv = qd.shape[0]
    if bdf2:
        bdf2_start(tree, q, qd, q_prev, qd_prev, fa.zero_v, q_solve, v_solve)
    else:
        for k in range(q.shape[0]):
            q_solve[k] = q[k]
        for k in range(nv):
            v_solve[k] = qd[k]
    assemble_system(tree, ws, pairs, fa, ta, sa, q_solve, v_solve, rest, pf_body, pf_point, pf_force, pf_K, h,
                    springs_geometric, joint_tension, inertial, False, True)
    energies[0] = np.nan
    if guard > 0 and not bdf2:  # E(q, q̇) on the step's own kinematics
        kin, pot = scene_energy(tree, ws, q, rest, ta, fa, pairs, pf_body, pf_point, pf_force)
        energies[0] = kin + pot
    if exact_preconditioner:
        block_jacobi_solve(tree, ws, sa.rhs, x)
        its = 1
    else:
        its = pcg_solve(tree, ws, sa.A, pairs.body_a, pairs.body_b, sa.coupling, sa.reduced_diag, sa.rhs, x, tol,
                        max_iter, r, z, p, Ap, sa.y, sa.w, sa.no_rows, sa.no_rows, sa.no_inverse, sa.no_lam)
    for k in range(q.shape[0]):
        q_out[k] = q_solve[k]
    integrate_kernel(tree.joint_type, tree.q_start, tree.v_start, q_out, x, h, q_out)
    if guard > 0:  # T and V at (q⁺, q̇⁺): the kinematics, then the same sums as E(q, q̇) — only the potentials:
        # the forces' wrenches and 12 × 12 blocks at (q⁺, q̇⁺) are the next step's to compute
        joint_pass(tree, q_out, ws)
        world_pass(tree, ws)
        velocity_pass(tree, q_out, x, ws)
        energies[1], energies[2] = scene_energy(tree, ws, q_out, rest, ta, fa, pairs, pf_body, pf_point, pf_force)
        energies[3] = damping_power(tree, ws, fa, pairs, x) if guard == 2 else 0.0
    return its
