"""Build the RedMax Blender extension zip(s) in ``dist/``, with numba/llvmlite wheels bundled.

    python scripts/build_extension.py                      # one zip, wheels for all platforms
    python scripts/build_extension.py --split-platforms    # one zip per platform (smaller downloads)
    python scripts/build_extension.py --platforms linux-x64 --split-platforms
    python scripts/build_extension.py --no-wheels          # pure-Python engine path, any platform
    python scripts/build_extension.py --kernels none       # no shipped kernels (users compile on first use)
    python scripts/build_extension.py --kernels DIR        # kernels built before by scripts/build_kernels.py
    blender -b -P scripts/build_extension.py -- [same options]

The repository root is the extension package (``blender_manifest.toml`` plus the
root ``__init__.py``). The build copies the shipped sources (``__init__.py``,
``addon/``, ``engine/``, the manifest, README) into a staging folder, downloads
the numba and llvmlite wheels for each platform into ``wheels/`` (a cache, never
committed; ``--offline`` uses only what is there), writes ``platforms`` and
``wheels`` into the staged manifest and runs Blender's own extension builder
(``bl_pkg/cli/blender_ext.py build``, found inside the ``bpy`` wheel or the
running Blender). With ``--split-platforms`` that builder keeps only the wheels
matching each platform in its zip. Blender installs the wheels offline on
``package_install_files``; numpy is not bundled (Blender ships its own).

The zip for the platform this script runs on also ships the compiled kernels
(``engine/_shipped_kernels``, docs/kernels.md): ``scripts/build_kernels.py`` compiles them from the
engine as the built zip holds it for the platform's portable CPU baseline (``--kernels build``, the
default: 3–4 minutes on two busy cores) and they are added to the zip, or ``--kernels DIR`` takes a
folder it built before (checked against the zip's sources). They need this Python to be Blender's (3.11) and its numba the bundled one; other
platforms' zips have none (their users compile on first use, with progress, or build the zip there).
"""
from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(1, str(ROOT))
import build_kernels  # noqa: E402
from engine import _kernel_store  # noqa: E402  (no numba: where kernels go, which platform this is)

BLENDER_PYTHON = (3, 11)  # Blender 4.5 LTS and 5.0
NUMBA, LLVMLITE = "0.68.1", "0.50.0"  # the pair CI tests; llvmlite is numba's exact dependency
# Blender platform → the pip platform tag to download for (pip also accepts older compatible tags).
PLATFORM_TAGS = {
    "linux-x64": "manylinux_2_28_x86_64",
    "windows-x64": "win_amd64",
    "macos-arm64": "macosx_14_0_arm64",   # numba 0.68 wheels need macOS 12+
    "macos-x64": "macosx_14_0_x86_64",
    "linux-arm64": "manylinux_2_28_aarch64",
}
DEFAULT_PLATFORMS = ("linux-x64", "windows-x64", "macos-arm64")
SHIPPED = ("__init__.py", "blender_manifest.toml", "README.md", "LICENSE", "addon", "engine")


class BuildError(RuntimeError):
    pass


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--output-dir", default=str(ROOT / "dist"))
    ap.add_argument("--platforms", default=",".join(DEFAULT_PLATFORMS),
                    help=f"comma-separated Blender platforms (known: {', '.join(PLATFORM_TAGS)})")
    ap.add_argument("--split-platforms", action="store_true", help="one zip per platform with only its wheels")
    ap.add_argument("--no-wheels", action="store_true", help="bundle no wheels (the add-on falls back to pure Python)")
    ap.add_argument("--wheels-dir", default=str(ROOT / "wheels"), help="wheel cache (downloaded into when missing)")
    ap.add_argument("--offline", action="store_true", help="never download; use only wheels already in --wheels-dir")
    ap.add_argument("--kernels", default="build", metavar="build|none|DIR",
                    help="ship compiled kernels in this platform's zip: build them (default), none, or a folder "
                         "made by scripts/build_kernels.py")
    ap.add_argument("--kernel-groups", default="all", help="with --kernels build: which groups (see build_kernels.py)")
    return ap.parse_args(argv)


def find_blender_ext() -> Path:
    """Blender's extension CLI: inside the running Blender or the installed ``bpy`` wheel."""
    roots = []
    if "bpy" in sys.modules:
        import bpy  # noqa: F401  (running inside Blender)

        roots.append(Path(bpy.utils.system_resource("SCRIPTS")))
    spec = importlib.util.find_spec("bpy") if "bpy" not in sys.modules else None
    if spec is not None and spec.submodule_search_locations:
        roots.extend(Path(p) for p in spec.submodule_search_locations)
    for root in roots:
        for cand in [root / "addons_core/bl_pkg/cli/blender_ext.py", *root.glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py")]:
            if cand.is_file():
                return cand
    raise BuildError("Blender's extension builder (bl_pkg/cli/blender_ext.py) not found: install the bpy wheel "
                     "(pip install bpy==5.0.1) or run this script with blender -b -P")


def platform_wheels(platform: str, wheels_dir: Path, offline: bool) -> list[Path]:
    """numba + llvmlite wheels for one Blender platform, downloaded into ``wheels_dir/<platform>`` once."""
    if platform not in PLATFORM_TAGS:
        raise BuildError(f"unknown platform {platform!r}; known: {', '.join(PLATFORM_TAGS)}")
    dest = wheels_dir / platform
    wanted = {"numba": NUMBA, "llvmlite": LLVMLITE}

    def present():
        found = {}
        for w in sorted(dest.glob("*.whl")):
            name, version = w.name.split("-")[:2]
            if wanted.get(name) == version:
                found[name] = w
        return found

    found = present() if dest.is_dir() else {}
    if len(found) < len(wanted) and not offline:
        dest.mkdir(parents=True, exist_ok=True)
        print(f"downloading numba {NUMBA} + llvmlite {LLVMLITE} for {platform} ...", flush=True)
        cmd = [sys.executable, "-m", "pip", "download", f"numba=={NUMBA}", f"llvmlite=={LLVMLITE}", "--no-deps",
               "--only-binary=:all:", "--python-version", "3.11", "--platform", PLATFORM_TAGS[platform],
               "--quiet", "-d", str(dest)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise BuildError(f"pip download for {platform} failed:\n{run.stderr.strip()}")
        found = present()
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise BuildError(f"no {', '.join(missing)} wheel for {platform} in {dest}"
                         + (" (--offline: download them first)" if offline else ""))
    return [found["llvmlite"], found["numba"]]


def stage(staging: Path, platforms: list[str], wheels: list[Path]) -> None:
    """Copy the shipped sources and write the manifest with ``platforms`` and ``wheels``."""
    for name in SHIPPED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, staging / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
        elif src.is_file():
            shutil.copy2(src, staging / name)
    manifest = (ROOT / "blender_manifest.toml").read_text()
    tomllib.loads(manifest)  # fail early on a broken manifest
    if "\nplatforms" in manifest or "\nwheels" in manifest:
        raise BuildError("blender_manifest.toml must not declare platforms/wheels: this script adds them")
    extra = f"platforms = [{', '.join(repr(p) for p in platforms)}]\n".replace("'", '"')
    if wheels:
        (staging / "wheels").mkdir()
        for w in wheels:
            shutil.copy2(w, staging / "wheels" / w.name)
        extra += "wheels = [\n" + "".join(f'  "./wheels/{w.name}",\n' for w in wheels) + "]\n"
    head, sep, tail = manifest.partition("\n[")  # top-level keys must come before the first table
    (staging / "blender_manifest.toml").write_text(head.rstrip("\n") + "\n" + extra + sep + tail)


def check_kernel_build(args) -> None:
    """Fail early when ``--kernels`` cannot give kernels that match the zip."""
    if args.kernels == "none" or args.no_wheels:
        return
    if sys.version_info[:2] != BLENDER_PYTHON:
        raise BuildError(f"shipped kernels must be compiled by Blender's Python {'.'.join(map(str, BLENDER_PYTHON))}, "
                         f"this is {sys.version.split()[0]} (or pass --kernels none)")
    if _kernel_store._numba_version() != NUMBA:
        raise BuildError(f"shipped kernels must be compiled by the bundled numba {NUMBA}, this Python has "
                         f"{_kernel_store._numba_version()} (or pass --kernels none)")


def add_kernels(args, zip_path: Path, echo=print) -> None:
    """Compile the kernels from the engine exactly as ``zip_path`` holds it (the builder leaves out what the
    manifest excludes, and the source digest covers every file) — or check ``--kernels DIR`` against it — and
    add them to the zip as ``engine/_shipped_kernels/``."""
    with tempfile.TemporaryDirectory(prefix="redmax_kernels_src_") as tmp:
        unpacked = Path(tmp) / "src"
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(unpacked, [n for n in z.namelist() if n.startswith("engine/")])
        kernels = Path(tmp) / "kernels"
        if args.kernels == "build":
            try:
                build_kernels.build(kernels, unpacked, args.kernel_groups, echo=echo)
            except build_kernels.KernelBuildError as err:
                raise BuildError(str(err)) from None
        else:
            kernels = Path(args.kernels)
            manifest = _kernel_store.read_manifest(kernels)
            digest = _kernel_store.source_digest(NUMBA, unpacked / "engine")
            if manifest is None or manifest.get("source") != digest:
                raise BuildError(f"{kernels} holds no kernels for the zip's sources (its manifest's source "
                                 f"{(manifest or {}).get('source')!r}, the zip's engine {digest!r}): rebuild them "
                                 f"with scripts/build_kernels.py --source on the unpacked zip, or use --kernels build")
        with zipfile.ZipFile(zip_path, "a", compression=zipfile.ZIP_DEFLATED) as z:
            for f in sorted(kernels.rglob("*")):
                if f.is_file():
                    z.write(f, f"engine/{_kernel_store.SHIPPED_DIR.name}/{f.relative_to(kernels).as_posix()}")


def _builder(tool: Path, staging: Path, out: Path, split: bool) -> None:
    cmd = [sys.executable, str(tool), "build", "--source-dir", str(staging), "--output-dir", str(out)]
    if split:
        cmd.append("--split-platforms")
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise BuildError(f"extension build failed:\n{run.stdout}{run.stderr}")


def build(argv=None) -> list[Path]:
    args = parse(argv)
    platforms = [p.strip() for p in args.platforms.split(",") if p.strip()]
    if not platforms:
        raise BuildError("--platforms is empty")
    host = _kernel_store.platform_tag()
    with_kernels = host in platforms and args.kernels != "none" and not args.no_wheels
    if with_kernels:
        check_kernel_build(args)
    wheels: dict[str, list[Path]] = {}
    if not args.no_wheels:
        for p in platforms:
            wheels[p] = platform_wheels(p, Path(args.wheels_dir), args.offline)
    out = Path(args.output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    tool = find_blender_ext()
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    # the kernels only serve the host platform: with split zips, its zip is built apart and gets them
    batches = [[host], [p for p in platforms if p != host]] if with_kernels and args.split_platforms else [platforms]
    started = time.time()
    for batch in (b for b in batches if b):
        batch_started = time.time()
        with tempfile.TemporaryDirectory(prefix="redmax_ext_") as tmp:
            staging = Path(tmp) / "src"
            staging.mkdir()
            stage(staging, batch, [w for p in batch for w in wheels.get(p, [])])
            _builder(tool, staging, out, args.split_platforms)
        if with_kernels and host in batch:
            for z in out.glob(f"{manifest['id']}-{manifest['version']}*.zip"):
                if z.stat().st_mtime >= batch_started - 1:
                    add_kernels(args, z)
    zips = sorted(z for z in out.glob(f"{manifest['id']}-{manifest['version']}*.zip") if z.stat().st_mtime >= started - 1)
    for z in zips:
        print(f"{z}  ({z.stat().st_size / 1e6:.1f} MB)")
    return zips


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    try:
        build(argv)
    except BuildError as e:
        print(f"build_extension: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
