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


def local_bases(m, links):
    """What Blender keys for simulated link frames ``links`` (F, n, 4, 4) of mapping ``m``.

    Yields (object, bone name or "", basis matrices (F, 4, 4), keys location): the object's
    matrix_basis (relative to its parent) or the pose bone's matrix_basis (relative to its rest
    pose and parent). The bake keys these; the live preview assigns them.
    """
    targets = m.targets
    offsets = m.offsets
    worlds = links @ offsets
    index = {(t.object.name, t.bone): i for i, t in enumerate(targets)}
    for i, t in enumerate(targets):
        ob = t.object
        if t.bone:
            continue
        parent = ob.parent
        if parent is not None and ob.parent_type != "OBJECT":
            raise BakeError(f"object '{ob.name}': parented to a {ob.parent_type.lower()}, which a bake "
                            "cannot key; parent it to an object")
        if parent is None:
            local = worlds[:, i]
        else:
            j = index.get((parent.name, ""))
            pw = worlds[:, j] if j is not None else np.broadcast_to(mapping.matrix(parent.matrix_world),
                                                                    worlds[:, i].shape)
            local = np.linalg.inv(pw @ mapping.matrix(ob.matrix_parent_inverse)) @ worlds[:, i]
        yield ob, "", local, True
    for ob in {t.object for t in targets if t.bone}:
        A_inv = np.linalg.inv(mapping.matrix(ob.matrix_world))
        for bone in ob.data.bones:
            i = index[(ob.name, bone.name)]
            ML = mapping.matrix(bone.matrix_local)
            if bone.parent is None:
                basis = np.linalg.inv(ML) @ A_inv @ worlds[:, i]
            else:  # P_p⁻¹ P = O_p⁻¹ L_p⁻¹ L O (the armature matrix cancels)
                j = index[(ob.name, bone.parent.name)]
                rel = np.linalg.inv(offsets[j]) @ rigid_inverse(links[:, j]) @ links[:, i] @ offsets[i]
                basis = np.linalg.inv(ML) @ mapping.matrix(bone.parent.matrix_local) @ rel
            yield ob, bone.name, basis, int(m.scene.model.joint_type[i]) in TRANSLATING
