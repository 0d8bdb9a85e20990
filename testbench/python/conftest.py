"""Shared fixtures of the Python tests (run by CTest: testbench/CMakeLists.txt, with
PYTHONPATH=build/python and STEPSIM_BINARY naming the command line built beside the module)."""
import json
import os
import subprocess

import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = sorted(os.path.join(ROOT, "graphs", "examples", f)
                  for f in os.listdir(os.path.join(ROOT, "graphs", "examples")) if f.endswith(".yaml"))


def stepsim_binary():
    return os.environ.get("STEPSIM_BINARY", os.path.join(ROOT, "build", "stepsim"))


def cli(*args, check=True):
    """Runs the command line; returns the CompletedProcess."""
    p = subprocess.run([stepsim_binary(), *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError("stepsim %s failed: %s" % (" ".join(args), p.stderr))
    return p


def cli_report(graph_file, tmp_path, *args):
    """`stepsim run FILE --report` as a dict, without its wall time."""
    report = tmp_path / "cli_report.json"
    cli("run", graph_file, "--report", str(report), "--out", str(tmp_path / "cli_out"), *args)
    with open(report) as f:
        j = json.load(f)
    j.pop("wall_seconds")
    return j


def without_wall(report):
    r = dict(report)
    r.pop("wall_seconds")
    return r


def same_bits(a, b):
    """Arrays equal bit for bit (NaN payloads and the sign of zero included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def square(**tensor_x):
    """x [64 x 256] (declared with `tensor_x`: init, seed, file) -> x * x -> y, 16-row tiles."""
    import stepsim

    g = stepsim.Graph("square")
    g.tensor("x", (64, 256), **tensor_x)
    g.output_tensor("y", (64, 256))
    x = g.LinearOffChipLoad(tensor="x", tile=[16, 256], name="load")
    g.LinearOffChipStore(g.Map(x, x, fn="mul", compute_bw=1024, name="sq"), tensor="y", tile=[16, 256],
                         name="store")
    return g


@pytest.fixture
def small_graph():
    """square() with x random (seed 3)."""
    return square(init="random", seed=3)


# A DSE builder file of a small graph (a few milliseconds a run), written by the DSE tests.
SQUARE_BUILDER = """import stepsim


def build(compute_bw=1024):
    g = stepsim.Graph("square")
    g.tensor("x", (64, 256))
    g.output_tensor("y", (64, 256))
    x = g.LinearOffChipLoad(tensor="x", tile=[16, 256])
    g.LinearOffChipStore(g.Map(x, x, fn="mul", compute_bw=compute_bw), tensor="y", tile=[16, 256])
    return g
"""
