"""``python -m engine bench peers``: the quick run (when Pinocchio is installed) and the peers-missing message."""
import csv
import sys

import numpy as np
import pytest

from engine.__main__ import main
from engine.apps.bench import peers


@pytest.mark.parametrize("modules", [("pinocchio",), ("mujoco",), ("pinocchio", "mujoco")])
def test_missing_peer_is_one_line_with_the_install_command_and_exit_2(modules, tmp_path, monkeypatch, capsys):
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # makes `import <module>` raise ImportError
    assert main(["bench", "peers", "--quick", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert all(f"'{module}'" in err for module in modules) and "pip install -e '.[peers]'" in err
    assert not (tmp_path / "peers.csv").exists()


def test_cross_check_refuses_results_that_differ():
    a = np.array([1.0, -2.0, 3.0])
    assert peers._check("same", a, a.copy()) == 0.0
    with pytest.raises(RuntimeError, match="differ"):
        peers._check("perturbed", a, a + np.array([0.0, 1e-8, 0.0]))


def test_interleaved_min_times_every_contender():
    calls = {"a": lambda: sum(range(10)), "b": lambda: sum(range(100))}
    out = peers.interleaved_min(calls, min_time=1e-4, rounds=2)
    assert set(out) == {"a", "b"} and all(s > 0 and k >= 2 for s, k in out.values())


def test_bench_peers_quick_writes_csv_markdown_plots_and_ratios(tmp_path, capsys):
    pytest.importorskip("pinocchio")
    pytest.importorskip("mujoco")
    assert main(["bench", "peers", "--quick", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader(open(tmp_path / "peers.csv")))
    assert {"suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations"} <= set(rows[0])
    assert {r["scene"] for r in rows} == {"aba_chain", "minv_chain", "minv_floating_binary", "stiff_rope_step"}
    assert {r["method"] for r in rows} == {"engine_aba", "pin_aba", "engine_minv", "pin_computeMinverse",
                                          "engine_redmax_pcg", "mujoco_discrete"}
    assert all(float(r["seconds_per_step"]) > 0 for r in rows)
    # both loaders saw the same model: the floating tree has the free root's 6 dofs
    assert {int(r["dofs"]) - int(r["n"]) for r in rows if r["scene"] == "minv_floating_binary"} == {6}
    assert all("final state finite" in r["notes"] for r in rows if r["method"] == "mujoco_discrete")
    md = (tmp_path / "peers.md").read_text()
    assert "engine / peer" in md and "Per-call floor" in md
    assert {p.name for p in tmp_path.glob("peers_*.png")} == {
        "peers_aba_chain.png", "peers_minv_chain.png", "peers_minv_floating_binary.png", "peers_stiff_rope_step.png"}


def test_only_names_known_parts_and_belongs_to_the_peers_suite(tmp_path, capsys):
    assert main(["bench", "peers", "--only", "stiff_rope,aba_chain", "--out", str(tmp_path)]) == 2
    assert "unknown part(s) 'stiff_rope'" in capsys.readouterr().err
    assert main(["bench", "redmax", "--only", "stiff_rope_step", "--out", str(tmp_path)]) == 2
    assert "--only is an option of the peers suite" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_only_stiff_rope_step_runs_the_mujoco_part_alone(tmp_path):
    pytest.importorskip("pinocchio")
    pytest.importorskip("mujoco")
    assert main(["bench", "peers", "--quick", "--only", "stiff_rope_step", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader(open(tmp_path / "peers.csv")))
    assert {r["scene"] for r in rows} == {"stiff_rope_step"}
    assert {r["method"] for r in rows} == {"engine_redmax_pcg", "mujoco_discrete"}
