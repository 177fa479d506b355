"""Where commands write: every path a command is told to write to is checked here before the work starts.

``bench --out``, ``sweep --out``, ``view --save-scene/--screenshot/--record``, ``scripts/bake_demo.py --out``
and the add-on's *Export RedMax Scene* all call ``output_folder`` or ``output_file`` first, so that a
missing, read-only or mistyped path fails in one line naming the option and the reason, instead of a
traceback after minutes of simulation. The check creates the folder (and its parents) if it is missing, then
writes and removes a probe file in it: ``os.access`` alone says yes on a read-only file system.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import OutputPathError

__all__ = ["OutputPathError", "output_file", "output_folder"]


def _reason(err: OSError) -> str:
    return err.strerror or str(err) or type(err).__name__


def output_folder(path, what: str = "--out") -> Path:
    """``path`` as a folder that exists and takes new files (created with its parents when missing);
    OutputPathError ("cannot write --out 'x': Permission denied") otherwise. Leaves nothing behind but the
    folders it created."""
    folder = Path(path).expanduser()
    if str(path).strip() == "":
        raise OutputPathError(f"cannot write {what}: the path is empty")
    if folder.exists() and not folder.is_dir():
        raise OutputPathError(f"cannot write {what} '{folder}': it is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-probe-"):
            pass
    except OSError as err:
        raise OutputPathError(f"cannot write {what} '{folder}': {_reason(err)}") from None
    return folder


def output_file(path, what: str = "output file") -> Path:
    """``path`` as a file that can be written (its folder checked as ``output_folder``; an existing file must
    be writable; a folder at the path is refused); OutputPathError otherwise. Does not create the file."""
    file = Path(path).expanduser()
    if str(path).strip() == "" or file.name == "":
        raise OutputPathError(f"cannot write {what}: the path names no file, got {str(path)!r}")
    if file.is_dir():
        raise OutputPathError(f"cannot write {what} '{file}': it is a folder, not a file")
    output_folder(file.parent, f"{what} '{file}': its folder")
    if file.exists() and not os.access(file, os.W_OK):
        raise OutputPathError(f"cannot write {what} '{file}': the file is read-only")
    return file
