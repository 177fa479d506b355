"""Loop-closure constraint rows G (thesis 000, Sec. 2.2.5) in link-twist coordinates.

Each closure contributes rows g (12,) over [φ_a; φ_b] (the two bodies' link
twists) with G q̇ = Σ g·[J_a q̇; J_b q̇], and the position errors C whose
rates those rows are. Point rows: ẋ_b − ẋ_a = 0; rotational rows act on the
relative angular velocity ω_b − ω_a (world).
"""
from __future__ import annotations

import numpy as np

from ..scene import LOOP_KINDS, WORLD


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _perpendiculars(n):
    a = np.array([1.0, 0, 0]) if abs(n[0]) < 0.9 else np.array([0, 1.0, 0])
    e1 = np.cross(n, a)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(n, e1)


def constraint_rows(closures, R_link, p_link):
    """(bodies (l, 2), rows (l, 12), errors (l,)) for all closures at link poses (R, p)."""
    bodies, rows, errs = [], [], []
    for lc in closures:
        Ra = np.eye(3) if lc.body_a == WORLD else R_link[lc.body_a]
        Rb = np.eye(3) if lc.body_b == WORLD else R_link[lc.body_b]
        pa = np.zeros(3) if lc.body_a == WORLD else p_link[lc.body_a]
        pb = np.zeros(3) if lc.body_b == WORLD else p_link[lc.body_b]
        xa, xb = pa + Ra @ lc.point_a, pb + Rb @ lc.point_b
        Ga = np.hstack([-Ra @ _skew(lc.point_a), Ra])  # ẋ = R Γ φ
        Gb = np.hstack([-Rb @ _skew(lc.point_b), Rb])
        for k in range(3):
            rows.append(np.concatenate([-Ga[k], Gb[k]]))
            errs.append(xb[k] - xa[k])
            bodies.append((lc.body_a, lc.body_b))
        n_rot = LOOP_KINDS[lc.kind]
        if n_rot == 0:
            continue

        def ang_row(e):  # e·(ω_b − ω_a) in link twists: ω_world = R ω_link
            return np.concatenate([-(Ra.T @ e), np.zeros(3), Rb.T @ e, np.zeros(3)])

        if lc.kind == "fixed":
            Rerr = Rb @ (Ra @ lc.rest_rotation).T
            theta = 0.5 * np.array([Rerr[2, 1] - Rerr[1, 2], Rerr[0, 2] - Rerr[2, 0], Rerr[1, 0] - Rerr[0, 1]])
            for k in range(3):
                e = np.zeros(3)
                e[k] = 1.0
                rows.append(ang_row(e))
                errs.append(theta[k])
                bodies.append((lc.body_a, lc.body_b))
        elif lc.kind == "hinge":
            na = Ra @ lc.axis_a
            nb = Rb @ (lc.rest_rotation.T @ lc.axis_a)
            mis = np.cross(na, nb)  # rotation taking na to nb (small angle)
            for e in _perpendiculars(na):
                rows.append(ang_row(e))
                errs.append(float(e @ mis))
                bodies.append((lc.body_a, lc.body_b))
        else:  # universal: the two axes stay perpendicular
            na, nb = Ra @ lc.axis_a, Rb @ lc.axis_b
            c = np.cross(na, nb)
            rows.append(ang_row(-c))
            errs.append(float(na @ nb))
            bodies.append((lc.body_a, lc.body_b))
    l = len(rows)
    return (np.array(bodies, dtype=np.int64).reshape(l, 2), np.array(rows, float).reshape(l, 12),
            np.array(errs, float))
