"""``python -m engine bench compare BEFORE AFTER`` matches rows and flags changed iterations."""
import csv

from engine.__main__ import main
from engine.apps.bench.compare import compare

COLUMNS = ["suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations", "repeats", "compile_seconds",
           "notes", "stable_dt"]


def _write(folder, rows):
    folder.mkdir()
    with open(folder / "redmax.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        w.writerows(rows)
    return folder


def test_compare_reports_ratios_and_changed_iterations(tmp_path, capsys):
    before = _write(tmp_path / "a", [["redmax", "tree", "pcg", 8, 24, 1e-3, 5, 10, 0.1, "", ""],
                                     ["redmax", "tree", "pcg", 16, 48, 2e-3, 6, 10, 0.1, "", 0.5]])
    same = _write(tmp_path / "b", [["redmax", "tree", "pcg", 8, 24, 1.5e-3, 5, 20, 0.2, "", ""],
                                   ["redmax", "tree", "pcg", 16, 48, 2e-3, 6, 10, 0.1, "", 0.5]])
    res = compare(before, same)
    assert res["iterations_identical"] and sorted(res["ratios"]) == [1.0, 1.5]
    changed = _write(tmp_path / "c", [["redmax", "tree", "pcg", 8, 24, 1e-3, 7, 10, 0.1, "", ""],
                                      ["redmax", "tree", "pcg", 16, 48, 2e-3, 6, 10, 0.1, "", 0.25]])
    res = compare(before, changed)
    assert not res["iterations_identical"]
    assert res["rows"][0][6] == "**NO**" and "stable_dt: 0.5 → 0.25" in res["rows"][1][-1]
    assert main(["bench", "compare", str(before), str(same)]) == 0
    assert "iterations and result columns identical: yes" in capsys.readouterr().out
    assert main(["bench", "compare", str(before)]) == 2


def test_several_runs_per_side_keep_each_rows_fastest(tmp_path):
    """``b1,b2 a1,a2``: each row compares the fastest of its interleaved runs."""
    b1 = _write(tmp_path / "b1", [["redmax", "tree", "pcg", 8, 24, 4e-3, 5, 10, 0.1, "", ""]])
    b2 = _write(tmp_path / "b2", [["redmax", "tree", "pcg", 8, 24, 2e-3, 5, 10, 0.1, "", ""]])
    a1 = _write(tmp_path / "a1", [["redmax", "tree", "pcg", 8, 24, 1e-3, 5, 10, 0.1, "", ""]])
    a2 = _write(tmp_path / "a2", [["redmax", "tree", "pcg", 8, 24, 3e-3, 5, 10, 0.1, "", ""]])
    res = compare(f"{b1},{b2}", f"{a1},{a2}")
    assert res["ratios"] == [0.5] and res["iterations_identical"]
