"""Contact inside a time step: detect at q, then correct the step's new velocity.

``ContactHandler.apply(q, v, metric)`` — the contact stage of a step — takes the
unconstrained end-of-step velocity v* of any reduced-coordinate stepper
(explicit or RedMax) and returns

    v⁺ = v* + M⁻¹ Jᵀ λ,

λ from projected Gauss–Seidel on the contact problem; the stepper then moves q with v⁺
(semi-implicit Euler). Detection (``detection.CollisionDetector``) covers the bodies' shapes among
themselves (``Scene.set_body_contacts``), the ground and the static colliders; it is shared with the
hard-constraints solver (``detect_world``). The solve takes one of two forms, equal to round-off:

* one articulation touched (all contacts on one tree, or on it and static colliders): the dense
  contact space of ``space`` (A = J M⁻¹ Jᵀ by ``method``: "minv", "cholesky" or "impulse") and ``pgs``;
* several: Gauss–Seidel on the velocities tree by tree, accelerated by nonsmooth conjugate gradients
  (``sparse_space``), so that a pile of a thousand boxes never forms a (3k)² matrix and a stack of ten
  converges in tens of sweeps. ``space="dense"`` or ``"sparse"`` forces one. At most ``velocity_max_iter``
  sweeps (30; warm-started): a falling pile never meets the tolerance (Gauss–Seidel on thousands of
  contacts converges linearly), and 200 sweeps a step made a 500-box pile 2.7× slower than Bullet at
  its 10 iterations with no visible gain (deepest penetration 0.89 mm at 200, 0.98 mm at 30; a stack of
  ten drifts 3.5 mm in 10 s at 30, 1.5 mm at 200).

The normal target velocity per contact (depth d, free normal velocity u*):

* a gap still open (d < 0): u_n ≥ d / h — the contact may close during the step but not overshoot
  (speculative contact: nothing tunnels, at any speed the detection's sweep covers);
* touching: u_n ≥ β (d − slop) / h — Baumgarte push-out of penetration beyond ``slop`` at rate β;
* an impact (touching and approaching faster than ``bounce_speed``): at least e · v_in, e the pair's
  restitution (Blender's product rule) and v_in the approach speed — this step's, or, when the gap was
  closed exactly in the previous step by the speculative target, the speed it came in with then (so a
  ball bounces with e · its impact speed whatever the step length).

Impulses are warm-started from the previous step by contact key and ``last`` keeps the step's
contacts, impulses and sweeps for tests and stats.

The velocity constraints are linear in the step; a body turning fast moves its contact point along an
arc and can end a step deeper than they allow. ``stabilize(q⁺)`` — the steppers call it after
integrating — projects such a configuration back (post-stabilization on positions, the velocity kept).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..algorithms.kinematics import link_poses
from ..integrators import integrate
from .closure_projection import project_onto_closures
from .colliders import PLANE, StaticCollider, body_shape_list
from .detection import CollisionDetector
from .jacobian import contact_point_maps
from .pgs import solve_contacts
from .shapes import Contacts, colliding_bodies
from .space import CHOICES, ContactSpace, pick_method
from .sparse_space import SparseContactSpace, model_trees

SPACES = ("auto", "dense", "sparse")
# a tree-by-tree projection ends when no contact is short of its target by more than this × slop: the pushed-out
# contacts then end within 1.25 slop (Gauss–Seidel's last digits, 200 sweeps in a settling pile, move nothing visible)
PROJECTION_FEASIBLE = 0.25
# the end-of-step projection is formed on the contacts this many trees (contact to contact) from a deep one, and again
# on them all when it moved a tree beyond (``ContactHandler._sparse_projection``)
PROJECTION_HOPS = 3


@dataclass
class ContactStep:
    contacts: Contacts
    impulses: np.ndarray  # (3k,) (λ_n, λ_t1, λ_t2) per contact, N·s
    sweeps: int
    A: np.ndarray | None  # dense contact-space inertia (3k, 3k); None when solved tree by tree
    space: str = "dense"
    # the contact space the impulses were solved on, at the step's q: ``velocity(v)`` = J v (3k,) for any v (nv,),
    # and J v* (3k,) of the velocity the stage was given (RedMax's impact check reads both instead of forming J again)
    solved_on: ContactSpace | SparseContactSpace | None = None
    u_free: np.ndarray | None = None


def scene_detector(scene, margin: float = 0.02) -> CollisionDetector:
    """The ``CollisionDetector`` of a (frozen) scene: body shapes, the ground as a plane collider, the static
    colliders; bodies joined by a joint or a loop closure, or excluded by name, never collide."""
    model = scene.model
    statics = []
    if scene.ground is not None:
        g = scene.ground
        bodies = None if scene.contact_bodies is None else tuple(sorted(colliding_bodies(model, scene.contact_bodies)))
        statics.append(StaticCollider("ground", PLANE, g.friction, g.restitution, (1 << 20) - 1, bodies, g.normal,
                                      g.height))
    statics += list(getattr(scene, "static_colliders", ()))
    pairs = scene.body_contact["bodies"] if scene.body_contact is not None else ()
    exclude = [(int(model.body_parent[i]), i) for i in range(model.n_bodies) if model.body_parent[i] >= 0]
    exclude += [(lc.body_a, lc.body_b) for lc in scene.loop_closures]
    exclude += list(getattr(scene, "collision_exclusions", ()))
    friction = scene.body_contact["friction"] if scene.body_contact is not None else 0.5
    return CollisionDetector(model, body_shape_list(model), statics, pairs, exclude, margin=margin,
                             pair_friction=friction)


def normal_targets(depth, u_n_free, restitution, came_in, h: float, baumgarte: float, slop: float,
                   bounce_speed: float):
    """(target normal velocities (k,), approach speeds to remember (k,)) for contacts of depth (k,) (m, > 0
    penetrating), free normal velocity u_n_free (k,), pair restitution (k,) and the speed each came in
    with when the previous step closed its gap (k,) (module docstring)."""
    d = depth
    push = baumgarte * np.maximum(d - slop, 0.0) / h
    target = np.where(d < 0.0, d / h, push)
    approach = -u_n_free
    touching = d > -slop
    v_in = np.where(approach > 0.0, np.maximum(approach, came_in), 0.0)
    impact = touching & (v_in > bounce_speed) & (restitution > 0.0)
    target = np.where(impact, np.maximum(target, restitution * v_in), target)
    # a gap the free motion would cross this step closes exactly; the bounce is next step's
    crossing = ~touching & (u_n_free * h < d) & (approach > bounce_speed) & (restitution > 0.0)
    return target, np.where(crossing, approach, 0.0)


class ContactMemory:
    """What the contacts of the last step leave to the next, by contact key: impulses (warm start) and the
    approach speed of a gap the speculative target closed."""

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        self.keys, self.lam, self.speed = np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0)

    def recall(self, keys):
        """(λ0 (k, 3), approach speeds (k,)) of the contacts that existed last step, zeros otherwise."""
        lam0, speed = np.zeros((len(keys), 3)), np.zeros(len(keys))
        if len(self.keys):
            idx = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
            hit = self.keys[idx] == keys
            lam0[hit] = self.lam[idx[hit]]
            speed[hit] = self.speed[idx[hit]]
        return lam0, speed

    def keep(self, keys, lam, speed) -> None:
        order = np.argsort(keys)
        self.keys, self.lam, self.speed = keys[order], np.asarray(lam).reshape(-1, 3)[order], speed[order]


class ContactHandler:
    """The contact stage of a scene with a ground, body contacts or static colliders; ``method``:
    ``"auto"`` (by the contacts' count, ``space.pick_method``), ``"minv"``, ``"cholesky"`` or ``"impulse"``
    (``space``); ``space``: ``"auto"``, ``"dense"``, ``"sparse"``."""

    def __init__(self, scene, dt: float, *, method: str = "auto", threads: int = 1, max_iter: int = 200,
                 tol: float = 1e-10, margin: float | None = None, baumgarte: float = 0.2, slop: float = 2e-4,
                 bounce_speed: float = 0.1, speculative_speed: float = 0.0, space: str = "auto",
                 velocity_tol: float = 1e-7, velocity_max_iter: int = 30, stabilize_depth: float = 1e-3):
        if method not in CHOICES:
            raise ValueError(f"contact_method must be one of {', '.join(CHOICES)}, got {method!r}")
        if space not in SPACES:
            raise ValueError(f"contact space must be one of {', '.join(SPACES)}, got {space!r}")
        if not scene.has_contact:
            raise ValueError(f"scene '{scene.name}' has no contact (call scene.set_ground(), set_body_contacts() "
                             "or add_static_collider())")
        self.model = scene.model
        self.ws = scene.model.make_workspace()  # the stage's own kinematics workspace
        self.ground = scene.ground
        self.dt = float(dt)
        self.method, self.threads, self.max_iter, self.tol = method, int(threads), int(max_iter), float(tol)
        self.space = space
        self.velocity_tol = float(velocity_tol)  # m/s: a tree-by-tree sweep that changes no contact velocity more ends
        if int(velocity_max_iter) < 1:
            raise ValueError(f"contact velocity_max_iter must be ≥ 1, got {velocity_max_iter}")
        self.velocity_max_iter = int(velocity_max_iter)  # tree-by-tree sweeps at most (and at most max_iter)
        if not (np.isfinite(speculative_speed) and speculative_speed >= 0):
            raise ValueError(f"contact speculative_speed must be ≥ 0 m/s, got {speculative_speed}")
        # detection margin: contacts are looked for this far beyond each pair's sweep in the step
        self.margin = 0.02 if margin is None else float(margin)
        if speculative_speed > 0:
            self.margin = max(self.margin, float(speculative_speed) * self.dt)
        self.baumgarte, self.slop, self.bounce_speed = float(baumgarte), float(slop), float(bounce_speed)
        self.stabilize_depth = float(stabilize_depth)  # m: deeper than this at a step's end is projected out
        self.detector = scene_detector(scene, self.margin)
        self.trees = model_trees(self.model, [(lc.body_a, lc.body_b) for lc in scene.loop_closures])
        self._dof_tree = np.zeros(self.model.nv, np.int64)  # the tree (group) each dof moves
        for t in range(len(self.trees.dof_start) - 1):
            self._dof_tree[self.trees.dofs[self.trees.dof_start[t]:self.trees.dof_start[t + 1]]] = t
        # the loop closures' rows at a configuration, (bodies (l, 2), link-frame wrenches (l, 12)) =
        # closure_rows(q, ws): set by a stepper that keeps closures (RedMax), so contact keeps them too
        self.closure_rows = None
        self.memory = ContactMemory()
        self._stepped = False  # apply found contacts: stabilize looks at the step's end
        self.limits_joined = False  # the last apply solved the joint limits' rows with the contacts'
        # the last apply's impacts split over two steps (a gap closed by the speculative target, the bounce next):
        # bounce_pending — it closed such a gap (its approach speed remembered; bounce_restitution: the largest
        # restitution of those contacts); bouncing — it bounced off one a previous apply closed. The energy budget
        # (RedMax "hold") charges the first step the approach energy and credits the second e² of it.
        self.bounce_pending = self.bouncing = False
        self.bounce_restitution = 0.0
        # link poses at the step's start and where the free velocity would take them, the contacts found there
        self._start = self._free_end = None
        self._end = self._strayed = None  # the step's end poses and each body's stray there (``_suspects``)
        self._found = Contacts.empty()
        self.last: ContactStep | None = None
        self.seconds = {"detect": 0.0, "space": 0.0, "pgs": 0.0, "stabilize": 0.0}  # accumulated per stage

    def detect(self, q, v=None) -> Contacts:
        """Contacts at configuration q (nq,); with v (nv,) the step's free velocity, the pairs' thresholds
        grow by how far the shapes would move in the step."""
        R, p = link_poses(self.model, q, ws=self.ws)
        R, p = R.copy(), p.copy()
        self._start = self._free_end = (R, p)
        if v is None:
            return self.detector.detect(R, p)
        R1, p1 = link_poses(self.model, integrate(self.model, q, v, self.dt), ws=self.ws)
        self._free_end = (R1.copy(), p1.copy())
        return self.detector.detect(R, p, *self._free_end)

    def normal_targets(self, contacts: Contacts, u_n_free: np.ndarray, came_in: np.ndarray | None = None):
        """(targets (k,), approach speeds to remember (k,)) of ``normal_targets`` with this stage's settings."""
        return normal_targets(contacts.depth, u_n_free, self._restitution(contacts),
                              np.zeros(len(contacts)) if came_in is None else came_in,
                              self.dt, self.baumgarte, self.slop, self.bounce_speed)

    def _restitution(self, contacts: Contacts) -> np.ndarray:
        """Each contact's pair restitution (k,)."""
        if contacts.restitution is None:
            return np.full(len(contacts), self.ground.restitution if self.ground is not None else 0.0)
        return contacts.restitution

    def apply(self, q, v, metric=None, limits=None) -> np.ndarray:
        """v⁺ (nv,) = v* + M⁻¹ Jᵀ λ for the contacts at configuration q (nq,), v* (nv,); ``metric``:
        the step's own M̃ as (link inertia blocks (n, 6, 6), joint diagonal (nv,)) (see ``space``),
        M when None. ``limits``: the stepper's joint-limit stage (``JointLimits.for_contact``), whose rows are
        then solved with the contacts' on the dense space (``limits_joined`` True: its ``apply`` has nothing left)."""
        inertia, joint_diag = (None, None) if metric is None else metric
        self.limits_joined = False
        t0 = time.perf_counter()
        contacts = self.detect(q, v)
        k = len(contacts)
        t1 = time.perf_counter()
        self.seconds["detect"] += t1 - t0
        self._stepped = k > 0
        self._found = contacts
        if k == 0:
            self.last = ContactStep(contacts, np.zeros(0), 0, np.zeros((0, 0)))
            self.memory.clear()
            self.bounce_pending = self.bouncing = False
            return v
        keys = contacts.feature
        lam0, came_in = self.memory.recall(keys)
        self.bouncing = bool(np.any(came_in > 0.0))
        if self._dense(contacts):
            joined = limits is not None
            space = ContactSpace(self.model, q, contacts, "minv" if joined else self._method(contacts), self.threads,
                                 inertia, joint_diag, self.ws)
            t2 = time.perf_counter()
            self.seconds["space"] += t2 - t1
            u_free = space.velocity(v)
            target, speed = self.normal_targets(contacts, u_free[0::3], came_in)
            if joined:  # (a leg pushed out of the ground lifts the body instead of bending the joint past its bound)
                v_new, lam, sweeps = limits.with_contacts(q, v, space, u_free, target, contacts.friction,
                                                          lam0.reshape(-1), self.max_iter, self.tol)
                self.limits_joined = True
            else:
                lam, _, sweeps = solve_contacts(space.A, u_free, target, contacts.friction, lam0.reshape(-1),
                                                max_iter=self.max_iter, tol=self.tol)
                v_new = v + space.response(lam)
            self.last = ContactStep(contacts, lam, sweeps, space.A, "dense", space, u_free)
        else:
            space = self._sparse_space(q, contacts, inertia, joint_diag)
            t2 = time.perf_counter()
            self.seconds["space"] += t2 - t1
            u_free = space.velocity(v)
            target, speed = self.normal_targets(contacts, u_free[0::3], came_in)
            lam, v_new, sweeps = space.solve(v, target, contacts.friction, lam0.reshape(-1),
                                             max_iter=min(self.max_iter, self.velocity_max_iter), tol=self.velocity_tol)
            self.last = ContactStep(contacts, lam, sweeps, None, "sparse", space, u_free)
        self.memory.keep(keys, lam, speed)
        pending = speed > 0.0
        self.bounce_pending = bool(np.any(pending))
        self.bounce_restitution = float(self._restitution(contacts)[pending].max(initial=0.0))
        self._stepped = True
        self.seconds["pgs"] += time.perf_counter() - t2
        return v_new

    def stabilize(self, q_new, limits=None) -> np.ndarray:
        """Post-stabilization (the step's last stage, after q⁺ = q ⊕ h v⁺). The velocity constraints are linear
        and hold at the contacts found at q: a body turning fast moves its surface along arcs, a box tipping
        about one corner swings the others down, and either can end the step deeper than they allow. Where a
        contact at q⁺ is deeper than ``stabilize_depth``, q⁺ moves by Δq = M⁻¹ J_nᵀ δ, δ ≥ 0 with
        J_n Δq ≥ depth − slop for those contacts and J_n Δq ≥ min(depth − slop, 0) for the others found (pushed no
        deeper; a gap: at most closing it) — the contact problem without friction, on positions — twice at most (a
        projection is linear too). The velocity is left as it is
        (no energy is added).

        Only the bodies that can have a deep contact are looked at (``_suspects``), with their neighbours (whose
        contacts hold what a projection pushes); none: nothing to do (a pile at rest). After a projection only the
        bodies it moved are detected again: the contacts among the others are those found before it, their poses
        unchanged. ``limits`` (``JointLimits.for_contact``): on the dense space the projection keeps the
        joints inside their bounds too (``limits_contact.positions``), so ``JointLimits.within`` has no reason to undo
        it."""
        if not self._stepped:
            return q_new
        self._stepped = False
        t0 = time.perf_counter()
        R1, p1 = link_poses(self.model, q_new, ws=self.ws)
        R1, p1 = R1.copy(), p1.copy()
        contacts = self._end_contacts(R1, p1)
        if contacts is None:
            self.seconds["stabilize"] += time.perf_counter() - t0
            return q_new
        for projections in range(2):
            if len(contacts) == 0 or contacts.depth.max() <= self.stabilize_depth:
                break
            if self._dense(contacts):
                space = ContactSpace(self.model, q_new, contacts, "minv" if limits is not None else
                                     self._method(contacts), self.threads, None, None, self.ws)
                dq = self._projection(space, contacts.depth) if limits is None else \
                    limits.project_with_contacts(q_new, space, self._projection_targets(contacts.depth), self.max_iter,
                                                 self.tol)
            else:
                dq = self._sparse_projection(q_new, contacts)
            q_new = integrate(self.model, q_new, dq, 1.0)
            if projections == 0:
                contacts = self._detect_moved(q_new, contacts, dq)
        self.seconds["stabilize"] += time.perf_counter() - t0
        return q_new

    def _end_contacts(self, R1, p1) -> Contacts | None:
        """The contacts at the step's end (link poses R1, p1) for its projection; None when none can be deeper than
        ``stabilize_depth``. The suspects' (``_suspects``) are detected; the other bodies' are the step's start
        contacts with their depth bound in place of the depth (none beyond ``stabilize_depth``: the projection only
        holds them, a touching one pushed no deeper, a gap closed by at most its bound's gap, less than its own) — the
        narrow phase of a pile runs on the few bodies that may be deep, not on their neighbours too."""
        suspect, bound = self._suspects(R1, p1)
        if suspect is None:
            return None
        held = ~self._found.involves(suspect)
        kept = self._found.select(held)
        return Contacts.concatenate([kept.with_depth(bound[held]), self.detector.detect(R1, p1, bodies=suspect)])

    def _suspects(self, R1, p1):
        """((n,) bool: the bodies that may have a contact deeper than ``stabilize_depth`` at the step's end (link poses
        R1, p1), or None when there is none; (k,) a bound on each step-start contact's depth there). Every pair the
        step could close was found at its start (its threshold: margin plus its free motion); a pair's depth at the end
        is at most its depth then plus the two bodies' moves (``body_moves``), and at most the bound of its shapes at
        their end poses (``CollisionDetector.depth_bounds``: the same bound, of the boxes of a settling pile, without
        their narrow phase and without the moves — a box resting 0.9 mm deep that moved 0.2 mm is not a suspect). A
        body whose end strays from where the free velocity would have taken it by half the margin or more may reach
        a pair not found, and is a suspect too."""
        found, margin = self._found, self.detector.margin
        moved = self.detector.body_moves(*self._start, R1, p1)
        self._end, self._strayed = (R1, p1), self.detector.body_moves(*self._free_end, R1, p1)
        strayed = self._strayed >= 0.5 * margin
        other = found.other_bodies()
        grown = found.depth + moved[found.body] + np.where(other >= 0, moved[np.maximum(other, 0)], 0.0)
        bound = np.minimum(grown, self.detector.depth_bounds(found, R1, p1))
        suspect = strayed.copy()
        found.flag_bodies(suspect, bound > self.stabilize_depth)
        return (suspect if suspect.any() else None), bound

    def _detect_moved(self, q, contacts: Contacts, dq) -> Contacts:
        """The contacts at q after a projection Δq (nv,) from the step's end: those of the trees Δq moved with their
        depth bound at q (``depth_bounds``), detected afresh on the bodies where that is beyond ``stabilize_depth``
        or that strayed so far, with Δq's move, that they may reach a pair not found (``_suspects``); the others'
        kept (nothing of theirs moved)."""
        moved_tree = np.zeros(len(self.trees.dof_start) - 1, bool)
        moved_tree[self._dof_tree[np.flatnonzero(dq)]] = True
        moved = moved_tree[self.trees.tree_of]
        if not moved.any():
            return contacts
        R, p = link_poses(self.model, q, ws=self.ws)
        R, p = R.copy(), p.copy()
        mine = contacts.involves(moved)
        depth = contacts.depth.copy()
        depth[mine] = self.detector.depth_bounds(contacts.select(mine), R, p)
        contacts = contacts.with_depth(depth)
        fresh = self._strayed + self.detector.body_moves(*self._end, R, p) >= 0.5 * self.detector.margin
        contacts.flag_bodies(fresh, depth > self.stabilize_depth)
        fresh &= moved
        if not fresh.any():
            return contacts
        return Contacts.concatenate([contacts.select(~contacts.involves(fresh)),
                                     self.detector.detect(R, p, bodies=fresh)])

    def _sparse_projection(self, q, contacts: Contacts) -> np.ndarray:
        """``_projection``'s Δq (nv,) on the tree-by-tree space, formed only on the contacts within
        ``PROJECTION_HOPS`` trees of a deep one (a pile's end-of-step contacts are thousands, its deep ones a few).
        The projection's Gauss–Seidel passes over the contacts none of whose trees moved (``skip_settled``) and
        starts from Δq = 0, where every contact that is not deep already holds: the contacts left out change
        nothing as long as none of their trees moves, which is checked — where it moved a tree with a contact left
        out, the projection is made again on the contacts within ``PROJECTION_HOPS`` trees of a deep one or of a
        tree it moved (one articulated pass for all: same q). Same Δq as on them all."""
        if self.closure_rows is not None:
            return self._projection(self._sparse_space(q, contacts, None, None), contacts.depth)
        ta, tb = self._contact_trees(contacts)
        paired = tb >= 0
        seed = self._deep_trees(contacts, ta, tb)
        space = None
        while True:
            sub = self._near(ta, tb, seed)
            part = contacts.select(sub)
            space = self._sparse_space(q, part, None, None, space)
            dq = self._projection(space, part.depth)
            if sub.all():
                return dq
            moved = np.zeros(len(seed), bool)
            moved[self._dof_tree[np.flatnonzero(dq)]] = True
            left = ~sub
            if not (moved[ta[left]].any() or moved[tb[left & paired]].any()):
                return dq
            seed |= moved

    def _contact_trees(self, contacts: Contacts):
        """(trees of the contacts' bodies (k,), of their other bodies (k,), −1 for a static collider)."""
        other = contacts.other_bodies()
        tree = self.trees.tree_of
        return tree[contacts.body], np.where(other >= 0, tree[np.maximum(other, 0)], -1)

    def _deep_trees(self, contacts: Contacts, ta, tb) -> np.ndarray:
        """(R,) bool: the trees with a contact deeper than ``stabilize_depth`` (ta, tb: ``_contact_trees``)."""
        seed = np.zeros(len(self.trees.dof_start) - 1, bool)
        deep = contacts.depth > self.stabilize_depth
        seed[ta[deep]] = True
        seed[tb[deep & (tb >= 0)]] = True
        return seed

    def _near(self, ta, tb, seed) -> np.ndarray:
        """(k,) bool: the contacts (their trees ta, tb: ``_contact_trees``) on a tree at most ``PROJECTION_HOPS``
        contacts away from a seed tree ((R,) bool; trees without dofs carry nothing along)."""
        paired = tb >= 0
        tb0 = np.maximum(tb, 0)
        movable = self.trees.dof_start[1:] > self.trees.dof_start[:-1]
        region = seed.copy()
        for _ in range(PROJECTION_HOPS):
            region &= movable
            near = region[ta] | (paired & region[tb0])
            region[ta[near]] = True
            region[tb[near & paired]] = True
        region &= movable
        return region[ta] | (paired & region[tb0])

    def _projection(self, space, depth) -> np.ndarray:
        """Δq = W J_nᵀ δ (nv,), δ ≥ 0 with J_n Δq ≥ depth − slop where a contact is deeper than ``stabilize_depth``
        and J_n Δq ≥ min(depth − slop, 0) elsewhere (pushed no deeper: a step with no deep contact projects nothing,
        and a pile's resting contacts, a little beyond the slop, are the velocity stage's), on a contact space (dense
        or tree by tree)."""
        k = len(depth)
        target, none = self._projection_targets(depth), np.zeros(k)
        if isinstance(space, ContactSpace):
            lam, _, _ = solve_contacts(space.A, np.zeros(3 * k), target, none, None, max_iter=self.max_iter,
                                       tol=self.tol)
            return space.response(lam)
        _, dq, _ = space.solve(np.zeros(self.model.nv), target, none, np.zeros(3 * k), max_iter=self.max_iter,
                               tol=1e-3 * self.slop, feasible=PROJECTION_FEASIBLE * self.slop, skip_settled=True)
        return dq

    def _projection_targets(self, depth) -> np.ndarray:
        """``_projection``'s J_n Δq targets (k,) for contacts of depth (k,)."""
        target = depth - self.slop
        return np.where(depth > self.stabilize_depth, target, np.minimum(target, 0.0))

    def _sparse_space(self, q, contacts, inertia, joint_diag, like=None) -> SparseContactSpace:
        """The tree-by-tree contact problem at q, its responses restricted to the closures when there are any;
        ``like``: a space at the same q and metric whose articulated pass serves (``SparseContactSpace.on``)."""
        F = np.empty((len(contacts), 3, 6))  # (compiled: numpy's cross products and temporaries took ~2.5 ms a step at 500 boxes)
        contact_point_maps(np.ascontiguousarray(contacts.point, dtype=float),
                           np.ascontiguousarray(contacts.normal, dtype=float), F)
        if like is not None:
            space = like.on(contacts, F)
        else:
            space = SparseContactSpace(self.model, self.trees, q, contacts, F, inertia, joint_diag, self.ws)
        if self.closure_rows is not None:
            project_onto_closures(space, self.closure_rows(q, self.ws), self.ws.X0_E, self.ws.X0_r)
        return space

    def _method(self, contacts: Contacts) -> str:
        """The contact space's method for these contacts (``method``, or by their count when "auto")."""
        return pick_method(self.model.nv, len(contacts)) if self.method == "auto" else self.method

    def _dense(self, contacts: Contacts) -> bool:
        """Dense contact space: forced, or all contacts on one tree (besides static colliders) and no closures to keep
        (the closures' projection is the tree-by-tree form's)."""
        if self.closure_rows is not None:
            return False
        if self.space != "auto":
            return self.space == "dense"
        other = contacts.other_bodies()
        t = self.trees.tree_of[np.concatenate([contacts.body, other[other >= 0]])]
        t = t[self.trees.dof_start[t + 1] > self.trees.dof_start[t]]  # trees that can move
        return t.size == 0 or bool(np.all(t == t[0]))


def contact_stage(scene, dt: float, options: dict | None = None) -> ContactHandler | None:
    """The contact stage of a reduced-coordinate stepper: a ``ContactHandler`` when the scene has a
    ground, body contacts or static colliders, else None. options: ``method``, ``threads`` and the
    handler's keywords."""
    if not scene.has_contact:
        return None
    return ContactHandler(scene, dt, **(options or {}))
