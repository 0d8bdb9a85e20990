"""The PyTorch front door on code as its authors write it (testbench/python/torch_models): every
construct and every style lowered as written, run in functional mode, and compared with PyTorch in
fp32 and in bf16 within the corpus' layer tolerance (reference.TOLERANCE); MoE blocks per token,
tokens whose top-k is within bf16 rounding of a tie reported apart; every refusal by its message."""
import re

import numpy as np
import pytest
import stepsim
import stepsim.torch
import torch
from torch_models import STYLES, constructs, reference as R
from torch_models import llama_complex, mixtral_where, qwen3_moe, sdpa_torch2


def lowered_outputs(module, inputs, schedule=None):
    lowered = stepsim.torch.lower(module, inputs, schedule=schedule)
    assert_every_stream_is_read(lowered.graph)
    res = lowered.run(mode="functional")
    return lowered, res, [torch.tensor(o) for o in res.outputs]


def assert_every_stream_is_read(graph):
    """No node whose output nobody reads (its traffic would be predicted but never run)."""
    read = {v.split(".")[0] for n in graph.nodes for v in (n.get("inputs") or {}).values()}
    dangling = [n["name"] for n in graph.nodes if n["name"] not in read and n["op"] != "LinearOffChipStore"]
    assert not dangling, dangling


def assert_matches(got, module, inputs):
    for g, w32, w16 in zip(got, R.tensors(R.run_fp32(module, inputs)), R.tensors(R.run_bf16(module, inputs))):
        assert tuple(g.shape) == tuple(w32.shape)
        for want, name in ((w32, "fp32"), (w16, "bf16")):
            ok, e = R.within_tolerance(g, want)
            assert ok, "against PyTorch %s: %s" % (name, e)


BATCHED = [n for n in constructs.CONSTRUCTS if n not in ("prime_seq_37",)]


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("name", BATCHED)
def test_every_construct_lowers_as_written_and_matches_pytorch(name, batch):
    module, inputs = constructs.CONSTRUCTS[name](batch=batch, seed=0)
    _, res, got = lowered_outputs(module, inputs)
    assert res.cycles > 0
    assert_matches(got, module, inputs)


DENSE = ["gpt2", "llama_complex", "llama_interleaved", "qwen3_moe"]


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("style", DENSE)
def test_every_transformer_block_prefill_lowers_as_written_and_matches(style, batch):
    module, inputs = STYLES[style].make(batch=batch)
    if style == "qwen3_moe":  # a decoder layer with a MoE MLP: routing-aware below
        _, _, got = lowered_outputs(module, inputs)
        assert_moe_matches(got[0], module, inputs, qwen3_moe.router_of)
        return
    _, _, got = lowered_outputs(module, inputs)
    assert_matches(got, module, inputs)


def test_a_torch2_block_with_scaled_dot_product_attention_lowers_through_the_shim():
    module, inputs = sdpa_torch2.make(batch=2)
    with pytest.raises(stepsim.Error, match="scaled_dot_product_attention.*written for torch >= 2.*sdpa_shim"):
        stepsim.torch.lower(module, inputs)
    with stepsim.torch.sdpa_shim():
        _, _, got = lowered_outputs(module, inputs)
        assert_matches(got, module, inputs)
    assert not hasattr(torch.nn.functional, "scaled_dot_product_attention")  # the shim is gone again


def assert_moe_matches(got, module, inputs, router_of):
    """Per token against fp32: decided tokens within the tolerance; tokens whose k-th and
    (k+1)-th router scores are within bf16 rounding of each other are reported apart."""
    m32 = R.prepared(module, torch.float32)
    seen, k = R._captured_router(m32, router_of)
    want = R.tensors(R.call_steps(m32, [inputs], torch.float32)[-1])[0]
    scores = seen["scores"].reshape(-1, seen["scores"].shape[-1]).double()
    d = want.shape[-1]
    per_token = (got.reshape(-1, d).double() - want.reshape(-1, d).double()).abs().amax(-1) / want.abs().max()
    router = seen["router"]
    tied = R.near_ties(scores, k, R.score_rounding(seen["input"], router.weight, router.bias, scores))
    decided = per_token[~tied]
    assert decided.numel() > 0
    assert float(decided.max()) <= R.TOLERANCE["rel_max"], (float(decided.max()), int(tied.sum()))
    return int(tied.sum()), float(per_token[tied].max()) if tied.any() else 0.0


@pytest.mark.parametrize("style", ["mixtral_where", "mixtral_index_add", "mixtral_einsum"])
@pytest.mark.parametrize("batch", [1, 2])
def test_moe_blocks_in_their_loop_and_einsum_forms_route_by_their_gate_and_match(style, batch):
    module, inputs = STYLES[style].make(batch=batch)
    lowered, res, got = lowered_outputs(module, inputs)
    ops = [n["op"] for n in lowered.graph.nodes]
    assert ops.count("TopK") == 1 and ops.count("Reassemble") == 1  # routed, not dense
    assert_moe_matches(got[0], module, inputs, STYLES[style].router_of)


def test_the_mixtral_block_also_returns_its_router_logits():
    module, inputs = mixtral_where.make()
    _, _, got = lowered_outputs(module, inputs)
    logits = R.tensors(R.run_fp32(module, inputs))[1]
    ok, e = R.within_tolerance(got[1], logits)
    assert ok, e


def test_a_moe_block_as_the_root_module_lowers():
    module, inputs = qwen3_moe.make_moe()
    _, _, got = lowered_outputs(module, inputs)
    assert_moe_matches(got[0], module, inputs, qwen3_moe.router_of)


def test_the_lowering_is_deterministic():
    module, inputs = llama_complex.make(batch=2)
    a, b = stepsim.torch.lower(module, inputs), stepsim.torch.lower(module, inputs)
    assert a.graph.nodes == b.graph.nodes
    ra, rb = a.run(mode="functional"), b.run(mode="functional")
    assert ra.cycles == rb.cycles
    assert all(np.array_equal(x, y) for x, y in zip(ra.outputs, rb.outputs))


def test_a_timing_run_of_a_block_agrees_with_its_analysis():
    module, inputs = STYLES["gpt2"].make(batch=2)
    lowered = stepsim.torch.lower(module, inputs)
    res = lowered.run(mode="timing")
    sym = res.result.symbolic.set_index("metric")
    assert (sym.loc["read_bytes", "predicted"], sym.loc["write_bytes", "predicted"]) == res.result.tile_traffic()
    assert sym.loc["flops", "predicted"] == sym.loc["flops", "measured"]


def test_stored_tensors_are_named_after_the_module():
    module, inputs = STYLES["gpt2"].make()
    names = [t["name"] for t in stepsim.torch.lower(module, inputs).graph.tensors]
    assert "input_x" in names and "ln_1_weight" in names and "mlp_c_fc_weight" in names


# ---- refusals: a stepsim.Error naming the operation as written, the user's line, and what to do

HERE = re.escape(__file__.rsplit("/", 1)[-1])


def test_a_prime_sequence_length_is_refused_not_tiled_by_one_row():
    module, inputs = constructs.CONSTRUCTS["prime_seq_37"](batch=1, seed=0)
    with pytest.raises(stepsim.Error, match=r"the 37 rows of .* have no divisor from 4 to 16.*tile_rows to a "
                                            r"divisor of 37 \(37 itself: one tile\)"):
        stepsim.torch.lower(module, inputs)
    _, res, got = lowered_outputs(module, inputs, schedule={"tile_rows": 37})
    assert_matches(got, module, inputs)
    _, gcd, _ = lowered_outputs(module, inputs, schedule={"tile_rows": 16, "non_divisor": "gcd"})
    assert gcd.cycles > res.cycles  # the documented policy, chosen: 1-row tiles


def test_an_unsupported_operation_names_aten_the_file_and_line():
    class Cumulative(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(x, -1) * 2

    with pytest.raises(stepsim.Error, match=r"aten.cumsum is not supported.*docs/python.md at .*%s:\d+: "
                                            r"return torch.cumsum\(x, -1\) \* 2" % HERE):
        stepsim.torch.lower(Cumulative(), (torch.randn(16, 64),))


def test_a_module_that_fails_on_its_example_inputs_names_its_line():
    class Broken(torch.nn.Module):
        def forward(self, x):
            B, T, C = x.size()
            return x.view(B, T, 5, -1)  # 64 does not split into 5

    with pytest.raises(stepsim.Error, match=r"tracing Broken failed at .*%s:\d+: return x.view\(B, T, 5, -1\).*"
                                            r"RuntimeError" % HERE):
        stepsim.torch.lower(Broken(), (torch.randn(1, 16, 64),))


def test_a_data_dependent_gather_is_refused_with_its_line():
    class Gather(torch.nn.Module):
        def forward(self, x):
            idx = x[0].argsort()[:8]
            return x.index_select(1, idx)

    with pytest.raises(stepsim.Error, match=r"aten\.\w+ .*at .*%s:\d+" % HERE):
        stepsim.torch.lower(Gather(), (torch.randn(16, 64),))


def test_schedule_keys_and_values_are_checked():
    module, inputs = constructs.CONSTRUCTS["gelu_exact"](batch=1, seed=0)
    for schedule, message in (({"tile": 4}, "unknown key"), ({"tile_rows": 0}, "tile_rows must be a whole number"),
                              ({"tile_rows": True}, "tile_rows must be"), ({"non_divisor": "pad"}, "non_divisor"),
                              ([("tile_rows", 8)], "a dict")):
        with pytest.raises(stepsim.Error, match=message):
            stepsim.torch.lower(module, inputs, schedule=schedule)
    with pytest.raises(stepsim.Error, match="tile_rows 5 does not divide the 16 rows"):
        stepsim.torch.lower(module, inputs, schedule={"tile_rows": 5})


def test_the_docs_list_every_supported_aten_operation_from_the_table():
    import os

    from stepsim.torch import ops

    docs = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md"), encoding="utf-8").read()
    assert ops.docs_block() in docs, "run: python3 -m stepsim.torch --write docs/python.md"
    assert set(stepsim.torch.supported_ops()) == {n for names, _ in ops.RULES.docs for n in names}


# ---- decode: one new token over a KV cache (ragged prompt lengths as each style writes them)

CACHED = ["llama_complex", "llama_interleaved", "qwen3_moe"]


def lowered_decode(style, lengths):
    """(lowered decode output, PyTorch fp32 and bf16 decode outputs): the prefill runs in PyTorch
    on a copy of the module (filling its cache), then the decode step is lowered as written."""
    import copy

    mod = STYLES[style]
    module, _ = mod.make(batch=len(lengths))
    steps = mod.decode_steps(module, lengths)
    want32 = R.tensors(R.run_fp32(module, steps=steps)[-1])[0]
    want16 = R.tensors(R.run_bf16(module, steps=steps)[-1])[0]
    live, live_steps = copy.deepcopy((module, steps))
    with torch.no_grad():
        live(*live_steps[0])
    lowered, res, got = lowered_outputs(live, live_steps[1])
    return lowered, got[0], want32, want16


@pytest.mark.parametrize("lengths", [[12], [12, 5]])
@pytest.mark.parametrize("style", CACHED)
def test_a_decode_step_over_the_cache_lowers_as_written_and_matches(style, lengths):
    lowered, got, want32, want16 = lowered_decode(style, lengths)
    for want in (want32, want16):
        ok, e = R.within_tolerance(got, want)
        assert ok, e
    ops = [n["op"] for n in lowered.graph.nodes]
    assert "LinearOffChipStore" in ops[:-1]  # the new keys and values are written to the cache
    # the cached positions are read from HBM and joined with the new one
    assert any(n["op"] == "Map" and n["params"]["fn"] == "cat_rows" for n in lowered.graph.nodes)


def test_bad_arguments_are_refused_naming_them():
    silu = torch.nn.SiLU()
    with pytest.raises(TypeError, match="module must be a torch.nn.Module, not str"):
        stepsim.torch.lower("x", (torch.randn(4, 4),))
    with pytest.raises(TypeError, match="args must be a tuple"):
        stepsim.torch.lower(silu, None)
    with pytest.raises(TypeError, match="kwargs must be a dict or None, not list"):
        stepsim.torch.lower(silu, (torch.randn(4, 4),), [1])
    with pytest.raises(stepsim.Error, match=r"input input of shape \[0, 4\] has no elements"):
        stepsim.torch.lower(silu, (torch.randn(0, 4),))

    class Odd(torch.nn.Module):
        def forward(self, x, ids):
            return x.shape[0], ids * 2

    with pytest.raises(stepsim.Error, match="output 0 of Odd is int, not a tensor"):
        stepsim.torch.lower(Odd(), (torch.randn(4, 4), torch.arange(4)))

    class OnlyIds(torch.nn.Module):
        def forward(self, ids):
            return ids * 2

    with pytest.raises(stepsim.Error, match="not computed from the floating inputs"):
        stepsim.torch.lower(OnlyIds(), (torch.arange(16).reshape(4, 4),))


def test_a_decoder_layer_with_moe_over_several_row_blocks_per_sequence():
    """Batch 2 x 48 tokens: the MoE's token rows come back as [2, 3] row blocks of 16."""
    module, inputs = qwen3_moe.make(batch=2, seq=48)
    _, _, got = lowered_outputs(module, inputs)
    assert_moe_matches(got[0], module, inputs, qwen3_moe.router_of)


def test_an_attention_mask_given_as_an_input_is_read_where_it_is_broadcast():
    class Masked(torch.nn.Module):
        def forward(self, q, k, mask):
            return torch.softmax(q @ k.transpose(-2, -1) + mask, dim=-1)

    q, k = torch.randn(2, 4, 32, 16), torch.randn(2, 4, 32, 16)
    mask = torch.full((32, 32), float("-inf")).triu(1)
    _, _, got = lowered_outputs(Masked(), (q, k, mask))
    assert_matches(got, Masked(), (q, k, mask))


def test_a_top_k_outside_a_moe_block_and_a_complex_operand_are_refused_with_what_to_do():
    class Pick(torch.nn.Module):
        def forward(self, x):
            values, _ = torch.topk(x, 4, dim=-1)
            return values * 2

    with pytest.raises(stepsim.Error, match=r"aten.topk outside a recognised MoE block.*stacked in parameters"):
        stepsim.torch.lower(Pick(), (torch.randn(16, 32),))

    class Complex(torch.nn.Module):  # a complex table is a constant: folded exactly, never its real part
        def forward(self, x, table):
            return torch.view_as_real(x.to(torch.complex64) * table)

    table = torch.polar(torch.ones(16, 32), torch.randn(16, 32))
    with pytest.raises(stepsim.Error, match="a complex operand that is not a rotation .*test_torch_front_door.py"):
        stepsim.torch.lower(Complex(), (torch.randn(16, 32), table))


def test_a_native_scaled_dot_product_attention_is_traced_as_the_math_it_computes(monkeypatch):
    """As on torch >= 2: F.scaled_dot_product_attention exists, its kernel an ATen op with no rule
    (a running sum stands in for it here); the lowering traces the reference math instead."""
    def fused_kernel(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
        return torch.cumsum(v, -2)  # no rule: were it traced, the lowering would refuse it

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", fused_kernel, raising=False)
    module, inputs = sdpa_torch2.make(batch=2)
    _, _, got = lowered_outputs(module, inputs)
    monkeypatch.delattr(torch.nn.functional, "scaled_dot_product_attention")
    with stepsim.torch.sdpa_shim():  # PyTorch's reference for the comparison
        assert_matches(got, module, inputs)


def test_a_moe_lowering_routed_by_its_gate_refuses_a_timing_run_saying_why():
    module, inputs = mixtral_where.make()
    lowered = stepsim.torch.lower(module, inputs)
    with pytest.raises(stepsim.Error, match="routes its MoE tokens by its gate.*functional mode.*routing_trace"):
        lowered.run(mode="timing")
    assert lowered.run(mode="functional").cycles > 0


@pytest.mark.parametrize("make", ["make_llama_layer", "make_gpt2_block"])
def test_hugging_face_shaped_blocks_lower_as_written(make):
    from torch_models import hf_style

    module, inputs = getattr(hf_style, make)(batch=2)
    _, _, got = lowered_outputs(module, inputs)
    got, want = got[0], R.tensors(R.run_fp32(module, inputs))[0]
    if make == "make_llama_layer":  # the padded row's first 4 queries attend only padding
        got, want = got[:, 4:], want[:, 4:]
    ok, e = R.within_tolerance(got, want)
    assert ok, e
