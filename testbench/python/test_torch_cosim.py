"""A lowered PyTorch module co-simulated on the cycle-accurate units (stepsim/torch/cosim.py; docs/cosim.md,
"Co-simulating a lowered PyTorch module"): Lowered.run(impl="hls"|"rtl") down-tiles the graph to the
units' tile, runs every node that has a unit on it, and gives the per-node account. The outputs equal
the approximate run's bit for bit, the matmuls, the element-wise maps and the retiling run on units,
and every node that stays approximate says why."""
import math

import numpy as np
import pytest
import stepsim
import stepsim.torch
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import cli, same_bits

IMPLS = ["hls"] + (["rtl"] if stepsim._stepsim.have_rtl else [])


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 128, bias=False)
        self.b = nn.Linear(128, 64, bias=False)

    def forward(self, x):
        return x + self.b(F.silu(self.a(x)))


class CausalAttention(nn.Module):
    """One head of causal self-attention, as written by hand."""

    def __init__(self, d=64):
        super().__init__()
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.d = d

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        n = x.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        return self.o(torch.softmax(s, dim=-1) @ v)


def lowered(module):
    torch.manual_seed(0)
    m = module()
    return stepsim.torch.lower(m, (torch.randn(32, 64),))


@pytest.fixture(scope="module")
def mlp():
    lw = lowered(MLP)
    return lw, lw.run()


@pytest.fixture(scope="module")
def attention():
    lw = lowered(CausalAttention)
    return lw, lw.run()


def row(res, node):
    t = res.cosim
    return t[t["node"] == node].iloc[0]


def nodes_where(lw, op, fns=None):
    return [n["name"] for n in lw.graph.nodes if n["op"] == op and (fns is None or n["params"].get("fn") in fns)]


def assert_same_outputs(res, approx):
    assert len(res.outputs) == len(approx.outputs)
    for got, want in zip(res.outputs, approx.outputs):
        assert same_bits(got, want)


@pytest.mark.parametrize("impl", IMPLS)
def test_the_mlp_runs_every_node_on_units_and_computes_the_approximate_outputs(mlp, impl):
    lw, approx = mlp
    res = lw.run(impl=impl)
    assert isinstance(res, stepsim.torch.cosim.CosimResult)
    assert res.equivalent and res.units_equivalent and res.logical_identical
    assert_same_outputs(res, approx)
    assert res.cycles_logical == approx.cycles
    # step-artifact issues one request per cycle: the [r x 16] address generator needs 4, so the
    # side that puts the most nodes on units is 4.
    assert res.tile == 4
    t = res.cosim
    assert not t["conversion"].any()
    assert list(t["node"]) == [n["name"] for n in lw.graph.nodes]
    assert (t["placement"] == impl).all(), t.to_string()
    assert (t["why"] == "").all()
    for mm in nodes_where(lw, "Map", ("matmul_t",)):
        assert row(res, mm)["units"] == "2 Bufferize, 2 Streamify, Accum"
    assert row(res, nodes_where(lw, "Accum", ("retile_col",))[0])["units"] == "Bufferize, Streamify, Flatten"
    for ew in nodes_where(lw, "Map", ("silu", "add")):
        assert row(res, ew)["units"] == "Map"
    assert "Verdict: equivalent" in res.summary and "## Down-tiled to [4 x 4] blocks" in res.summary
    assert res.nodes(impl) == list(t["node"])


@pytest.mark.parametrize("impl", IMPLS)
def test_causal_attention_runs_its_matmuls_maps_and_retiling_on_units_and_says_why_not_the_rest(attention, impl):
    lw, approx = attention
    res = lw.run(impl=impl)
    assert res.equivalent, res.summary
    assert_same_outputs(res, approx)
    t = res.cosim
    nodes = t[~t["conversion"]]
    # Every matmul (the projections, q k^T and p v), the exp and the retiling on units.
    for mm in nodes_where(lw, "Map", ("matmul", "matmul_t")):
        assert row(res, mm)["placement"] == impl, row(res, mm)
        assert row(res, mm)["units"] == "2 Bufferize, 2 Streamify, Accum"
    assert row(res, nodes_where(lw, "Map", ("exp",))[0])["placement"] == impl
    retile = nodes_where(lw, "Accum", ("retile_row",))
    assert retile and all(row(res, r)["placement"] == impl for r in retile)
    for name in nodes_where(lw, "Bufferize") + nodes_where(lw, "Streamify"):
        assert row(res, name)["placement"] == impl
    # The softmax's row sum keeps its logical tiles (its fp32 sum per block would round otherwise) ...
    rs = row(res, nodes_where(lw, "Map", ("row_sum",))[0])
    assert not rs["down_tiled"] and rs["placement"] == "approx"
    assert rs["why"] == "not down-tiled" and "partial sums" in rs["reason"]
    # ... the divisions and the mask's select have no unit, the scalar's [1 x 1] load no tile the
    # address generator moves, and every other node that is not entirely on units says why.
    for div in nodes_where(lw, "Map", ("div", "select")):
        assert row(res, div)["why"] == "function without a unit"
        assert "no unit computes Map fn=" in row(res, div)["reason"]
    assert row(res, nodes_where(lw, "Map", ("row_max",))[0])["why"] == "tile shape"
    off_units = nodes[nodes["placement"] != impl]
    assert len(off_units) and (off_units["why"] != "").all(), off_units.to_string()
    assert set(off_units["why"]) <= {"not down-tiled", "function without a unit", "tile shape"}
    # The streams between the row sum and its blocked neighbours are converted.
    conv = t[t["conversion"]]
    assert len(conv) == 2 and all("row_sum" in n for n in conv["node"])
    assert res.cycles > 0 and res.cycles_approx > 0 and res.wall_seconds > 0
    assert "why not on units" in res.summary


def test_a_given_side_and_the_address_generator_at_16(mlp):
    lw, approx = mlp
    res = lw.run(impl="hls", downtile=16)
    assert res.tile == 16 and res.equivalent
    assert_same_outputs(res, approx)
    loads = nodes_where(lw, "LinearOffChipLoad") + nodes_where(lw, "LinearOffChipStore")
    for name in loads:  # one request per cycle at step-artifact
        r = row(res, name)
        assert r["placement"] == "approx" and r["why"] == "parameters" and "par_dispatch 1" in r["reason"]
    res4 = lw.run(impl="hls", downtile=16, set={"par_dispatch": 4})
    assert all(row(res4, name)["placement"] == "hls" for name in loads)


def test_a_plain_run_can_be_down_tiled_and_the_arguments_are_checked(mlp):
    lw, approx = mlp
    res = lw.run(downtile=4)  # all-approximate, on blocks
    assert_same_outputs(res, approx)
    assert res.result.downtile_tile == 4 and res.result.downtile is None
    with pytest.raises(TypeError, match="downtile must be None, a tile side"):
        lw.graph.run(downtile="4x4")
    with pytest.raises(stepsim.Error, match="neither a tile side 1..65536 nor auto"):
        lw.graph.run(downtile=0)
    with pytest.raises(stepsim.Error, match="impl"):
        lw.run(impl="vhdl")


def test_the_command_line_gives_the_same_account(mlp, tmp_path):
    lw, _ = mlp
    path = str(tmp_path / "mlp.yaml")
    lw.graph.save(path)
    p = cli("run", path, "--mode", "functional", "--impl", "hls", "--downtile", "auto", "--set",
            "fifo_depth=%d" % lw.fifo_depth, "--out", str(tmp_path / "out"))
    res = lw.run(impl="hls")
    assert "## Down-tiled to [4 x 4] blocks" in p.stdout
    assert "output0 identical (bit for bit)" in p.stdout
    assert res.result.downtile_text in p.stdout
    out = np.load(str(tmp_path / "out" / "output0.npy"))
    assert same_bits(out.astype(np.float32), res.result.outputs["output0"])
