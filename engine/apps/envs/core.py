"""The simulation behind the imitation environments, without Gymnasium: one kernel call per control step.

``ImitationSim(character, spd=..., dt=..., sim_dt=...)`` holds a character on
flat ground, its reference motion tabulated at the control times, and the
preallocated arrays of one control step. ``step(action)`` runs, in a single
numba kernel (``control_step_kernel``: per-call overhead, not arithmetic,
dominates a 34-dof step), for each simulation sub-step of length h:

1. stable PD (seed 001) towards q̂ = q̄(t_{k+1}) ⊕ (action_scale · a) on the
   internal joints — the root has zero gains (no "hand-of-God" force);
   ``spd="maba"`` gives q̈ straight from MABA (embedded use, Sec. 3.4);
   ``"dense"``, ``"sparse"`` and ``"pcg"`` compute the SPD torques τ and then
   forward dynamics (ABA) with τ — the paper's DF / SF / PCG pipeline;
2. v* = q̇ + h q̈;
3. ground contact: spheres fixed on the feet (paws, snake segments) against
   the plane z = 0; impulses λ by projected Gauss–Seidel with Coulomb
   friction (``engine.contact.pgs``) on the contact-space inertia J M⁻¹ Jᵀ
   from Drumwright's impulse propagation (``engine.algorithms.impulse_response``),
   warm-started per sphere; v⁺ = v* + M⁻¹ Jᵀ λ — the normal targets are those of
   ``engine.contact.ContactHandler`` (speculative gap, Baumgarte push-out);
4. q ← q ⊕ h v⁺ (semi-implicit Euler, exact exponentials).

Then it evaluates DeepMimic's imitation reward (Peng et al. 2018, Eq. 5–9)

    r = 0.65 exp(−2 Σ‖q_j ⊖ q̄_j‖²) + 0.1 exp(−0.1 Σ‖q̇_j − q̇̄_j‖²)
        + 0.15 exp(−40 Σ_e ‖p_e − p̄_e‖²) + 0.1 exp(−10 ‖p_c − p̄_c‖²)

(pose over the root orientation and the internal joints, velocity over the
root's angular velocity and the internal joints, end effectors relative to the
root origin in world axes, centre of mass in world coordinates), the fall test
(root origin below ``fall_height`` or its up axis tilted past 60°) and the
observation (below). Every method computes the same τ to round-off, so the
transitions agree to round-off as well (tests/test_envs.py checks 1e-8).

Observation (float32): root height (1), root quaternion (4), root twist
[ω; v] in root coordinates (6), internal joint coordinates (nq − 7), internal
velocities (nv − 6), sin and cos of the motion phase 2π t / T (2).
Action: (nv − 6,) in [−1, 1]; the PD target is the reference at the next
control time, offset joint by joint by action_scale · a (rad; rotation
vectors for spherical joints). Joint limits are not enforced in the
environment (targets stay within action_scale of the reference, which
respects them).
"""
from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np

from ... import scenes
from ..._jit import kernel
from ...algorithms.aba import aba_kernel, articulated_inertia_pass
from ...algorithms.impulse_response import contact_impulses_response, contact_space_columns, relative_velocity_along
from ...algorithms.kinematics import joint_pass, world_pass
from ...algorithms.minv import world_articulated_quantities
from ...contact.jacobian import contact_directions
from ...contact.pgs import pgs_kernel
from ...control.motions import motion_for
from ...control.spd import (
    MABA, METHOD_ID, METHODS, dof_gains, make_spd_workspace, maba_solve, position_error, spd_joint_terms, spd_kernel,
    spd_settings,
)
from ...integrators import integrate_kernel

DIVERGED_SPEED = 1e3   # |q̇| (rad/s, m/s) past which a step counts as diverged
W_POSE, W_VEL, W_EE, W_COM = 0.65, 0.10, 0.15, 0.10    # DeepMimic's reward weights
K_POSE, K_VEL, K_EE, K_COM = 2.0, 0.1, 40.0, 10.0      # and its error scales
FALL_TILT_COS = 0.5    # the root's up axis more than 60° from vertical is a fall


@dataclass(frozen=True)
class CharacterSpec:
    """How a character is simulated and rewarded.

    gains: (default kp, kd) and {joint: (kp, kd)} overrides (N·m/rad, N·m·s/rad);
    contacts: [(body, (x, y, z) link-frame centre (m), radius (m))];
    end_effectors: bodies whose link origins enter the end-effector reward;
    fall_height: root-origin height (m) below which the character has fallen (None: never falls).
    """

    build: object
    motion: str
    gains: tuple
    joint_gains: dict
    contacts: tuple
    end_effectors: tuple
    fall_height: float | None
    action_scale: float = 0.5
    friction: float = 0.9
    legged: bool = True
    extra: dict = field(default_factory=dict)


def _humanoid_contacts():
    out = []
    for side in ("right", "left"):  # four spheres under each foot: heel and toe, inner and outer
        for x in (-0.05, 0.17):
            for y in (-0.04, 0.04):
                out.append((f"{side}_foot", (x, y, -0.10), 0.015))
    # the rest of the body, so that a fallen character lies on the floor instead of sinking through it
    out += [("pelvis", (0.0, 0.0, 0.05), 0.11), ("torso", (0.0, 0.0, 0.12), 0.13), ("torso", (0.0, 0.0, 0.34), 0.13),
            ("head", (0.0, 0.0, 0.12), 0.10)]
    for side in ("right", "left"):
        out += [(f"{side}_shin", (0.0, 0.0, 0.0), 0.05), (f"{side}_forearm", (0.0, 0.0, 0.0), 0.04),
                (f"{side}_hand", (0.0, 0.0, -0.08), 0.04)]
    return tuple(out)


def _dog_contacts():
    paws = [(f"{s}_{end}_paw", (0.025, 0.0, 0.0), 0.025) for s in ("right", "left") for end in ("hind", "front")]
    body = [("pelvis", (0.0, 0.0, 0.0), 0.08), ("lumbar2", (0.08, 0.0, 0.0), 0.08), ("thorax", (0.11, 0.0, 0.0), 0.10),
            ("head", (0.11, 0.0, 0.0), 0.07)]
    knees = [(f"{s}_{b}", (0.0, 0.0, 0.0), 0.03) for s in ("right", "left") for b in ("shank", "forearm")]
    return tuple(paws + body + knees)


def _snake_contacts(k):
    from ...scenes.characters import SNAKE_RADIUS, SNAKE_SEGMENT_LENGTH
    out = [("head", (0.02, 0.0, 0.0), SNAKE_RADIUS)]
    out += [(f"seg{i}", (-0.5 * SNAKE_SEGMENT_LENGTH, 0.0, 0.0), SNAKE_RADIUS) for i in range(1, k + 1)]
    return tuple(out)


SNAKE_DOFS = 36
CHARACTERS = {
    # gains after DeepMimic's humanoid3d (chest 1000/100, neck 100/10, hips and knees 500/50, ankles and
    # shoulders 400/40, elbows 300/30)
    "humanoid": CharacterSpec(
        scenes.humanoid, "walk", (500.0, 50.0),
        {"chest": (1000.0, 100.0), "neck": (100.0, 10.0), "right_ankle": (400.0, 40.0), "left_ankle": (400.0, 40.0),
         "right_shoulder": (400.0, 40.0), "left_shoulder": (400.0, 40.0), "right_elbow": (300.0, 30.0),
         "left_elbow": (300.0, 30.0)},
        _humanoid_contacts(), ("right_foot", "left_foot", "right_hand", "left_hand"), 0.55),
    "dog": CharacterSpec(
        scenes.dog, "trot", (200.0, 20.0),
        {**{f"tail{k}": (5.0, 0.5) for k in range(1, 5)}, "neck1": (80.0, 8.0), "neck2": (60.0, 6.0),
         "head": (40.0, 4.0), **{f"{s}_{j}": (20.0, 2.0) for s in ("right", "left") for j in ("hind_toe", "front_toe")}},
        _dog_contacts(), ("right_hind_paw", "left_hind_paw", "right_front_paw", "left_front_paw"), 0.3),
    "snake": CharacterSpec(
        lambda: scenes.snake(SNAKE_DOFS), "slither", (20.0, 2.0), {}, _snake_contacts((SNAKE_DOFS - 6) // 3),
        ("head", f"seg{(SNAKE_DOFS - 6) // 3}"), None, action_scale=0.3, legged=False),
}

#: Ground-contact arrays for the kernel (candidate spheres, the active set, solver scratch).
ContactData = namedtuple("ContactData", [
    "ws",       # engine Workspace of the contact stage (kinematics, articulated inertias)
    "cbody", "ccentre", "cradius", "cmu",  # (m,) bodies, (m, 3) link-frame centres, (m,) radii, (m,) μ
    "warm",     # (m, 3) last step's impulses per sphere (warm start)
    "active",   # (m,) int64: index of the sphere behind each active contact
    "body", "other", "point", "depth", "mu",  # (m,), (m,), (m, 3), (m,), (m,) the active contacts
    "dirs",     # (m, 3, 3) rows n, t₁, t₂ per contact (the ground's, fixed)
    "s_w", "U_w",  # (nv, 6) world motion axes and I^A s
    "V",        # (n, 6) body velocities, world coordinates at the origin
    "dq",       # (nv,) contact velocity change
    "joint_diag",  # (nv,) h K_d: the contact impulses act on M + h K_d, the operator SPD's q̈ solves with
    "params",   # (6,) ground height, margin, Baumgarte β, slop, bounce speed, PGS tol
    "stats",    # (2,) int64: contacts and PGS sweeps of the last sub-step
])

#: The reward's and observation's fixed data.
RewardData = namedtuple("RewardData", [
    "ws", "err", "ee_body", "body_mass", "body_com", "ee", "com", "out",
])


@kernel
def ground_contact_update(tree, cd, q, v, h, max_sweeps):
    """v (nv,) ← v + M⁻¹ Jᵀ λ for the spheres touching (or within the margin of) the ground at q; returns contacts."""
    ws = cd.ws
    joint_pass(tree, q, ws)
    world_pass(tree, ws)
    ground, margin, beta, slop, bounce, tol = (cd.params[0], cd.params[1], cd.params[2], cd.params[3],
                                               cd.params[4], cd.params[5])
    m = cd.cbody.shape[0]
    k = 0
    for c in range(m):
        b = cd.cbody[c]
        z = ws.X0_r[b, 2]
        for j in range(3):  # link → world rotation is X0_Eᵀ
            z += ws.X0_E[b, j, 2] * cd.ccentre[c, j]
        depth = cd.cradius[c] - (z - ground)
        if depth > -margin:
            for a in range(3):
                x = ws.X0_r[b, a]
                for j in range(3):
                    x += ws.X0_E[b, j, a] * cd.ccentre[c, j]
                cd.point[k, a] = x
            cd.point[k, 2] -= cd.cradius[c]  # the sphere's lowest point
            cd.active[k] = c
            cd.body[k] = b
            cd.other[k] = -1
            cd.depth[k] = depth
            cd.mu[k] = cd.cmu[c]
            k += 1
        else:
            for j in range(3):
                cd.warm[c, j] = 0.0
    cd.stats[0] = k
    cd.stats[1] = 0
    if k == 0:
        return 0
    articulated_inertia_pass(tree, ws, tree.link_inertia, cd.joint_diag)
    world_articulated_quantities(tree, ws, cd.s_w, cd.U_w)
    body, other, point, dirs = cd.body[:k], cd.other[:k], cd.point[:k], cd.dirs[:k]
    A = np.empty((3 * k, 3 * k))
    contact_space_columns(tree, cd.s_w, cd.U_w, ws.Dinv, body, other, point, dirs, A)
    big = 0.0
    for i in range(3 * k):
        for j in range(i):
            s = 0.5 * (A[i, j] + A[j, i])
            A[i, j] = s
            A[j, i] = s
        big = max(big, A[i, i])
    floor = 1e-12 * max(1.0, big)
    # u_free = J v*: every body's world velocity, then each contact point's along n, t₁, t₂
    n = tree.parent.shape[0]
    V = cd.V
    for i in range(n):
        p = tree.parent[i]
        for c in range(6):
            V[i, c] = V[p, c] if p >= 0 else 0.0
        vs = tree.v_start[i]
        for d in range(tree.joint_nv[i]):
            for c in range(6):
                V[i, c] += cd.s_w[vs + d, c] * v[vs + d]
    u = np.empty(3 * k)
    lam = np.empty(3 * k)
    target = np.empty(k)
    for c in range(k):
        for r in range(3):
            u[3 * c + r] = relative_velocity_along(V, body[c], other[c], point[c], dirs[c, r])
            lam[3 * c + r] = cd.warm[cd.active[c], r] if A[3 * c, 3 * c] > floor else 0.0
        d = cd.depth[c]
        t = d / h if d < 0.0 else beta * max(d - slop, 0.0) / h
        un = u[3 * c]
        if un < -bounce and un * h < min(d, 0.0):  # an impact: no bounce (restitution 0)
            t = max(t, 0.0)
        target[c] = t
    for i in range(3 * k):
        s = 0.0
        for j in range(3 * k):
            s += A[i, j] * lam[j]
        u[i] += s
    cd.stats[1] = pgs_kernel(A, u, target, cd.mu[:k], lam, max_sweeps, tol, floor)
    for c in range(k):
        for r in range(3):
            cd.warm[cd.active[c], r] = lam[3 * c + r]
    contact_impulses_response(tree, cd.s_w, cd.U_w, ws.Dinv, body, other, point, dirs, lam, cd.dq)
    for i in range(v.shape[0]):
        v[i] += cd.dq[i]
    return k


@kernel
def control_step_kernel(tree, sw, ctl, method, cd, rd, substeps, max_sweeps, q, qd, ref_next, offset, q_target,
                        qd_ref_next, ee_ref, com_ref, qdd, tau, zero):
    """One control step: q̂ = ref_next ⊕ offset, then ``substeps`` × (SPD, contact, integrate) of ctl.dt, then the reward.

    Returns 0 (fine) or 1 (diverged). rd.out ← (reward, pose, velocity, end-effector and COM terms,
    root height, root up-axis z, contacts and PGS sweeps of the last sub-step).
    """
    h = ctl.dt
    nv = qd.shape[0]
    integrate_kernel(tree.joint_type, tree.q_start, tree.v_start, ref_next, offset, 1.0, q_target)
    for s in range(substeps):
        if method == MABA:  # embedded: q̈ from MABA, τ never formed
            spd_joint_terms(tree, sw, ctl, q, qd, q_target, zero)
            maba_solve(tree, sw, q, qd, zero, qdd)
        else:  # SPD torques by DF / SF / PCG, then forward dynamics
            spd_kernel(tree, sw, ctl, method, q, qd, q_target, zero, zero, qdd, tau)
            for k in range(nv):
                sw.force[k] = tau[k]
            aba_kernel(tree, q, qd, sw.force, sw.f_ext, sw.ws, qdd)
        for k in range(nv):
            qd[k] += h * qdd[k]
        ground_contact_update(tree, cd, q, qd, h, max_sweeps)
        for k in range(nv):
            if not abs(qd[k]) <= DIVERGED_SPEED:
                for j in range(rd.out.shape[0]):
                    rd.out[j] = 0.0
                return 1
        integrate_kernel(tree.joint_type, tree.q_start, tree.v_start, q, qd, h, q)
    imitation_reward(tree, rd, q, qd, ref_next, qd_ref_next, ee_ref, com_ref, zero)
    rd.out[7] = cd.stats[0]
    rd.out[8] = cd.stats[1]
    return 0


@kernel
def imitation_reward(tree, rd, q, qd, q_ref, qd_ref, ee_ref, com_ref, zero):
    """DeepMimic's reward terms into rd.out[0:5], root height and up-axis z into rd.out[5:7]."""
    ws = rd.ws
    position_error(tree, q, zero, q_ref, 0.0, rd.err)
    nv = qd.shape[0]
    e_pose = 0.0
    e_vel = 0.0
    for k in range(nv):
        if 3 <= k < 6:  # the root's translation is the COM term's business
            continue
        e_pose += rd.err[k] * rd.err[k]
        dv = qd[k] - qd_ref[k]
        e_vel += dv * dv
    joint_pass(tree, q, ws)
    world_pass(tree, ws)
    e_ee = 0.0
    for e in range(rd.ee_body.shape[0]):
        b = rd.ee_body[e]
        for a in range(3):
            d = (ws.X0_r[b, a] - ws.X0_r[0, a]) - ee_ref[e, a]
            e_ee += d * d
    total = 0.0
    for a in range(3):
        rd.com[a] = 0.0
    for b in range(rd.body_mass.shape[0]):
        mb = rd.body_mass[b]
        total += mb
        for a in range(3):
            x = ws.X0_r[b, a]
            for j in range(3):
                x += ws.X0_E[b, j, a] * rd.body_com[b, j]
            rd.com[a] += mb * x
    e_com = 0.0
    for a in range(3):
        d = rd.com[a] / total - com_ref[a]
        e_com += d * d
    rp, rv = math.exp(-K_POSE * e_pose), math.exp(-K_VEL * e_vel)
    re, rc = math.exp(-K_EE * e_ee), math.exp(-K_COM * e_com)
    rd.out[0] = W_POSE * rp + W_VEL * rv + W_EE * re + W_COM * rc
    rd.out[1] = rp
    rd.out[2] = rv
    rd.out[3] = re
    rd.out[4] = rc
    rd.out[5] = ws.X0_r[0, 2]
    rd.out[6] = ws.X0_E[0, 2, 2]  # world z of the root's z axis


def end_effectors_and_com(model, q, ee_body, ws=None):
    """(end-effector link origins relative to the root origin (len(ee_body), 3), COM (3,)) in world axes at q."""
    from ...algorithms.kinematics import link_poses
    R, p = link_poses(model, q, ws=ws)
    com = (model.body_mass[:, None] * (np.einsum("bij,bj->bi", R, model.body_com) + p)).sum(0) / model.body_mass.sum()
    return p[ee_body] - p[0], com


class ReferenceTable:
    """The reference at the control times t_k = k·dt, k = 0 … frames − 1: q̄ (frames, nq), q̇̄ (frames, nv),
    end effectors relative to the root (frames, e, 3), COM (frames, 3).

    The procedural motions were made for tracking without a floor: their feet sink up to 7 cm
    (humanoid walk) below z = 0 or float above it. Each frame is therefore lifted or lowered as a
    whole so that its lowest contact sphere just touches the ground (``ground_shift``), and the root
    velocity gets the shift's rate (central differences), so the reference can be imitated on the ground.
    """

    def __init__(self, scene, motion, dt: float, frames: int, ee_body, contacts=()):
        model = scene.model
        times = np.arange(frames) * dt
        self.times = times
        self.period = motion.period
        self.q = np.ascontiguousarray(motion.sample(times))
        self.qd = np.ascontiguousarray(motion.velocities(times))
        ws = model.make_workspace()
        self.ground_shift = np.zeros(frames)
        if contacts:
            from ...algorithms.kinematics import link_poses
            bodies = [model.body_index(b) for b, _, _ in contacts]
            centres = np.array([c for _, c, _ in contacts], float)
            radii = np.array([r for _, _, r in contacts], float)
            for k, qk in enumerate(self.q):
                R, p = link_poses(model, qk, ws=ws)
                z = np.einsum("ij,ij->i", R[bodies, 2, :], centres) + p[bodies, 2] - radii
                self.ground_shift[k] = -z.min()
            self.q[:, 2] += self.ground_shift
            rate = np.gradient(self.ground_shift, dt) if frames > 1 else np.zeros(frames)
            for k, qk in enumerate(self.q):  # world ż → the root's body twist (child coordinates)
                R, _ = link_poses(model, qk, ws=ws)
                self.qd[k, 3:6] += R[0].T @ np.array([0.0, 0.0, rate[k]])
        pairs = [end_effectors_and_com(model, qk, ee_body, ws) for qk in self.q]
        self.ee = np.ascontiguousarray(np.array([p[0] for p in pairs]))
        self.com = np.ascontiguousarray(np.array([p[1] for p in pairs]))


_TABLES: dict = {}
# bounds of the constructor's arguments (the reference table holds every control step of an episode)
MAX_DT = 1.0                # s per control step
MAX_SUBSTEPS = 1_000        # simulation steps per control step
MAX_EPISODE_SECONDS = 600.0
MAX_SWEEPS = 10_000         # PGS sweeps per contact solve


def _finite(value, name: str) -> float:
    """A finite real number (not a bool or a string), or ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


class ImitationSim:
    """One character imitating its reference on the ground; see the module docstring.

    character: ``"humanoid"``, ``"dog"`` or ``"snake"`` (36 dofs); spd: ``"maba"``, ``"dense"``,
    ``"sparse"`` or ``"pcg"``; dt: control step (s); sim_dt: simulation step (s, default dt; dt
    must be a whole multiple of it); motion: reference name (default per character);
    episode_seconds: longest episode (s, at most MAX_EPISODE_SECONDS); action_scale: rad per unit action
    (default per character); max_sweeps: PGS sweep cap per contact solve (1 … MAX_SWEEPS). Bad values raise
    ValueError naming the argument.
    """

    def __init__(self, character: str = "humanoid", *, spd: str = "maba", dt: float = 1 / 30,
                 sim_dt: float | None = None, motion: str | None = None, episode_seconds: float = 10.0,
                 action_scale: float | None = None, max_sweeps: int = 50, pcg_tol: float = 1e-14):
        if character not in CHARACTERS:
            raise ValueError(f"character must be one of {', '.join(CHARACTERS)}, got {character!r}")
        if not isinstance(spd, str) or spd not in METHOD_ID:
            raise ValueError(f"spd must be one of {', '.join(METHODS)}, got {spd!r}")
        dt = _finite(dt, "dt")
        if not 0 < dt <= MAX_DT:
            raise ValueError(f"dt must be a number of seconds in (0, {MAX_DT:g}], got {dt}")
        sim_dt = dt if sim_dt is None else _finite(sim_dt, "sim_dt")
        if not 0 < sim_dt <= dt:
            raise ValueError(f"sim_dt must be in (0, dt = {dt}] s, got {sim_dt}")
        substeps = round(dt / sim_dt)
        if abs(substeps * sim_dt - dt) > 1e-9 * dt or substeps > MAX_SUBSTEPS:
            raise ValueError(f"dt = {dt} s must be a whole multiple of sim_dt = {sim_dt} s, at most {MAX_SUBSTEPS} "
                             "times it")
        episode_seconds = _finite(episode_seconds, "episode_seconds")
        if not dt <= episode_seconds <= MAX_EPISODE_SECONDS:
            raise ValueError(f"episode_seconds must be in [dt, {MAX_EPISODE_SECONDS:g}] s (the reference motion is "
                             f"tabulated for the whole episode), got {episode_seconds:g}")
        if isinstance(max_sweeps, bool) or not isinstance(max_sweeps, (int, np.integer)) \
                or not 1 <= max_sweeps <= MAX_SWEEPS:
            raise ValueError(f"max_sweeps (PGS sweeps per contact solve) must be a whole number 1 … {MAX_SWEEPS}, "
                             f"got {max_sweeps!r} (0 would switch the ground off)")
        pcg_tol = _finite(pcg_tol, "pcg_tol")
        if not 0 < pcg_tol < 1:
            raise ValueError(f"pcg_tol must be in (0, 1), got {pcg_tol}")
        spec = CHARACTERS[character]
        self.character, self.spec, self.method = character, spec, spd
        self.dt, self.sim_dt, self.substeps = dt, sim_dt, int(substeps)
        self.scene = scene = spec.build()
        self.model = model = scene.model
        if not model.is_floating:
            raise ValueError(f"character '{character}' must have a floating base")
        self.motion = motion_for(scene, spec.motion if motion is None else motion)
        self.action_scale = _finite(spec.action_scale if action_scale is None else action_scale, "action_scale")
        if not self.action_scale >= 0:
            raise ValueError(f"action_scale must be ≥ 0 rad, got {action_scale}")
        self.max_steps = int(round(episode_seconds / dt))
        self.start_frames = max(1, int(math.ceil(self.motion.period / dt)))  # reference-state initialisation range
        frames = self.start_frames + self.max_steps + 1
        self.ee_body = np.array([model.body_index(b) for b in spec.end_effectors], dtype=np.int64)
        key = (character, self.motion.name, dt, frames)
        if key not in _TABLES:
            _TABLES[key] = ReferenceTable(scene, self.motion, dt, frames, self.ee_body, spec.contacts)
        self.ref = _TABLES[key]
        kp_default, kd_default = spec.gains
        self.kp = dof_gains(model, kp_default, joints={j: g[0] for j, g in spec.joint_gains.items()}, name="kp")
        self.kd = dof_gains(model, kd_default, joints={j: g[1] for j, g in spec.joint_gains.items()}, name="kd")
        self.ctl = spd_settings(model, self.kp, self.kd, sim_dt, tol=pcg_tol)
        self.method_id = METHOD_ID[spd]
        self.sw = make_spd_workspace(model)
        m = len(spec.contacts)
        nv, n = model.nv, model.n_bodies
        dirs = np.ascontiguousarray(np.repeat(contact_directions(np.array([[0.0, 0.0, 1.0]])), m, axis=0))
        self.cd = ContactData(
            model.make_workspace(), np.array([model.body_index(b) for b, _, _ in spec.contacts], dtype=np.int64),
            np.array([c for _, c, _ in spec.contacts], dtype=float).reshape(m, 3),
            np.array([r for _, _, r in spec.contacts], dtype=float), np.full(m, spec.friction), np.zeros((m, 3)),
            np.zeros(m, np.int64), np.zeros(m, np.int64), np.zeros(m, np.int64), np.zeros((m, 3)), np.zeros(m),
            np.zeros(m), dirs, np.zeros((nv, 6)), np.zeros((nv, 6)), np.zeros((n, 6)), np.zeros(nv),
            np.ascontiguousarray(self.ctl.kd * sim_dt), np.array([0.0, 0.02, 0.2, 2e-4, 0.1, 1e-10]),
            np.zeros(2, np.int64))
        self.rd = RewardData(model.make_workspace(), np.zeros(nv), self.ee_body, np.ascontiguousarray(model.body_mass),
                             np.ascontiguousarray(model.body_com), np.zeros((len(self.ee_body), 3)), np.zeros(3),
                             np.zeros(9))
        self.max_sweeps = int(max_sweeps)
        self.n_actions = nv - 6
        self.obs_size = 1 + 4 + 6 + (model.nq - 7) + (nv - 6) + 2
        self.q = np.zeros(model.nq)
        self.qd = np.zeros(nv)
        self.q_target = np.zeros(model.nq)
        self.offset = np.zeros(nv)
        self.qdd, self.tau, self.zero = np.zeros(nv), np.zeros(nv), np.zeros(nv)
        self.start = 0
        self.k = 0
        self.last = {}

    # ------------------------------------------------------------------ episode
    @property
    def time(self) -> float:
        """Seconds since the episode started."""
        return self.k * self.dt

    @property
    def frame(self) -> int:
        """Index of the current control time in the reference table."""
        return self.start + self.k

    def phase(self) -> float:
        """Motion phase in [0, 1) at the current time."""
        return (self.ref.times[self.frame] / self.ref.period) % 1.0

    def reset(self, start: int = 0) -> np.ndarray:
        """Start at reference frame ``start`` (0 … start_frames − 1) in the reference state; returns the observation."""
        if not 0 <= int(start) < self.start_frames:
            raise ValueError(f"start frame must be in [0, {self.start_frames}), got {start}")
        self.start, self.k = int(start), 0
        self.q[:] = self.ref.q[self.start]
        self.qd[:] = self.ref.qd[self.start]
        self.cd.warm[:] = 0.0
        return self.observation()

    def step(self, action) -> tuple:
        """Advance one control step with ``action`` (n_actions,) in [−1, 1] (clipped).

        Returns (reward, fallen, diverged, truncated); ``last`` holds the reward terms.
        """
        if self.k >= self.max_steps:
            raise RuntimeError(f"the episode was truncated after {self.max_steps} steps (episode_seconds); call "
                               "reset() before stepping again")
        try:
            if isinstance(action, (str, bytes, dict)):
                raise TypeError
            a = np.asarray(action, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise ValueError(f"action must be {self.n_actions} numbers in [-1, 1], got {action!r}") from None
        if a.shape != (self.n_actions,):
            raise ValueError(f"action must have {self.n_actions} entries, got shape {np.shape(action)}")
        if not np.isfinite(a).all():
            raise ValueError(f"action[{int(np.flatnonzero(~np.isfinite(a))[0])}] is not finite")
        np.clip(a, -1.0, 1.0, out=self.offset[6:])
        self.offset[6:] *= self.action_scale
        f = self.frame + 1
        diverged = bool(control_step_kernel(
            self.model.tree, self.sw, self.ctl, self.method_id, self.cd, self.rd, self.substeps, self.max_sweeps,
            self.q, self.qd, self.ref.q[f], self.offset, self.q_target, self.ref.qd[f], self.ref.ee[f],
            self.ref.com[f], self.qdd, self.tau, self.zero))
        self.k += 1
        out = self.rd.out
        fallen = False
        if not diverged and self.spec.fall_height is not None:
            fallen = bool(out[5] < self.spec.fall_height or out[6] < FALL_TILT_COS)
        reward = 0.0 if (diverged or fallen) else float(out[0])
        self.last = {"pose": float(out[1]), "velocity": float(out[2]), "end_effector": float(out[3]),
                     "com": float(out[4]), "contacts": int(out[7]), "pgs_sweeps": int(out[8])}
        return reward, fallen, diverged, self.k >= self.max_steps

    def observation(self) -> np.ndarray:
        """The observation (obs_size,) float32; see the module docstring."""
        q, qd = self.q, self.qd
        ph = 2 * math.pi * self.phase()
        obs = np.concatenate([q[2:7], qd[:6], q[7:], qd[6:], (math.sin(ph), math.cos(ph))])
        np.nan_to_num(obs, copy=False, nan=0.0, posinf=1e6, neginf=-1e6)
        return obs.astype(np.float32)
