"""From simulated link frames to what a bake keys and the live preview poses: each target's local basis
(an object's ``matrix_basis`` relative to its parent, a pose bone's relative to its rest pose and parent),
split into location and quaternion channels continuous in sign."""
from __future__ import annotations

import numpy as np

from . import mapping
from ._engine import engine

TRANSLATING = (engine.joints.PRISMATIC, engine.joints.FREE)  # bones keyed with location as well


class BakeError(RuntimeError):
    """A bake that cannot run or finish; the message says why and names the element."""


def quaternions(R):
    """Unit quaternions (…, 4) as (w, x, y, z) of rotation matrices R (…, 3, 3) (the engine's Shepperd method)."""
    return engine.joints.matrix_to_quat(R)


def continuous(q):
    """Flip signs along the first axis so consecutive quaternions (F, …, 4) stay on one hemisphere."""
    flips = np.sum(q[1:] * q[:-1], axis=-1) < 0  # sign changes between raw neighbours
    parity = np.cumsum(flips, axis=0) % 2 == 1   # flipped an odd number of times so far
    out = q.copy()
    out[1:][parity] *= -1
    return out


def rigid_inverse(L):
    """Inverse of rigid transforms L (…, 4, 4)."""
    out = np.zeros_like(L)
    Rt = np.swapaxes(L[..., :3, :3], -1, -2)
    out[..., :3, :3] = Rt
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", Rt, L[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def quaternion_product(a, b):
    """Hamilton products a ⊗ b of quaternions (…, 4) as (w, x, y, z): R(a ⊗ b) = R(a) R(b)."""
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def keyed_poses(m, R, p):
    """What a bake keys for the simulated link frames (R (F, n, 3, 3) rotations, p (F, n, 3) origins) of
    mapping ``m``: (keys, quaternions (F, k, 4), locations (F, k, 3)); keys[k] = (object, bone name or "",
    keys location), as ``local_bases``. An object without a parent keys its world pose, the link frame
    times its constant offset: as quaternions q(L) ⊗ q(O) and R_L t_O + p_L, with no 4×4 product per frame
    (scale dropped by normalising the offset's columns); other targets go through ``local_bases``. The
    quaternions are continuous in sign along the frames, the first with w ≥ 0."""
    plain = [i for i, t in enumerate(m.targets) if t.keyed and not t.bone and t.object.parent is None]
    others = [t for t in m.targets if t.keyed and (t.bone or t.object.parent is not None)]
    keys = [(m.targets[i].object, "", True) for i in plain]
    A = m.offsets[plain, :3, :3]
    q_offset = quaternions(A / np.linalg.norm(A, axis=-2, keepdims=True))  # (k, 4)
    qs = [quaternion_product(quaternions(R[:, plain]), q_offset[None])]
    locations = [np.einsum("fkij,kj->fki", R[:, plain], m.offsets[plain, :3, 3]) + p[:, plain]]
    if others:
        links = np.zeros(R.shape[:2] + (4, 4))
        links[..., :3, :3], links[..., :3, 3], links[..., 3, 3] = R, p, 1.0
        rest, M = local_bases(m, links, with_plain=False)
        keys += rest
        qs.append(quaternions(M[..., :3, :3] / np.linalg.norm(M[..., :3, :3], axis=-2, keepdims=True)))
        locations.append(M[..., :3, 3])
    q = continuous(np.concatenate(qs, axis=1))
    q *= np.where(q[:1, :, :1] < 0, -1.0, 1.0)
    return keys, q, np.concatenate(locations, axis=1)


def local_bases(m, links, with_plain=True):
    """What Blender keys for simulated link frames ``links`` (F, n, 4, 4) of mapping ``m``: the objects'
    matrix_basis (relative to their parent) and the pose bones' matrix_basis (relative to their rest pose
    and parent), all targets at once. The bake keys these; the live preview assigns them.

    Returns (keys, bases): keys[k] = (object, bone name or "", keys location) and bases (F, k, 4, 4);
    ``with_plain=False`` leaves out the objects without a parent (``keyed_poses`` keys them its way).
    """
    targets, offsets = m.targets, m.offsets
    worlds = links @ offsets
    index = {(t.object.name, t.bone): i for i, t in enumerate(targets) if t.keyed}
    keys, parts, plain = [], [], []
    for i, t in enumerate(targets):
        ob = t.object
        if t.bone or not t.keyed:  # (a moving anchor plays its own animation; a connector is no object)
            continue
        parent = ob.parent
        if parent is not None and ob.parent_type != "OBJECT":
            raise BakeError(f"object '{ob.name}': parented to a {ob.parent_type.lower()}, which a bake "
                            "cannot key; parent it to an object")
        if parent is None:
            if with_plain:
                plain.append(i)
            continue
        j = index.get((parent.name, ""))
        pw = worlds[:, j] if j is not None else np.broadcast_to(mapping.matrix(parent.matrix_world),
                                                                worlds[:, i].shape)
        parts.append((np.linalg.inv(pw @ mapping.matrix(ob.matrix_parent_inverse)) @ worlds[:, i])[:, None])
        keys.append((ob, "", True))
    keys = [(targets[i].object, "", True) for i in plain] + keys
    parts.insert(0, worlds[:, plain])
    for ob in dict.fromkeys(t.object for t in targets if t.bone and t.keyed):
        parts.append(_bone_bases(m, ob, links, index))
        keys += [(ob, bone.name, int(m.scene.model.joint_type[index[(ob.name, bone.name)]]) in TRANSLATING)
                 for bone in ob.data.bones]
    return keys, np.concatenate(parts, axis=1)


def _bone_bases(m, ob, links, index):
    """(F, B, 4, 4) pose-bone bases of armature ``ob``'s bones (in ``ob.data.bones`` order), all at once:
    a root's is ML⁻¹ A⁻¹ W, a child's ML⁻¹ ML_p O_p⁻¹ L_p⁻¹ L O (the armature matrix A cancels; ML: the
    bones' rest matrices, O: the mapping's offsets, L: the link frames)."""
    bones = ob.data.bones
    ML = np.empty(16 * len(bones), dtype=np.float32)
    bones.foreach_get("matrix_local", ML)  # column-major 4×4 per bone (recipes §3)
    ML = ML.astype(float).reshape(-1, 4, 4).transpose(0, 2, 1)
    position = {bone.name: k for k, bone in enumerate(bones)}
    at = np.array([index[(ob.name, bone.name)] for bone in bones])
    up = np.array([position[bone.parent.name] if bone.parent is not None else -1 for bone in bones])
    ML_inv = np.linalg.inv(ML)
    child = up >= 0
    bases = np.empty((links.shape[0], len(bones), 4, 4))
    roots = ~child
    if roots.any():
        A_inv = np.linalg.inv(mapping.matrix(ob.matrix_world))
        bases[:, roots] = ML_inv[roots] @ A_inv @ (links[:, at[roots]] @ m.offsets[at[roots]])
    if child.any():
        parents = at[up[child]]
        C = ML_inv[child] @ ML[up[child]] @ np.linalg.inv(m.offsets[parents])
        bases[:, child] = C @ rigid_inverse(links[:, parents]) @ links[:, at[child]] @ m.offsets[at[child]]
    return bases
