"""The Python examples of graphs/python run and say what they promise (exit 0 only when the
simulated values agree with NumPy and every sweep point ran)."""
import csv
import os
import subprocess
import sys

from conftest import ROOT


def test_swiglu_residual_example_checks_numerics_sweeps_and_plots(tmp_path):
    script = os.path.join(ROOT, "graphs", "python", "swiglu_residual.py")
    p = subprocess.run([sys.executable, script, "--quick", "--out", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "largest error against NumPy" in p.stdout
    with open(tmp_path / "sweep.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and all(int(r["cycles"]) > 0 and r["error"] == "" for r in rows)
    # Fewer HBM channels never make the layer faster.
    by = {(r["tile_f"], r["hbm.channels"]): int(r["cycles"]) for r in rows}
    assert all(by[(t, "2")] >= by[(t, "8")] for t in ("32", "64"))
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
