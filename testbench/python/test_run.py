"""Runs from Python give what the command line gives: the same report, the same stored tensors,
bit for bit; NumPy inputs are bit-exact against .npy files; errors carry the CLI's messages; runs
in one interpreter are independent and deterministic."""
import os

import numpy as np
import pandas as pd
import pytest
import stepsim

from conftest import EXAMPLES, cli, cli_report, same_bits, square, without_wall


@pytest.mark.parametrize("mode", ["timing", "functional"])
@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_every_example_gives_the_clis_report_and_tensors(path, mode, tmp_path):
    r = stepsim.Graph.from_yaml(path).run(mode=mode)
    assert without_wall(r.report) == cli_report(path, tmp_path, "--mode", mode)
    for name, values in r.outputs.items():  # the CLI wrote NAME.npy for each
        assert same_bits(values, np.load(tmp_path / "cli_out" / (name + ".npy"))), name


def test_settings_and_presets_reach_the_run_as_on_the_command_line(tmp_path):
    path = next(p for p in EXAMPLES if p.endswith("moe_small.yaml"))
    g = stepsim.Graph.from_yaml(path)
    r = g.run(preset="hdl-validation", set={"hbm.channels": 4})
    assert without_wall(r.report) == cli_report(path, tmp_path, "--preset", "hdl-validation", "--set",
                                                "hbm.channels=4")
    assert r.report["preset"] == "hdl-validation"


def test_numpy_inputs_are_bit_exact_against_the_clis_npy_files(tmp_path):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    x[0, :5] = [np.nan, np.inf, -0.0, 1e-40, 3.0000002]  # special values, a subnormal, a tie to round
    r = square().run(mode="functional", inputs={"x": x})
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "g.yaml").write_text(square(init="file", file=str(tmp_path / "x.npy")).to_yaml())
    cli("run", str(tmp_path / "g.yaml"), "--mode", "functional", "--out", str(tmp_path))
    assert same_bits(r.outputs["y"], np.load(tmp_path / "y.npy"))
    # bf16 convention: inputs are rounded to bf16 (nearest even), outputs are float32 holding bf16 values.
    assert (r.outputs["y"].view(np.uint32) & 0xFFFF == 0).all()
    # The same array as the tensor's init gives the same values.
    assert same_bits(square(init=x).run(mode="functional").outputs["y"], r.outputs["y"])


def test_results_come_as_pandas_and_sympy(small_graph):
    r = small_graph.run()
    assert isinstance(r.nodes, pd.DataFrame) and {"load", "sq", "store"} <= set(r.nodes["name"])
    # load -> (the implicit broadcast of a stream read twice) -> sq, twice -> store
    assert isinstance(r.channels, pd.DataFrame) and len(r.channels) == 4
    sym = r.symbolic.set_index("metric")
    assert sym.loc["read_bytes", "predicted"] == sym.loc["read_bytes", "measured"] == 64 * 256 * 2
    assert sym.loc["flops", "measured"] == 64 * 256
    assert r.cycles == r.report["cycles"] > 0
    a = small_graph.analyze()
    assert a.metrics["flops"] == 64 * 256 and a.streams["load.out"] == "[1, 4, 1] of T[16x256:bf16]"


def test_errors_raise_with_the_clis_messages(small_graph, tmp_path):
    with pytest.raises(stepsim.Error, match="--mode must be timing or functional, got 'fast'"):
        small_graph.run(mode="fast")
    with pytest.raises(stepsim.Error, match="--impl must be approx, hls or rtl"):
        small_graph.run(impl="fpga")
    with pytest.raises(stepsim.Error, match="not a hardware parameter, a graph parameter or node.param"):
        small_graph.run(set={"no_such_key": 1})
    with pytest.raises(stepsim.Error, match=r"shape \(64, 128\) for tensor 'x' declared \[64 x 256\] bf16"):
        small_graph.run(mode="functional", inputs={"x": np.zeros((64, 128), np.float32)})
    with pytest.raises(stepsim.Error, match="needs a float array"):
        small_graph.run(mode="functional", inputs={"x": np.zeros((64, 256), np.int64)})
    with pytest.raises(stepsim.Error, match="no tensor 'z'"):
        small_graph.run(mode="functional", inputs={"z": np.zeros((1, 1), np.float32)})
    p = cli("run", "/nonexistent.yaml", check=False)
    assert p.returncode != 0


def test_co_simulation_on_the_hls_units_from_python(tmp_path):
    path = next(p for p in EXAMPLES if p.endswith("cosim_units.yaml"))
    r = stepsim.Graph.from_yaml(path).run(mode="functional", impl="hls")
    assert r.equivalent is True and "co-simulation" in r.cosim.lower()
    assert set(r.nodes["impl"]) >= {"hls", "approx"}
    assert without_wall(r.report) == cli_report(path, tmp_path, "--mode", "functional", "--impl", "hls")
    with pytest.raises(stepsim.Error, match="cannot open graph file 'missing.yaml'"):
        stepsim.Graph.from_yaml("missing.yaml")


def test_a_deadlock_raises_simulation_error_naming_the_blocked_operators_and_channels():
    g = stepsim.Graph.from_yaml("nodes:\n"
                                "  - {name: ping, op: Map, params: {fn: silu}, inputs: {in0: pong}}\n"
                                "  - {name: pong, op: Map, params: {fn: silu}, inputs: {in0: ping}}\n")
    with pytest.raises(stepsim.SimulationError) as e:
        g.run()
    for part in ("deadlock", "node 'ping' (Map)", "node 'pong' (Map)", "'pong.out->ping.in0' (empty)"):
        assert part in str(e.value), str(e.value)


def test_runs_in_one_interpreter_are_independent_and_deterministic(small_graph):
    first = small_graph.run(mode="functional", shuffle=0)
    for k in range(100):
        r = small_graph.run(mode="functional", shuffle=k % 3)
        assert without_wall(r.report) == without_wall(first.report)
        assert same_bits(r.outputs["y"], first.outputs["y"])


def test_sweep_returns_a_row_per_point_and_keeps_failed_points(small_graph):
    df = stepsim.sweep(small_graph, {"hbm.channels": [1, 8, 0]})
    assert list(df["hbm.channels"]) == [1, 8, 0]
    assert df.loc[0, "cycles"] >= df.loc[1, "cycles"] > 0
    assert df.loc[2, "error"] != "" and pd.isna(df.loc[2, "cycles"])
