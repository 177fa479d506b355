#!/usr/bin/env bash
# Set up a virtual environment and run the main job on built-in defaults:
# the algorithms benchmark (CSV, markdown table and log-log plots in bench_out/).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test]"
.venv/bin/python -m engine bench algorithms --quick --out bench_out
echo "Results: bench_out/algorithms.csv, bench_out/algorithms.md, bench_out/algorithms_*.png"
