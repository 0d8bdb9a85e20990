"""The Python API is generated from the operator registry: every operator is a Graph method with
its ports, typed parameters and documentation, and nothing else."""
import inspect
import os
import re

import numpy as np
import pytest
import stepsim
from stepsim import _stepsim

from conftest import cli


def test_every_operator_of_the_registry_is_a_method_with_its_documentation():
    ops = _stepsim.ops()
    assert [d["name"] for d in ops] == stepsim.ops()
    # The same operators as the command line lists (`stepsim ops`: "Name  [category]" lines).
    listed = [line.split()[0] for line in cli("ops").stdout.splitlines() if re.match(r"^[A-Z]\w+  \[", line)]
    assert sorted(listed) == sorted(stepsim.ops()) and len(listed) >= 26
    for d in ops:
        method = getattr(stepsim.Graph, d["name"])
        doc = method.__doc__
        assert d["description"] in doc and d["timing"] in doc, d["name"]
        for p in d["params"]:
            assert "  %s (%s, " % (p["name"], p["type"]) in doc, (d["name"], p["name"])
            assert p["name"] in inspect.signature(method).parameters
        for port in d["inputs"] + d["outputs"]:
            assert port["doc"] in doc, (d["name"], port["name"])


def test_no_other_method_looks_like_an_operator():
    # Capitalized attributes of Graph are exactly the registry's operators.
    ops = set(stepsim.ops())
    assert {a for a in dir(stepsim.Graph) if a[:1].isupper()} == ops


def test_signature_shows_ports_parameters_and_node_options():
    sig = inspect.signature(stepsim.Graph.Accum)
    kinds = {n: p.kind for n, p in sig.parameters.items()}
    assert kinds["in_"] == inspect.Parameter.VAR_POSITIONAL
    assert sig.parameters["fn"].default is inspect.Parameter.empty  # required
    accum = next(d for d in _stepsim.ops() if d["name"] == "Accum")
    rank = next(p for p in accum["params"] if p["name"] == "rank")
    assert sig.parameters["rank"].default == rank["default"] != ""
    for opt in ("name", "compute_bw", "depth", "outputs", "impl"):
        assert opt in sig.parameters


def test_unknown_parameter_names_the_operator_and_what_it_takes(small_graph):
    x = small_graph.stream("load.out")
    with pytest.raises(TypeError, match=r"Map has no input or parameter 'fun' \(inputs: none; parameters: fn\)"):
        small_graph.Map(x, fun="mul")


def test_unknown_function_and_bad_parameter_values_raise_the_clis_error(small_graph):
    x = small_graph.stream("load.out")
    with pytest.raises(stepsim.Error, match="unknown map function 'mull'"):
        small_graph.Map(x, x, fn="mull")
    with pytest.raises(stepsim.Error, match="rank"):
        small_graph.Accum(x, fn="add", rank="two")


def test_tile_functions_and_presets_come_from_the_simulator():
    names = [f["name"] for f in stepsim.functions("map")]
    assert "matmul" in names and "silu" in names
    matmul = next(f for f in stepsim.functions("map") if f["name"] == "matmul")
    assert matmul["arity"] == 2 and matmul["units"] == "pcu_tile_map"
    assert "step-artifact" in stepsim.presets()
    assert stepsim.preset("step-artifact")
    with pytest.raises(stepsim.Error, match="unknown function family"):
        stepsim.functions("reduce")


# ---- issue 33: the Python door refuses what the command line refuses, with clear errors

def _error(call):
    """The exception `call` raises (it must raise)."""
    with pytest.raises(Exception) as e:
        call()
    return e.value


def _clean(call, *parts):
    """`call` raises stepsim.Error, TypeError or ValueError naming every part, never pybind11's
    signature dump or GiNaC's parser internals."""
    e = _error(call)
    assert isinstance(e, (stepsim.Error, TypeError, ValueError)), repr(e)
    msg = str(e)
    for bad in ("incompatible function arguments", "Invoked with", "GiNaC", "parser.cpp"):
        assert bad not in msg, msg
    for part in parts:
        assert part in msg, (part, msg)
    return msg


@pytest.mark.parametrize("name", ["", "x\0", "../../etc", "/abs/x", "a.b", "a-b", "1x", "x" * 129])
def test_names_must_be_identifiers_at_every_door(name, small_graph):
    rule = "is not an identifier"
    _clean(lambda: stepsim.Graph(name), rule)
    _clean(lambda: small_graph.tensor(name, (4, 4)), rule)
    _clean(lambda: small_graph.output_tensor(name, (4, 4)), rule)
    _clean(lambda: small_graph.literal_stream(name, "1 D"), rule)
    _clean(lambda: small_graph.symbol(name, 4), rule)
    x = small_graph.stream("load.out")
    _clean(lambda: small_graph.Map(x, fn="exp", name=name), rule)
    assert stepsim.Graph("x" * 128).name == "x" * 128  # the longest name


def test_the_yaml_door_refuses_a_tensor_name_that_is_a_path(tmp_path):
    text = "tensors: {'../escaped': {shape: [4, 4], init: output}}\nnodes: []\n"
    _clean(lambda: stepsim.Graph.from_yaml(text), "tensor name '../escaped' is not an identifier")
    (tmp_path / "g.yaml").write_text(text)
    p = cli("run", str(tmp_path / "g.yaml"), "--out", str(tmp_path / "out"), check=False)
    assert p.returncode != 0 and "is not an identifier" in p.stderr
    assert not (tmp_path / "escaped.npy").exists()


def _cli_refuses(tmp_path, yaml_text, *parts):
    (tmp_path / "g.yaml").write_text(yaml_text)
    p = cli("run", str(tmp_path / "g.yaml"), check=False)
    assert p.returncode != 0 and p.stderr.startswith("error: "), p.stderr
    for part in parts:
        assert part in p.stderr, (part, p.stderr)


def test_a_python_graph_is_refused_where_the_cli_refuses_its_yaml(tmp_path):
    # Each: the call, then the same graph as a file for `stepsim run`, then a part of both errors.
    def graph():
        g = stepsim.Graph("g")
        g.tensor("x", (4, 4))
        return g, g.LinearOffChipLoad(tensor="x", tile=[4, 4], name="load")

    head = "name: g\ntensors: {x: {shape: [4, 4]}}\n"
    load = "  - {name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4]}}\n"
    g, x = graph()
    _clean(lambda: g.tensor("big", (2 ** 21, 2 ** 20)), "more elements than the limit of 1099511627776")
    _cli_refuses(tmp_path, head.replace("}}\n", "}, big: {shape: [2097152, 1048576]}}\n") + "nodes: []\n",
                 "more elements than the limit of 1099511627776")
    missing = str(tmp_path / "missing.npy")
    _clean(lambda: g.tensor("f", (4, 4), init="file", file=missing), missing)
    _cli_refuses(tmp_path, head.replace("}}\n", "}, f: {shape: [4, 4], init: file, file: %s}}\n" % missing)
                 + "nodes: []\n", missing)
    for n in (257, 10 ** 9):
        _clean(lambda: g.Broadcast(x, outputs=n), "outputs", str(n), "1..256")
        _cli_refuses(tmp_path, head + "nodes:\n" + load + "  - {name: b, op: Broadcast, inputs: {in: load}, "
                     "outputs: %d}\n" % n, "outputs")
    _clean(lambda: g.Map(x, fn="exp", name="a.b"), "a.b", "is not an identifier")
    _cli_refuses(tmp_path, head + "nodes:\n" + load + "  - {name: a.b, op: Map, params: {fn: exp}, "
                 "inputs: {in0: load}}\n", "is not an identifier")
    _clean(lambda: g.set_depth("nope", 4), "no node 'nope'")
    _clean(lambda: g.set_compute_bw("nope", 4), "no node 'nope'")
    _clean(lambda: g.tensor("t", (4.7, 4.2)), "4.7", "integer")
    g.literal_stream("s", "1 D")
    _clean(lambda: g.literal_stream("s", "2 D"), "stream 's' is defined twice")
    g.symbol("n", 4)
    _clean(lambda: g.symbol("n", 5), "symbol 'n' is given twice")
    _cli_refuses(tmp_path, head + "streams: {s: '1 D', s: '2 D'}\nnodes: []\n", "s")


def test_a_broadcast_of_a_billion_outputs_is_refused_before_anything_is_allocated(small_graph):
    import resource

    x = small_graph.stream("load.out")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    _clean(lambda: small_graph.Broadcast(x, outputs=10 ** 9), "1..256")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KiB: under 100 MiB


def test_a_missing_npy_is_refused_in_timing_mode_at_the_run_too(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((4, 4), np.float32))
    g = stepsim.Graph("g")
    g.tensor("x", (4, 4), init="file", file=str(tmp_path / "x.npy"))
    g.Sink(g.LinearOffChipLoad(tensor="x", tile=[4, 4]))
    os.remove(tmp_path / "x.npy")  # gone between the declaration and the run
    _clean(lambda: g.run(), "x.npy")


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.uint32])
def test_integers_that_do_not_fit_int32_are_refused_not_wrapped(dtype, tmp_path):
    big = np.full((4, 4), 2 ** 31 if dtype == np.uint32 else 2 ** 40 + 7, dtype=dtype)

    def graph(**init):
        g = stepsim.Graph("g")
        g.tensor("x", (4, 4), dtype="int32", **init)
        g.output_tensor("y", (4, 4), dtype="int32")
        g.LinearOffChipStore(g.LinearOffChipLoad(tensor="x", tile=[4, 4]), tensor="y", tile=[4, 4])
        return g

    _clean(lambda: graph().run(mode="functional", inputs={"x": big}), "does not fit in int32", str(int(big[0, 0])))
    _clean(lambda: graph(init=big), "does not fit in int32", str(int(big[0, 0])))
    ok = np.arange(16, dtype=dtype).reshape(4, 4) * 1000
    assert (graph().run(mode="functional", inputs={"x": ok}).outputs["y"] == ok).all()
    if dtype == np.int64:  # the command line refuses the same .npy
        np.save(tmp_path / "x.npy", big)
        _clean(lambda: graph(init="file", file=str(tmp_path / "x.npy")), "does not fit in int32")
        _cli_refuses(tmp_path, "tensors: {x: {shape: [4, 4], dtype: int32, init: file, file: x.npy}}\nnodes: []\n",
                     "does not fit in int32")


def test_sweep_values_must_be_lists(small_graph):
    _clean(lambda: stepsim.sweep(small_graph, {"hbm.channels": "16"}), "grid['hbm.channels']", "'16'", "list")
    _clean(lambda: stepsim.sweep(small_graph, {"hbm.channels": {8: 1, 16: 2}}), "grid['hbm.channels']", "list")
    _clean(lambda: stepsim.sweep(small_graph, {"hbm.channels": []}), "grid['hbm.channels']", "no values")
    _clean(lambda: stepsim.sweep(small_graph, {}), "grid is empty")
    _clean(lambda: stepsim.sweep(lambda: 5, {"hbm.channels": [4]}), "returned 5", "stepsim.Graph")
    assert list(stepsim.sweep(small_graph, {"hbm.channels": np.array([4, 8])})["hbm.channels"]) == [4, 8]


def test_wrong_types_and_ranges_raise_naming_the_argument_and_the_range(small_graph):
    g = small_graph
    x = g.stream("load.out")
    _clean(lambda: g.Map(x, fn="exp", compute_bw=-1), "compute_bw", "-1", "1..1099511627776")
    _clean(lambda: g.Map(x, fn="exp", depth=2 ** 32), "depth", str(2 ** 32), "1..1048576")
    _clean(lambda: g.Broadcast(x, outputs=-1), "outputs", "-1", "1..256")
    _clean(lambda: g.Map(x, fn="exp", name=1), "name", "1")
    _clean(lambda: g.run(shuffle=-1), "shuffle", "-1", "0..18446744073709551615")
    _clean(lambda: g.run(preset=None), "preset", "None")
    _clean(lambda: g.run(set="hbm.channels=4"), "set", "'hbm.channels=4'")
    _clean(lambda: g.run(inputs=[1]), "inputs", "[1]")
    _clean(lambda: stepsim.Graph(None), "name", "None")
    _clean(lambda: g.tensor(name=1, shape=(4, 4)), "name", "1")
    _clean(lambda: g.tensor("t", (float("inf"), 1)), "inf")
    _clean(lambda: g.tensor("t", (float("nan"), 1)), "nan")
    _clean(lambda: g.tensor("t", (2 ** 64, 1)), str(2 ** 64), "1..1099511627776")
    _clean(lambda: g.tensor("t", (4, 4), seed=-1), "seed", "-1")
    _clean(lambda: g.tensor("t", (4, 4), dtype="int8"), "dtype", "int8")
    _clean(lambda: g.stream(None), "ref", "None")
    _clean(lambda: g.set_depth("sq", 0), "depth", "0", "1..1048576")
    _clean(lambda: g.set_compute_bw("sq", 2 ** 64), "flops_per_cycle", str(2 ** 64))
    _clean(lambda: g.Map(x, fn=[[[[[[[[[[[[[[[[[["exp"]]]]]]]]]]]]]]]]]]), "nested deeper")
    _clean(lambda: g.Map(x, fn=object()), "fn")
    _clean(lambda: stepsim.functions(1), "family", "1")
    _clean(lambda: stepsim.preset(None), "name", "None")


def test_a_bad_expression_names_its_symbol_and_returns_at_once(small_graph):
    import time

    _clean(lambda: small_graph.symbol("n", "2*"), "symbol 'n'")
    _clean(lambda: small_graph.analyze(symbols={"n": "(("}), "symbols['n']", "((")
    s = small_graph.stream("load.out")
    start = time.perf_counter()
    _clean(lambda: s.set_dim(0, "2**100000000"), "set_dim on 'load.out'")
    _clean(lambda: s.set_dim(-1, "4"), "dim", "-1")
    assert time.perf_counter() - start < 2.0


def test_save_writes_the_arrays_under_the_graph_folder(tmp_path):
    g = stepsim.Graph("g")
    g.tensor("x", (2, 2), init=np.ones((2, 2), np.float32))
    (tmp_path / "sub").mkdir()
    g.save(tmp_path / "sub" / "g.yaml")  # a path-like
    assert (tmp_path / "sub" / "x.npy").exists() and not (tmp_path / "x.npy").exists()
    _clean(lambda: g.save(str(tmp_path / "no" / "such" / "g.yaml")), "save: cannot write")


def test_from_yaml_refuses_a_folder_or_a_fifo_at_once(tmp_path):
    import subprocess
    import sys

    _clean(lambda: stepsim.Graph.from_yaml(str(tmp_path)), "not a regular file")
    os.mkfifo(tmp_path / "g.yaml")  # open() would wait for a writer for ever
    code = "import stepsim\ntry:\n    stepsim.Graph.from_yaml(%r)\nexcept stepsim.Error as e:\n    print(e)\n" % str(
        tmp_path / "g.yaml")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "not a regular file" in p.stdout, p.stdout + p.stderr


def test_a_path_the_system_refuses_is_a_clean_error():
    _clean(lambda: stepsim.preset("a" * 5000), "File name too long")
