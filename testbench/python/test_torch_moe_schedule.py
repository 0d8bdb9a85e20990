"""The MoE schedule of the PyTorch front door (stepsim/torch/moe.py): moe_tiling (dynamic: one tile of
what each expert got; static: tiles of moe_tile_n tokens, the last padded), moe_tile_n and
moe_regions (the experts share that many pipelines, served in turn), on the corpus' MoE blocks as
written (testbench/python/torch_models).

What each choice must do, checked on the measured run:
- every choice computes the same: outputs bit for bit those of dynamic tiling (each token's row
  goes through the same operations), and within the tolerance of PyTorch per token
  (test_torch_front_door.assert_moe_matches);
- static tiling computes its padding: FLOPs = dynamic's + padding rows x an expert's FLOPs per
  row, exactly; with little compute per cycle, tiles far larger than what the experts get cost
  cycles in proportion, and their padding takes on-chip memory;
- static tiles smaller than what the experts get load the weights once per tile: read bytes =
  dynamic's + (tiles - active experts) x one expert's weight bytes, exactly, and cycles follow;
  a static tile at least as large as every expert's tokens costs about what dynamic tiling does
  (the block at this size waits on its loads, not on its compute);
- moe_regions R < E: R pipelines instead of E (compute units and allocated FLOPs/cycle drop by
  E - R pipelines, the on-chip memory with them), the same FLOPs and bytes read (each packed tile
  still loads its expert's weights once), and more cycles as fewer pipelines serve the experts
  in turn;
- a value or a combination the lowering cannot take is a stepsim.Error naming the key and the value.
"""
import math
import re

import numpy as np
import pytest
import stepsim
import stepsim.torch
import torch
from torch_models import STYLES, mixtral_where

from test_torch_front_door import assert_every_stream_is_read, assert_moe_matches

MOE_STYLES = ["mixtral_where", "mixtral_index_add", "mixtral_einsum", "qwen3_moe"]


def run(module, inputs, schedule=None):
    lowered = stepsim.torch.lower(module, inputs, schedule=schedule)
    assert_every_stream_is_read(lowered.graph)
    return lowered, lowered.run(mode="functional")


def measured(res):
    """{cycles, flops, read, onchip, compute_units, allocated} of a run."""
    r = res.result
    sym = r.symbolic.set_index("metric")
    units = r.nodes.compute_units.fillna(0)
    return dict(cycles=r.cycles, flops=int(sym.loc["flops", "measured"]), read=r.tile_traffic()[0],
                onchip=int(sym.loc["onchip_requirement_bytes", "measured"]), compute_units=int(units.sum()),
                allocated=int((units * r.nodes.compute_bw.fillna(0)).sum()))


def tokens_per_expert(res, n):
    """P_e, the tokens routed to each expert, from a dynamic run (each is weighted once)."""
    firings = dict(zip(res.result.nodes["name"], res.result.nodes["firings"]))
    counts = []
    for e in range(n):
        (name,) = [k for k in firings if re.fullmatch(r"block\d+_e%d_weight_\d+" % e, k)]
        counts.append(int(firings[name]))
    return counts


def program(lowered):
    """The graph's operators and their parameters in order (node names carry the block's number)."""
    return [(n["op"], n["params"]) for n in lowered.graph.nodes]


def expert_nodes(lowered, prefix="e0_"):
    """The compute nodes of one expert's pipeline (the per-expert lowering names them e<j>_...)."""
    return [n for n in lowered.graph.nodes if n["name"].startswith(prefix) and n["op"] in ("Map", "Accum")]


@pytest.mark.parametrize("style", MOE_STYLES)
def test_every_moe_schedule_computes_what_dynamic_tiling_does_and_matches_pytorch(style):
    module, inputs = STYLES[style].make(batch=1)
    lowered, base = run(module, inputs)
    schedules = [{"moe_tiling": "static", "moe_tile_n": 4}, {"moe_regions": 2}, {"moe_regions": 1, "moe_tile_n": 8}]
    for schedule in schedules:
        other, res = run(module, inputs, schedule)
        assert program(other) != program(lowered)
        for got, want in zip(res.outputs, base.outputs):
            assert np.array_equal(got, want), schedule
    assert_moe_matches(torch.tensor(res.outputs[0]), module, inputs, STYLES[style].router_of)


def test_static_tiling_computes_its_padding():
    module, inputs = mixtral_where.make(batch=1)  # 16 tokens, 4 experts, top-2: about 8 tokens each
    slow = {"compute_bw": 256}  # little compute per node: the expert matmuls take the time
    _, dyn = run(module, inputs, slow)
    p = tokens_per_expert(dyn, 4)
    assert sum(p) == 32 and max(p) < 16
    nodes = dyn.result.nodes
    per_row = {int(nodes[nodes.name.str.startswith("e%d_" % e)].flops.sum()) // p[e] for e in range(4) if p[e]}
    assert len(per_row) == 1  # every expert: the same FLOPs per token
    (per_row,) = per_row
    assert per_row > 3 * 2 * 64 * 128  # three matmuls on the token's row, then SiLU and the product
    base = measured(dyn)
    cycles = {}
    for tn in (16, 64):
        _, res = run(module, inputs, dict(slow, moe_tile_n=tn))
        m = measured(res)
        padding = sum(math.ceil(x / tn) * tn - x for x in p)
        assert m["flops"] == base["flops"] + padding * per_row
        assert m["read"] == base["read"]  # one tile per expert: the weights once, as dynamic
        assert m["onchip"] > base["onchip"]  # the padded tiles are held on chip
        cycles[tn] = m["cycles"]
    # 16-token tiles for about 8 tokens: about 2x the expert FLOPs; 64-token tiles: 8x
    assert cycles[16] > 1.2 * base["cycles"]
    assert cycles[64] > 3 * base["cycles"] and cycles[64] > 2 * cycles[16]


def test_small_static_tiles_load_the_weights_once_per_tile_and_large_ones_cost_what_dynamic_does():
    module, inputs = mixtral_where.make(batch=1)
    _, dyn = run(module, inputs)
    p = tokens_per_expert(dyn, 4)
    base = measured(dyn)
    weight_bytes = 3 * 64 * 128 * 2  # w1, w3, w2 of one expert in bf16
    active = sum(1 for x in p if x)
    for tn in (4, 8):
        _, res = run(module, inputs, {"moe_tile_n": tn})
        m = measured(res)
        assert m["read"] == base["read"] + (sum(math.ceil(x / tn) for x in p) - active) * weight_bytes
        assert m["cycles"] > 1.1 * base["cycles"], (tn, m["cycles"], base["cycles"])
    _, res = run(module, inputs, {"moe_tile_n": max(p)})
    assert base["cycles"] <= res.cycles <= 1.02 * base["cycles"]
    # moe_tiling static alone: the tokens' tile rows (16 here) as the tile
    a, _ = run(module, inputs, {"moe_tiling": "static"})
    b, _ = run(module, inputs, {"moe_tile_n": 16})
    assert program(a) == program(b)
    # an explicit dynamic leaves moe_tile_n unused (a design space searches both keys)
    c, _ = run(module, inputs, {"moe_tiling": "dynamic", "moe_tile_n": 4})
    d, _ = run(module, inputs)
    assert program(c) == program(d)


def test_time_multiplexed_experts_share_fewer_pipelines_and_take_turns():
    module, inputs = mixtral_where.make(batch=1)
    lowered, dyn = run(module, inputs)
    base = measured(dyn)
    pipeline = [n["name"] for n in expert_nodes(lowered)]
    nodes = dyn.result.nodes[dyn.result.nodes.name.isin(pipeline)]
    allocated = int((nodes.compute_units * nodes.compute_bw).sum())  # one pipeline's FLOPs/cycle
    loads = [n for n in lowered.graph.nodes if n["name"].startswith("e0_") and n["op"] == "LinearOffChipLoad"]
    cycles = {4: base["cycles"]}
    onchip = {4: base["onchip"]}
    for r in (2, 1):
        low, res = run(module, inputs, {"moe_regions": r})
        m = measured(res)
        ops = [n["op"] for n in low.graph.nodes]
        assert ops.count("EagerMerge") == r and ops.count("RandomOffChipLoad") == r * len(loads)
        assert ops.count("ExpertAddrGen") == r * len(loads)
        assert m["compute_units"] == base["compute_units"] - (4 - r) * len(pipeline)
        assert m["allocated"] == base["allocated"] - (4 - r) * allocated
        assert (m["flops"], m["read"]) == (base["flops"], base["read"])
        cycles[r], onchip[r] = m["cycles"], m["onchip"]
    assert cycles[1] > cycles[2] > cycles[4]
    assert onchip[1] < onchip[2] < onchip[4]
    # the region's matrices: its experts' weights stacked in the order of their selector bits
    assert {"w1_weight_r0", "w2_weight_r0", "w3_weight_r0"} <= {t["name"] for t in low.graph.tensors}
    w2 = [module.experts[e].w2.weight.detach().to(torch.bfloat16).float().numpy() for e in range(4)]
    assert np.array_equal(low.graph._arrays["w2_weight_r0"], np.concatenate(w2, 0))


def test_experts_without_a_token_pack_merge_and_load_nothing():
    module, inputs = mixtral_where.make(batch=1, seq=4, n_experts=8)  # 8 routed rows: idle experts
    _, dyn = run(module, inputs)
    p = tokens_per_expert(dyn, 8)
    assert 0 in p
    base = measured(dyn)
    for schedule in ({"moe_tile_n": 4}, {"moe_regions": 2}, {"moe_regions": 1, "moe_tile_n": 2}):
        _, res = run(module, inputs, schedule)
        assert all(np.array_equal(a, b) for a, b in zip(res.outputs, dyn.outputs)), schedule
        if "moe_tile_n" not in schedule:  # one tile per active expert: its weights once, no others
            assert measured(res)["read"] == base["read"]
    assert_moe_matches(torch.tensor(res.outputs[0]), module, inputs, mixtral_where.router_of)


def test_static_time_multiplexed_runs_on_a_routing_trace_in_timing_mode():
    # 8 experts on the real Mixtral routing of 64 tokens (no gate values: a timing run)
    module, inputs = mixtral_where.make(batch=4, seq=16, n_experts=8)
    trace = {"routing_trace": "shared:traces/moe/mixtral8x7b_b64_iter008_layer010.csv"}
    got = {}
    for key, schedule in {"dynamic": {}, "static32": {"moe_tile_n": 32}, "tm2": {"moe_regions": 2},
                          "static8_tm4": {"moe_tile_n": 8, "moe_regions": 4}}.items():
        res = stepsim.torch.lower(module, inputs, schedule=dict(trace, **schedule)).run(mode="timing")
        got[key] = measured(res)
    assert got["static32"]["flops"] > got["dynamic"]["flops"]  # padded to 32 rows per tile
    assert got["tm2"]["flops"] == got["dynamic"]["flops"] and got["tm2"]["read"] == got["dynamic"]["read"]
    assert got["tm2"]["compute_units"] < got["dynamic"]["compute_units"]
    assert got["static8_tm4"]["read"] > got["dynamic"]["read"]  # 8-token tiles: the weights once per tile


@pytest.mark.parametrize("schedule, message", [
    ({"moe_tiling": "tiled"}, "schedule: moe_tiling must be 'dynamic' or 'static', not 'tiled'"),
    ({"moe_tile_n": 0}, "schedule: moe_tile_n must be a whole number 1..1048576, not 0"),
    ({"moe_tile_n": 8.5}, "schedule: moe_tile_n must be a whole number 1..1048576, not 8.5"),
    ({"moe_regions": True}, "schedule: moe_regions must be a whole number 1..1048576, not True"),
    ({"moe_regions": 3}, "schedule: moe_regions 3 does not divide the 4 experts of MixtralSparseMoeBlock .*one of 1, "
                         "2, 4"),
    ({"moe_regions": 8, "moe_tile_n": 4}, "schedule: moe_regions 8 does not divide the 4 experts"),
])
def test_a_schedule_the_moe_lowering_cannot_take_is_a_clear_error(schedule, message):
    module, inputs = mixtral_where.make(batch=1)
    with pytest.raises(stepsim.Error, match=message):
        stepsim.torch.lower(module, inputs, schedule=schedule)


def test_the_design_space_example_searches_the_moe_schedule():
    # graphs/dse/torch_moe.yaml: its keys are the lowering's, its factory a Mixtral-style block
    import os

    from conftest import ROOT
    from stepsim.design import space as space_module
    from stepsim.design import torch_program

    s = space_module.load(os.path.join(ROOT, "graphs", "dse", "torch_moe.yaml"))
    assert {p.name for p in s.parameters} == {"moe_tiling", "moe_tile_n", "moe_regions"}
    spec = s.job()["program"]["torch"]
    a = torch_program.lower(spec, {"batch": 1, "seq": 16, "moe_regions": 2, "moe_tiling": "static", "moe_tile_n": 8})
    ops = [n_["op"] for n_ in a.graph.nodes]
    assert ops.count("EagerMerge") == 2 and ops.count("TopK") == 1
    assert a.run(mode="functional").cycles > 0
