"""Build the wheel for pip users, with the compiled kernels for this platform inside (docs/kernels.md).

    python scripts/build_wheel.py                         # dist/redmax_engine-<v>-py311-none-<platform>.whl
    python scripts/build_wheel.py --kernels none          # the pure-Python wheel (py3-none-any), no kernels
    python scripts/build_wheel.py --kernels DIR           # kernels built before by scripts/build_kernels.py
    python scripts/build_wheel.py --kernel-groups api,pcg # only some groups (see build_kernels.py)

The shipped sources (``pyproject.toml``, README, ``engine/``, ``addon/``) are copied into a staging folder,
``scripts/build_kernels.py`` compiles the kernels from that copy for the platform's portable CPU baseline
into ``engine/_shipped_kernels`` (``--kernels build``, the default), and ``pip wheel`` builds the wheel
there. Kernels only serve the Python version and platform they were compiled on, so a wheel with
them is tagged for both (``py311-none-manylinux_2_28_x86_64`` here) and requires exactly the numba they
were compiled with; without them it is pure. Prints the wheel's size.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(1, str(ROOT))
import build_kernels  # noqa: E402
from engine import _kernel_store  # noqa: E402  (no numba)

SHIPPED = ("pyproject.toml", "README.md", "LICENSE", "engine", "addon")
# pip platform tags for the wheel by platform (numba's own wheels: manylinux_2_28 on Linux, macOS 12+)
WHEEL_PLATFORMS = {"linux-x64": "manylinux_2_28_x86_64", "linux-arm64": "manylinux_2_28_aarch64",
                   "windows-x64": "win_amd64", "macos-arm64": "macosx_12_0_arm64", "macos-x64": "macosx_12_0_x86_64"}


class WheelBuildError(RuntimeError):
    pass


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--output-dir", default=str(ROOT / "dist"))
    ap.add_argument("--kernels", default="build", metavar="build|none|DIR",
                    help="ship compiled kernels: build them (default), none, or a folder made by build_kernels.py")
    ap.add_argument("--kernel-groups", default="all", help="with --kernels build: which groups (see build_kernels.py)")
    return ap.parse_args(argv)


def stage(staging: Path) -> None:
    for name in SHIPPED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, staging / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc",
                                                                             "_shipped_kernels"))
        elif src.is_file():
            shutil.copy2(src, staging / name)


def add_kernels(args, staging: Path) -> bool:
    """Put the kernels into ``staging/engine/_shipped_kernels`` per ``--kernels``; False for none."""
    if args.kernels == "none":
        return False
    dest = staging / "engine" / _kernel_store.SHIPPED_DIR.name
    if args.kernels == "build":
        try:
            build_kernels.build(dest, staging, args.kernel_groups)
        except build_kernels.KernelBuildError as err:
            raise WheelBuildError(str(err)) from None
        return True
    manifest = _kernel_store.read_manifest(Path(args.kernels))
    digest = _kernel_store.source_digest(None, staging / "engine")
    if manifest is None or manifest.get("source") != digest:
        raise WheelBuildError(f"{args.kernels} holds no kernels for these sources (its manifest's source "
                              f"{(manifest or {}).get('source')!r}, the staged engine's {digest!r}): rebuild them")
    shutil.copytree(args.kernels, dest)
    return True


def pin_numba(pyproject: Path) -> None:
    """Require exactly the numba the kernels were compiled with (another version would not load them)."""
    text = pyproject.read_text()
    if '"numba>=' not in text:
        raise WheelBuildError("pyproject.toml: no numba>= dependency to pin")
    version = _kernel_store._numba_version()
    pyproject.write_text(re.sub(r'"numba>=[^"]*"', f'"numba=={version}"', text, count=1))


def check_wheel(wheel: Path, scratch: Path) -> None:
    """The kernels in ``wheel`` (if any) were built from exactly the engine sources the wheel installs."""
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if n.startswith("engine/")]
        z.extractall(scratch, names)
    manifest = _kernel_store.read_manifest(scratch / "engine" / _kernel_store.SHIPPED_DIR.name)
    if manifest is None:
        return
    digest = _kernel_store.source_digest(manifest["numba"], scratch / "engine")
    if manifest["source"] != digest:
        raise WheelBuildError(f"the wheel's engine sources (digest {digest}) are not those its kernels were built "
                              f"from ({manifest['source']}): a source file is missing from the wheel")


def build(argv=None) -> Path:
    args = parse(argv)
    out = Path(args.output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    platform = _kernel_store.platform_tag()
    with tempfile.TemporaryDirectory(prefix="redmax_wheel_") as tmp:
        staging = Path(tmp) / "src"
        staging.mkdir()
        stage(staging)
        if add_kernels(args, staging):
            if platform not in WHEEL_PLATFORMS:
                raise WheelBuildError(f"no wheel platform tag known for {platform}; pass --kernels none")
            pin_numba(staging / "pyproject.toml")
            py = "py%d%d" % sys.version_info[:2]
            (staging / "setup.cfg").write_text(f"[bdist_wheel]\npython_tag = {py}\nplat_name = {WHEEL_PLATFORMS[platform]}\n")
        wheel_dir = Path(tmp) / "wheel"
        run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(wheel_dir),
                              str(staging)], capture_output=True, text=True)
        if run.returncode != 0:
            raise WheelBuildError(f"pip wheel failed:\n{run.stdout[-3000:]}{run.stderr[-3000:]}")
        (wheel,) = wheel_dir.glob("*.whl")
        check_wheel(wheel, Path(tmp) / "unpacked")
        target = out / wheel.name
        shutil.copy2(wheel, target)
    print(f"{target}  ({target.stat().st_size / 1e6:.1f} MB)")
    return target


def main(argv=None) -> int:
    try:
        build(sys.argv[1:] if argv is None else argv)
    except WheelBuildError as err:
        print(f"build_wheel: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
