"""Type-check the Blender add-on (``addon/``) with mypy against ``fake-bpy-module``'s stubs.

    python scripts/typecheck.py            # needs: pip install -e ".[dev]"

The repository root is the extension package, so the check runs on a temporary
package named ``redmax`` (a symlink to the checkout): ``addon``'s relative imports
(``from .. import engine``) then resolve as they do in the installed extension.
The engine itself is followed for types but not reported on (see ``[tool.mypy]``
in pyproject.toml). Exits with mypy's status.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    missing = ["mypy"] if importlib.util.find_spec("mypy") is None else []
    missing += [] if _has_stub_dir() else ["fake-bpy-module"]
    if missing:
        print(f"typecheck: {', '.join(missing)} not installed; run pip install -e \".[dev]\"", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="redmax_types_") as tmp:
        (Path(tmp) / "redmax").symlink_to(ROOT, target_is_directory=True)
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "--cache-dir", str(ROOT / ".mypy_cache"), "-p", "redmax.addon"]
        return subprocess.run(cmd, cwd=tmp).returncode


def _has_stub_dir() -> bool:
    return any((Path(p) / "bpy-stubs").is_dir() for p in sys.path if p)


if __name__ == "__main__":
    sys.exit(main())
