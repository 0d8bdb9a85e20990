"""Building programs: symbolic shapes, errors at construction, the YAML round trip, the layers."""
import os

import pytest
import stepsim
import sympy

from conftest import EXAMPLES, cli


def test_streams_carry_their_symbolic_shape(small_graph):
    x = small_graph.stream("load.out")
    assert x.shape == (1, 4, 1)
    assert x.elem["kind"] == "tile" and (x.elem["rows"], x.elem["cols"], x.elem["dtype"]) == (16, 256, "bf16")
    assert x.card == 4
    assert str(x) == "[1, 4, 1] of T[16x256:bf16]"


def test_a_dynamic_dimension_is_a_sympy_symbol_and_can_be_given_a_size():
    g = stepsim.Graph("route")
    g.tensor("x", (8, 64))
    g.literal_stream("sel", "{0} {1} {0} {1} {0} {0} {1} {0} S1 D")
    x = g.LinearOffChipLoad(tensor="x", tile=[1, 64], out_shape=[8], name="x")
    (sel,) = g.Source(stream="sel", name="sel")
    routed, other = g.Partition(x, sel, outputs=2, name="route")
    # A Partition's output: its length is known only at run time, a fresh symbol per output.
    assert routed.shape == (sympy.Symbol("n_route_out0"),) and routed.dim_kinds == ("dynamic",)
    routed.set_dim(0, "2*k + 1")
    assert routed.shape == (2 * sympy.Symbol("k") + 1,)
    assert g.Map(routed, fn="exp").shape == (2 * sympy.Symbol("k") + 1,)  # what is built from it follows


def test_a_shape_mismatch_raises_at_construction_naming_both_ends_and_shapes():
    g = stepsim.Graph("bad")
    g.tensor("a", (64, 256))
    g.tensor("b", (64, 128))
    a = g.LinearOffChipLoad(tensor="a", tile=[16, 256], name="la")
    b = g.LinearOffChipLoad(tensor="b", tile=[16, 128], name="lb")
    with pytest.raises(stepsim.ShapeError) as e:
        g.Map(a, b, fn="add", name="sum")
    msg = str(e.value)
    assert "sum" in msg and "la.out" in msg and "lb.out" in msg, msg
    assert "T[16x256:bf16]" in msg and "T[16x128:bf16]" in msg, msg
    assert [n["name"] for n in g.nodes] == ["la", "lb"]  # the failed node is not kept


def test_duplicate_names_and_streams_of_another_graph_are_refused(small_graph):
    x = small_graph.stream("load.out")
    with pytest.raises(stepsim.ShapeError, match="node 'sq' is defined twice"):
        small_graph.Map(x, x, fn="mul", name="sq")
    other = stepsim.Graph("other")
    with pytest.raises(stepsim.ShapeError, match="from another graph"):
        other.Map(x, fn="exp")
    with pytest.raises(stepsim.Error, match="tensor 'x' is declared twice"):
        small_graph.tensor("x", (4, 4))


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_yaml_round_trip_is_a_fixed_point(path):
    text = stepsim.Graph.from_yaml(path).to_yaml()
    assert stepsim.Graph.from_yaml(text).to_yaml() == text


@pytest.mark.parametrize("layer,params", [("swiglu", {}), ("moe", {"model": "qwen", "tile_n": 0}),
                                          ("attention", {}), ("decoder", {"batch": 8, "regions": 2})])
def test_a_layer_writes_the_yaml_of_stepsim_build(layer, params, tmp_path):
    out = tmp_path / "layer.yaml"
    args = ["build", layer, "-o", str(out)]
    for k, v in params.items():
        args += ["--param", "%s=%s" % (k, v)]
    cli(*args)
    assert getattr(stepsim.layers, layer)(**params).to_yaml() == out.read_text()


def test_a_layer_is_a_graph_one_can_extend():
    g = stepsim.layers.swiglu()
    names = {n["name"] for n in g.nodes}
    out = next(n for n in g.nodes if n["op"] == "LinearOffChipStore")
    src = g.stream(out["inputs"]["in"])
    g.Sink(g.Map(src, fn="exp", name="extra_exp"), name="extra_sink")
    assert {n["name"] for n in g.nodes} - names == {"extra_exp", "extra_sink"}
    assert g.run().cycles > 0
    assert "swiglu" in stepsim.layers.names()
    assert "Parameters:" in stepsim.layers.moe.__doc__


def test_arrays_as_init_are_saved_beside_the_graph_file(tmp_path):
    import numpy as np

    g = stepsim.Graph("arr")
    g.tensor("x", (4, 8), init=np.arange(32, dtype=np.float32).reshape(4, 8))
    g.output_tensor("y", (4, 8))
    g.LinearOffChipStore(g.LinearOffChipLoad(tensor="x", tile=[4, 8]), tensor="y", tile=[4, 8])
    with pytest.raises(stepsim.Error, match="save"):
        g.to_yaml()
    with pytest.raises(stepsim.Error, match=r"init array of shape \(3, 8\) for the declared shape \(4, 8\)"):
        g.tensor("z", (4, 8), init=np.zeros((3, 8), np.float32))
    with pytest.raises(stepsim.Error, match="init array of dtype int64 for a bf16 tensor"):
        g.tensor("z", (4, 8), init=np.zeros((4, 8), np.int64))
    path = g.save(str(tmp_path / "arr.yaml"))
    assert (tmp_path / "x.npy").exists()
    r = stepsim.Graph.from_yaml(path).run(mode="functional")
    assert (r.outputs["y"] == np.arange(32, dtype=np.float32).reshape(4, 8)).all()
