"""Moving loads (the bridge demo's car): a force that travels along a path of simulated objects.

An object carries the load as a custom property ``redmax_moving_load`` (JSON): the world force
(N), the start and end times (s, scene time from the first frame) and the path, a list of
[object name, start, end] with the points in that object's local frame. The mapping adds it to the
engine scene (``Scene.add_moving_load``); the carrier object itself is not simulated — the demo
keys it along the path so one sees where the load is. Only demos write it today (there is no
authoring UI).
"""
from __future__ import annotations

import json

import numpy as np

PROP = "redmax_moving_load"


def attach(ob, force, path, t_start: float, t_end: float) -> None:
    """Store a moving load on ``ob``: force (3,) N in world axes, path [(object, start (3,), end (3,))]
    with local points of each object, travelling from t_start to t_end s."""
    ob[PROP] = json.dumps({"force": [float(f) for f in force], "t_start": float(t_start), "t_end": float(t_end),
                           "path": [[o.name, [float(x) for x in s], [float(x) for x in e]] for o, s, e in path]})


def add_moving_loads(objects, scene, bodies: dict) -> int:
    """Add the loads carried by ``objects`` to the engine ``scene``; ``bodies`` maps a simulated
    object's name to its body. Raises ValueError naming the carrier and the path object when a path
    runs over an object that is not simulated. Returns the number of loads."""
    count = 0
    for ob in objects:
        raw = ob.get(PROP) if hasattr(ob, "get") else None
        if raw is None:
            continue
        spec = json.loads(raw)
        path = []
        for name, start, end in spec["path"]:
            host = next((o for o in objects if o.name == name), None)
            if host is None or name not in bodies:
                raise ValueError(f"moving load on '{ob.name}': its path runs over '{name}', which is not a "
                                 "simulated object of this scene")
            M = np.array(host.matrix_world)
            path.append((bodies[name], M[:3, :3] @ start + M[:3, 3], M[:3, :3] @ end + M[:3, 3]))
        scene.add_moving_load(spec["force"], path, spec["t_start"], spec["t_end"], frame="world",
                              name=f"{ob.name} load")
        count += 1
    return count
