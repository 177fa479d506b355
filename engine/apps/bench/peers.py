"""``bench peers``: the engine side by side with Pinocchio and MuJoCo, in one process, on the same models.

Every model is written once as a URDF by this suite and loaded by both
``engine.load_urdf`` and ``pinocchio.buildModelFromXML`` (fixed base, or a
free-flyer root for the floating tree), so both run on the same numbers.
Joints are revolute about the link's x, y or z axis (in turn) behind randomly
rotated and offset joint origins, so Pinocchio gets its specialised axis-aligned
joints and the engine its general ones; inertials have random COMs, masses and
rotated principal axes. The two models' dofs are matched by joint name (and,
for the free root, Pinocchio's [v; ω] with the quaternion (x, y, z, w) against
the engine's [ω; v] with (w, x, y, z)).

* ``aba_chain``: ``engine.aba`` against ``pinocchio.aba`` on revolute chains,
  n = 1 (the per-call floor), 16, 64, 256, 512;
* ``minv_chain``: ``engine.minv`` against ``pinocchio.computeMinverse`` (its
  upper triangle, mirrored) on chains n = 256, 512;
* ``minv_floating_binary``: the same on balanced binary trees of n = 64, 256 links
  under a free-flyer root (nv = n + 6);
* ``stiff_rope_step``: one RedMax PCG step (h = 10 ms) of ``scenes.rope(n,
  side_spring=1e5)``, n = 8, 64, against ``mujoco.mj_step`` with the ``discrete``
  integrator on an MJCF of the same model (``mjcf_for_rope``: the spring as a
  spatial tendon); the mass matrices are checked equal before timing.

Before anything is timed, the results of the two are compared and the suite
stops if they differ by more than ``TOLERANCE`` (relative to the largest entry).
Timing: the contenders of a case are interleaved — each round times one block
of calls of each, in turn — and the minimum per-call time over the rounds is
kept (``timeit``-style: the minimum is the least disturbed by the other work on
a shared machine). Blocks last ≈ 2 ms (at least one call), shorter than a
scheduler time slice, over 60 rounds: on a loaded machine nearly every 20 ms
block is preempted somewhere, so longer blocks leave no undisturbed minimum. BLAS runs on one thread (``run_suite``); Pinocchio is
single-threaded here. Memory: Pinocchio's ``Data`` grows like nv³ (its
kinematic-Hessian buffers): ≈ 7 GB at n = 512, so a full run needs ≈ 8 GB free.

Peers are an optional extra: ``pip install -e '.[peers]'``. Without them the
suite raises :class:`PeersMissing` (the CLI prints one line, exit code 2).
"""
from __future__ import annotations

import importlib
import math
import time

import numpy as np

from ... import aba, minv
from ...urdf import load_urdf_string
from .report import Progress, Row, SuiteResult, markdown_table

SUITE = "peers"
MIN_FIT = 64
INSTALL = "pip install -e '.[peers]'"
PEER_MODULES = (("pinocchio", "pin"), ("mujoco", "mujoco"))  # (module imported, PyPI package)
TOLERANCE = 1e-10
ABA_SIZES, ABA_QUICK = (1, 16, 64, 256, 512), (1, 16, 64)
MINV_CHAIN_SIZES, MINV_CHAIN_QUICK = (256, 512), (16, 64)
MINV_TREE_SIZES, MINV_TREE_QUICK = (64, 256), (16,)
# targets of issue #21 (engine / peer), printed beside the measured ratios
TARGETS = {("aba_chain", 16): "≤ 1.5", ("aba_chain", 256): "≤ 0.7", ("aba_chain", 512): "≤ 0.7",
           ("minv_chain", 256): "≤ 1.2", ("minv_chain", 512): "≤ 1.2",
           ("minv_floating_binary", 256): "≤ 1.2", ("stiff_rope_step", 8): "≤ 4", ("stiff_rope_step", 64): "≤ 0.3"}
FLOOR_TARGET_SECONDS = 3e-6
STEP_SIZES, STEP_QUICK = (8, 64), (8,)
STEP_STIFFNESS, STEP_DT = 1e5, 0.01  # N/m, s: the side spring of scenes.rope and the step


class PeersMissing(RuntimeError):
    """A peer library of ``bench peers`` cannot be imported; the message says what to install."""


def import_peers() -> dict:
    """{module name: module} for every peer; raises PeersMissing naming every peer that fails to import."""
    mods, failed = {}, []
    for module, package in PEER_MODULES:
        try:
            mods[module] = importlib.import_module(module)
        except Exception as e:  # ImportError, or a broken binary wheel
            failed.append(f"'{module}' (PyPI '{package}': {type(e).__name__}: {e})")
    if failed:
        raise PeersMissing(f"bench peers needs the peer librar{'y' if len(failed) == 1 else 'ies'} "
                           f"{' and '.join(failed)}, which failed to import; install the peers with: {INSTALL}")
    return mods


# --------------------------------------------------------------------- the models
def _f(x) -> str:
    return " ".join(repr(float(v)) for v in np.atleast_1d(x))


def tree_urdf(n: int, scene: str, seed: int = 1) -> str:
    """URDF of n moving links (``link1`` … ``link<n>``) under a root link ``base``.

    scene "chain": link i hangs on link i−1 (``base`` for i = 1), ``base`` massless
    (fixed to the world by both loaders). scene "binary": link i hangs on link
    i//2 (balanced binary tree) and ``base`` has mass (it becomes the free-flyer
    root). Joint i: revolute about axis (i mod 3) behind a random rpy/xyz origin.
    """
    rng = np.random.default_rng(seed)

    def inertial(mass_scale=1.0):
        mass = mass_scale * rng.uniform(0.5, 1.5)
        inertia = mass * rng.uniform(0.01, 0.018, size=3)  # within a factor 2: triangle inequality holds
        return (f"<inertial><origin xyz='{_f(rng.uniform(-0.05, 0.05, 3))}' rpy='{_f(rng.uniform(-np.pi, np.pi, 3))}'/>"
                f"<mass value='{_f(mass)}'/><inertia ixx='{_f(inertia[0])}' ixy='0' ixz='0' "
                f"iyy='{_f(inertia[1])}' iyz='0' izz='{_f(inertia[2])}'/></inertial>")

    base = inertial(4.0) if scene == "binary" else ""
    parts = [f"<robot name='peers_{scene}_{n}'>", f"<link name='base'>{base}</link>"]
    for i in range(1, n + 1):
        parent = f"link{i - 1}" if scene == "chain" else f"link{i // 2}"
        parent = "base" if parent == "link0" else parent
        axis = np.eye(3)[i % 3]
        origin = np.array([0.0, 0.0, -0.1]) + rng.uniform(-0.03, 0.03, 3)
        parts.append(f"<link name='link{i}'>{inertial()}</link>")
        parts.append(f"<joint name='joint{i}' type='revolute'><parent link='{parent}'/><child link='link{i}'/>"
                     f"<origin xyz='{_f(origin)}' rpy='{_f(rng.uniform(-0.5, 0.5, 3))}'/><axis xyz='{_f(axis)}'/>"
                     f"<limit lower='-1000' upper='1000' effort='1000' velocity='1000'/></joint>")
    parts.append("</robot>")
    return "\n".join(parts)


class Pair:
    """The engine model and the Pinocchio model of one URDF, with the maps between their coordinates.

    ``to_pin_q(q)`` maps an engine q to Pinocchio's; ``perm`` maps velocity
    indices: v_pin = v_eng[perm] (and M⁻¹_pin = M⁻¹_eng[perm][:, perm]).
    """

    def __init__(self, pin, urdf: str, floating: bool):
        self.engine = load_urdf_string(urdf, floating_base=floating, source="bench peers")
        self.pin_model = (pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer()) if floating
                          else pin.buildModelFromXML(urdf))
        self.pin_data = self.pin_model.createData()
        m, pm = self.engine, self.pin_model
        if (m.nv, m.nq) != (pm.nv, pm.nq):
            raise RuntimeError(f"bench peers: engine nv/nq {m.nv}/{m.nq} but Pinocchio {pm.nv}/{pm.nq}")
        self.perm = np.empty(m.nv, dtype=np.int64)
        self.qmap = np.empty(m.nq, dtype=np.int64)
        for jid in range(1, pm.njoints):
            name = pm.names[jid]
            vp, qp = pm.idx_vs[jid], pm.idx_qs[jid]
            if name == "root_joint":  # the free flyer: engine body 0, [ω; v] and quaternion (w, x, y, z)
                ve, qe = int(m.v_start[0]), int(m.q_start[0])
                self.perm[vp:vp + 6] = ve + np.array([3, 4, 5, 0, 1, 2])
                self.qmap[qp:qp + 7] = qe + np.array([0, 1, 2, 4, 5, 6, 3])
            else:
                sl_v, sl_q = m.v_slice(name), m.q_slice(name)
                self.perm[vp] = sl_v.start
                self.qmap[qp] = sl_q.start

    def to_pin_q(self, q):
        return np.ascontiguousarray(q[self.qmap])


def _state(pair: Pair, seed: int = 2):
    m = pair.engine
    rng = np.random.default_rng(seed)
    q = m.neutral_q()
    for i in range(m.n_bodies):
        if m.joint_nq[i] == 1:  # (the peers' models have revolute joints only)
            q[m.q_start[i]] = rng.uniform(-np.pi, np.pi)
    if m.is_floating:
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
        q[:3] = rng.normal(size=3)
    return q, rng.normal(size=m.nv), rng.normal(size=m.nv)


def _check(what: str, a, b) -> float:
    """Max |a − b| relative to max(1, max |a|); raises if above TOLERANCE (nothing differing is timed)."""
    err = float(np.abs(a - b).max() / max(1.0, float(np.abs(a).max())))
    if not err <= TOLERANCE:
        raise RuntimeError(f"bench peers: {what}: engine and Pinocchio differ by {err:.2e} (relative) > {TOLERANCE}")
    return err


# --------------------------------------------------------------------- timing
def interleaved_min(calls: dict, *, min_time: float, rounds: int) -> dict:
    """{name: (min seconds per call, calls timed)} timing the contenders in turn.

    Each contender's block size is doubled until one block lasts ≥ min_time;
    then ``rounds`` rounds each time one block of every contender, in turn, so
    slow phases of a shared machine hit all of them alike.
    """
    block = {}
    for name, fn in calls.items():
        fn()
        k = 1
        while _block_seconds(fn, k) < min_time and k < 1_000_000:
            k *= 2
        block[name] = k
    best = {name: math.inf for name in calls}
    for _ in range(rounds):
        for name, fn in calls.items():
            best[name] = min(best[name], _block_seconds(fn, block[name]) / block[name])
    return {name: (best[name], block[name] * rounds) for name in calls}


def _block_seconds(fn, k: int) -> float:
    t0 = time.perf_counter()
    for _ in range(k):
        fn()
    return time.perf_counter() - t0


# --------------------------------------------------------------------- the cases
def _aba_case(pin, n: int):
    pair = Pair(pin, tree_urdf(n, "chain"), floating=False)
    q, qd, tau = _state(pair)
    qp, qdp, taup = pair.to_pin_q(q), qd[pair.perm], tau[pair.perm]
    pm, pd = pair.pin_model, pair.pin_data
    err = _check(f"aba, chain n = {n}", aba(pair.engine, q, qd, tau)[pair.perm], pin.aba(pm, pd, qp, qdp, taup))
    return pair, err, {"engine_aba": lambda: aba(pair.engine, q, qd, tau),
                       "pin_aba": lambda: pin.aba(pm, pd, qp, qdp, taup)}


def pin_minv(pin, pm, pd, q):
    """Pinocchio's M⁻¹ as a full matrix: computeMinverse fills the upper triangle only."""
    Mi = pin.computeMinverse(pm, pd, q)
    return np.triu(Mi) + np.triu(Mi, 1).T


def _minv_case(pin, scene: str, n: int):
    floating = scene == "minv_floating_binary"
    pair = Pair(pin, tree_urdf(n, "binary" if floating else "chain"), floating=floating)
    q, _, _ = _state(pair)
    qp = pair.to_pin_q(q)
    pm, pd = pair.pin_model, pair.pin_data
    mine = minv(pair.engine, q)[np.ix_(pair.perm, pair.perm)]
    err = _check(f"minv, {scene} n = {n}", mine, pin_minv(pin, pm, pd, qp))
    return pair, err, {"engine_minv": lambda: minv(pair.engine, q),
                       "pin_computeMinverse": lambda: pin.computeMinverse(pm, pd, qp)}


PARTS = ("aba_chain", "minv_chain", "minv_floating_binary", "stiff_rope_step")


class UnknownPart(ValueError):
    """``run_peers(only=...)`` named a part that is not in ``PARTS``."""


def run_peers(quick: bool = False, only: str | None = None, **_ignored) -> SuiteResult:
    """Time the engine against Pinocchio (interleaved, minimum of rounds); raises PeersMissing without the peers.

    only: comma-separated names of ``PARTS`` to run (default all), e.g. ``"stiff_rope_step"``."""
    parts = PARTS if only is None else tuple(p.strip() for p in only.split(","))
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise UnknownPart(f"bench peers: unknown part(s) {', '.join(map(repr, unknown))}; "
                          f"expected any of {', '.join(PARTS)}")
    peer = import_peers()
    pin, mujoco = peer["pinocchio"], peer["mujoco"]
    timing = dict(min_time=0.002, rounds=3) if quick else dict(min_time=0.002, rounds=60)
    cases = [("aba_chain", n) for n in (ABA_QUICK if quick else ABA_SIZES)]
    cases += [("minv_chain", n) for n in (MINV_CHAIN_QUICK if quick else MINV_CHAIN_SIZES)]
    cases += [("minv_floating_binary", n) for n in (MINV_TREE_QUICK if quick else MINV_TREE_SIZES)]
    cases = [(scene, n) for scene, n in cases if scene in parts]
    rows = []
    for scene, n in Progress(cases, f"bench {SUITE}"):
        pair, err, calls = _aba_case(pin, n) if scene == "aba_chain" else _minv_case(pin, scene, n)
        for method, (seconds, count) in interleaved_min(calls, **timing).items():
            rows.append(Row(SUITE, scene, method, n, pair.engine.nv, seconds, 0, repeats=count,
                            notes=f"pinocchio {pin.__version__}; max relative difference {err:.1e}"))
        del pair, calls  # Pinocchio's Data grows like nv³ (≈ 7 GB at n = 512): never hold two at once
    previous_handler = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(lambda message: None)  # counted from MjData.warning; no MUJOCO_LOG.TXT in the cwd
    try:
        if "stiff_rope_step" in parts:
            rows += _step_rows(mujoco, quick, timing)
    finally:
        mujoco.set_mju_user_warning(previous_handler)
    return SuiteResult(rows, _ratios_text(rows, pin.__version__, mujoco.__version__), MIN_FIT)


def _step_rows(mujoco, quick: bool, timing: dict) -> list:
    rows = []
    for n in Progress(STEP_QUICK if quick else STEP_SIZES, f"bench {SUITE}: stiff rope step"):
        nv, steps, iters, err, status = _step_case(mujoco, n)
        timed = interleaved_min(steps, **timing)
        for method, (seconds, count) in timed.items():
            note = f"mass matrices agree to {err:.1e}"
            if method == "mujoco_discrete":
                note += f"; mujoco {mujoco.__version__}; {status()}"
            rows.append(Row(SUITE, "stiff_rope_step", method, n, nv, seconds, iters[method](), repeats=count,
                            notes=note))
    return rows


def _ratios_text(rows, pin_version: str, mujoco_version: str) -> str:
    by = {(r.scene, r.n, r.method): r.seconds_per_step for r in rows}
    body = []
    for scene, n in dict.fromkeys((r.scene, r.n) for r in rows):
        (eng, e), (peer, p) = [(m, t) for (s, k, m), t in by.items() if (s, k) == (scene, n)]
        target = TARGETS.get((scene, n), "")
        body.append([scene, n, f"{e * 1e6:.3g}", peer, f"{p * 1e6:.3g}", f"{e / p:.2f}", target])
    floor = by.get(("aba_chain", 1, "engine_aba"))
    floor_line = ("" if floor is None else
                  f"Per-call floor (`engine.aba`, n = 1): {floor * 1e6:.2f} µs (target ≤ {FLOOR_TARGET_SECONDS * 1e6:g} µs); "
                  f"`pin.aba` n = 1: {by[('aba_chain', 1, 'pin_aba')] * 1e6:.2f} µs.\n")
    return "\n".join([
        f"## engine / peer (Pinocchio {pin_version}, MuJoCo {mujoco_version})", "",
        "Minimum seconds per call over interleaved rounds (not the median: the table above shows the same minima). "
        "Targets are issue #21's acceptance lines.", "",
        markdown_table(["scene", "n", "engine (µs)", "peer", "peer (µs)", "engine / peer", "target"], body), "",
        floor_line,
        f"`stiff_rope_step`: one step of `Simulator(scenes.rope(n, side_spring={STEP_STIFFNESS:g}), \"pcg\", "
        f"dt={STEP_DT:g})` (RedMax, PCG) against `mujoco.mj_step` with the `discrete` integrator on the same "
        "bodies and hinges (MJCF written by the suite, the spring as a spatial tendon; mass matrices checked "
        "equal at the start). Both advance their own state through the timing rounds; `iterations` is the "
        "engine's mean PCG iterations per step, MuJoCo's `solver_niter` (0: no constraints), and the CSV notes "
        "count MuJoCo's warnings.", ""])


# --------------------------------------------------------------------- MuJoCo: the stiff-spring step
def _quat_wxyz(R) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix (MJCF's ``quat``)."""
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(np.asarray(R)).as_quat()
    return np.array([w, x, y, z])


def mjcf_for_rope(scene, n: int, stiffness: float, dt: float) -> str:
    """MJCF of ``scenes.rope(n, side_spring=stiffness)`` (end "weight"): the same bodies, hinges,
    inertias and hinge damping, and its side spring as a spatial tendon (stiffness N/m, rest
    length = the spring's: 1 m) from the middle link's lower end to the same world point;
    MuJoCo's ``discrete`` integrator at ``dt``, no contacts."""
    m = scene.model
    ell = float(-m.joint_origin[1][2])
    mid = n // 2
    anchor = scene.world_point(mid, np.array([0.0, 0.0, -ell])) + np.array([1.0, 0.0, 0.0])

    def body(i: int) -> str:
        R = m.body_rotation[i]
        inertia = R @ np.diag(m.body_principal_inertia[i]) @ R.T
        full = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2]]
        site = f"<site name='spring_a' pos='0 0 {-ell!r}'/>" if i == mid else ""
        inner = body(i + 1) if i + 1 < n else ""
        return (f"<body name='{m.body_names[i]}' pos='{_f(m.joint_origin[i])}' quat='{_f(_quat_wxyz(m.joint_rotation[i]))}'>"
                f"<joint name='{m.joint_names[i]}' type='hinge' axis='{_f(m.joint_axis[i])}' "
                f"damping='{_f(scene.joint_damping[i])}'/><inertial pos='{_f(m.body_com[i])}' "
                f"mass='{_f(m.body_mass[i])}' fullinertia='{_f(full)}'/>{site}{inner}</body>")

    return (f"<mujoco model='rope{n}_stiff'><option timestep='{dt!r}' integrator='discrete' "
            f"gravity='{_f(m.gravity)}'><flag contact='disable'/></option>"
            f"<worldbody><site name='spring_b' pos='{_f(anchor)}'/>{body(0)}</worldbody>"
            f"<tendon><spatial stiffness='{stiffness!r}' springlength='1.0'><site site='spring_a'/>"
            f"<site site='spring_b'/></spatial></tendon></mujoco>")


def _step_case(mujoco, n: int):
    """(engine nv, {method: step callable}, {method: iterations getter}, relative mass-matrix difference,
    MuJoCo status getter) for the n-link stiff rope.

    The two models are checked to be the same (joint-space mass matrices at q0 to TOLERANCE, the
    tendon at its rest length); their trajectories differ by design (different integrators).
    """
    from ... import crba, scenes
    from ...simulator import Simulator

    scene = scenes.rope(n, side_spring=STEP_STIFFNESS)
    mm = mujoco.MjModel.from_xml_string(mjcf_for_rope(scene, n, STEP_STIFFNESS, STEP_DT))
    md = mujoco.MjData(mm)
    md.qpos[:] = scene.q0
    md.qvel[:] = scene.qd0
    mujoco.mj_forward(mm, md)
    M = np.zeros((mm.nv, mm.nv))
    mujoco.mj_fullM(mm, md, M)
    err = _check(f"mass matrix, rope n = {n}", crba(scene.model, scene.q0), M)
    if abs(md.ten_length[0] - 1.0) > 1e-12:
        raise RuntimeError(f"bench peers: rope n = {n}: the MuJoCo tendon starts at {md.ten_length[0]} m, not 1 m")
    sim = Simulator(scene, "pcg", dt=STEP_DT)
    steps = {"engine_redmax_pcg": sim.step, "mujoco_discrete": lambda: mujoco.mj_step(mm, md)}
    iters = {"engine_redmax_pcg": lambda: float(np.mean(sim.stats.iterations[1:])) if len(sim.stats.iterations) > 1
             else 0.0, "mujoco_discrete": lambda: float(md.solver_niter[0])}
    def status() -> str:  # after timing: a blown-up MuJoCo state would make its time meaningless
        seen = [f"{mujoco.mjtWarning(i).name} × {w.number}" for i, w in enumerate(md.warning) if w.number]
        return (f"MuJoCo warnings: {', '.join(seen) or 'none'}; "
                f"final state {'finite' if np.isfinite(md.qpos).all() else 'NOT FINITE'} after {md.time:.3g} s")

    return scene.model.nv, steps, iters, err, status
