"""The engine's applications, beside the physics core: benchmarks (``bench``), the desktop viewer
(``viewer``), the Gymnasium environments (``envs``), the settings advisor (``advise``), parameter
sweeps (``sweep``) and the kernel warm-up (``warmup``).

An app imports the core (never the other way round) and other apps only through their package's
own names (``from ..advise import Trial``, not ``from ..advise.trial import Trial``); helpers
several apps share live in ``common``. ``tests/test_layering.py`` checks both.
"""
