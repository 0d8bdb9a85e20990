"""The attention schedule of the PyTorch front door (stepsim/torch/attention.py): attention 'flash'
streams each request's attended KV positions from HBM in tiles (KvCacheAddrGen, RandomOffChipLoad,
Accum flash_attn_update) over the regions of attention_parallel, as graphs/layers/attention.cpp
does. Checked on the corpus as written (decode steps over ragged caches, prefill) against PyTorch
in fp32 and bf16 within the corpus tolerance, on a serving-style decode with explicit lengths, by
the KV tiles actually read, by cycles (ragged below padded), and by its refusals."""
import copy
import math
import re

import pytest
import stepsim
import stepsim.torch
import torch
from torch import nn
from torch_models import STYLES, qwen3_moe, reference as R

from test_torch_front_door import assert_every_stream_is_read, assert_moe_matches

FLASH = {"attention": "flash"}
RAGGED = [60, 5, 33, 12]
CACHE = {"llama_complex": {"max_seq_len": 72}, "llama_interleaved": {"max_seq_length": 72}, "qwen3_moe": {}}
HERE = re.escape(__file__.rsplit("/", 1)[-1])


def ops_of(graph):
    return [(n["op"], n["params"].get("fn")) for n in graph.nodes]


def kv_tiles_read(res):
    """KV tiles the attention loaded: firings of its key loads (RandomOffChipLoad of the k cache)."""
    nodes = res.result.nodes
    keys = nodes[(nodes["op"] == "RandomOffChipLoad") & nodes["name"].str.contains(r"_k_\d+$|_r\d+_k_\d+$")]
    return int(keys["firings"].sum())


def within(got, *wants):
    for want in wants:
        ok, e = R.within_tolerance(got, want)
        assert ok, e


def decode(style, lengths, schedule):
    """The decode step of `style` after a PyTorch prefill of the ragged prompts, lowered with
    `schedule` and run: (lowered, result, output, PyTorch fp32, bf16, each row run alone)."""
    mod = STYLES[style]
    module, _ = mod.make(batch=len(lengths), **CACHE[style])
    steps = mod.decode_steps(module, lengths)
    want32 = R.tensors(R.run_fp32(module, steps=steps)[-1])[0]
    want16 = R.tensors(R.run_bf16(module, steps=steps)[-1])[0]
    alone = mod.ragged_reference(module, lengths)
    live, live_steps = copy.deepcopy((module, steps))
    with torch.no_grad():
        live(*live_steps[0])
    lowered = stepsim.torch.lower(live, live_steps[1], schedule=schedule)
    assert_every_stream_is_read(lowered.graph)
    res = lowered.run(mode="functional")
    return lowered, res, torch.tensor(res.outputs[0]), want32, want16, alone


# ---- decode: only each request's attended positions are read

@pytest.mark.parametrize("style,parallel", [(style, parallel) for style in CACHE for parallel in ("none", "dynamic")] +
                         [("llama_complex", "interleaved"), ("llama_complex", "coarse")])
def test_a_ragged_decode_streams_each_requests_positions_and_matches(style, parallel):
    schedule = dict(FLASH, attention_parallel=parallel, kv_tile=16)
    if parallel != "none":
        schedule["attention_regions"] = 2
    lowered, res, got, want32, want16, alone = decode(style, RAGGED, schedule)
    within(got, want32, want16, alone)
    ops = ops_of(lowered.graph)
    for op in (("KvCacheAddrGen", None), ("RandomOffChipLoad", None), ("RandomOffChipStore", None),
               ("Accum", "flash_attn_update"), ("Map", "mask_cols")):
        assert op in ops, op
    assert ("Map", "cat_rows") not in ops and ("Bufferize", None) not in ops[:ops.index(("KvCacheAddrGen", None))]
    if parallel == "dynamic":
        assert ("EagerMerge", None) in ops
    # two KV heads per request; a request attends its prompt and the new token: ceil((n + 1) / 16)
    assert kv_tiles_read(res) == 2 * sum(math.ceil((n + 1) / 16) for n in RAGGED)


def test_uniform_decode_and_the_new_token_only():
    """Uniform prompts (the styles' own masks, or none: Meta's decode passes mask None) lower too."""
    _, res, got, want32, want16, _ = decode("llama_complex", [12, 12], FLASH)
    within(got, want32, want16)
    assert kv_tiles_read(res) == 2 * 2  # 13 positions: one tile of 32 per KV head


def test_timing_mode_runs_the_same_graph():
    lowered, res, *_ = decode("llama_complex", RAGGED, dict(FLASH, attention_parallel="dynamic"))
    assert lowered.run(mode="timing").cycles == res.cycles


# ---- prefill: every choice works (the new keys take an HBM round trip; causal masks per tile)

@pytest.mark.parametrize("style,batch,parallel", [("gpt2", 1, "none"), ("llama_complex", 2, "none"),
                                                  ("llama_interleaved", 2, "dynamic"),
                                                  ("qwen3_moe", 2, "coarse"), ("sdpa_torch2", 2, "interleaved")])
def test_prefill_lowers_with_flash_attention_and_matches(style, batch, parallel):
    module, inputs = STYLES[style].make(batch=batch)
    schedule = dict(FLASH, attention_parallel=parallel)
    with stepsim.torch.sdpa_shim():
        lowered = stepsim.torch.lower(module, inputs, schedule=schedule)
        assert_every_stream_is_read(lowered.graph)
        got = torch.tensor(lowered.run(mode="functional").outputs[0])
        if style == "qwen3_moe":
            assert_moe_matches(got, module, inputs, qwen3_moe.router_of)
        else:
            within(got, R.tensors(R.run_fp32(module, inputs))[0], R.tensors(R.run_bf16(module, inputs))[0])
    assert ("Map", "add") in ops_of(lowered.graph)  # the causal mask, per tile


# ---- explicit lengths: a serving engine's cache, each request's rows from position 0

class ServingAttention(nn.Module):
    """One decode step as a serving engine writes it: caches [B, kv_heads, max_seq, head_dim] in
    which request b's tokens are positions 0..lengths[b]-1 (no padding), the new key and value
    written at the request's own position, the mask built from the lengths."""

    def __init__(self, batch, heads=4, kv_heads=2, head_dim=16, max_seq=72, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.n_rep, self.head_dim = heads // kv_heads, head_dim
        self.register_buffer("k_cache", torch.randn(batch, kv_heads, max_seq, head_dim, generator=g))
        self.register_buffer("v_cache", torch.randn(batch, kv_heads, max_seq, head_dim, generator=g))

    def forward(self, q, k, v, lengths):
        rows = torch.arange(q.shape[0])
        self.k_cache[rows, :, lengths] = k.squeeze(2)
        self.v_cache[rows, :, lengths] = v.squeeze(2)
        keys = self.k_cache.repeat_interleave(self.n_rep, dim=1)
        values = self.v_cache.repeat_interleave(self.n_rep, dim=1)
        mask = torch.arange(self.k_cache.shape[2])[None, :] <= lengths[:, None]
        scores = q @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
        return torch.softmax(scores.float(), dim=-1).type_as(q) @ values


def serving(lengths, schedule, seed=0):
    B = len(lengths)
    module = ServingAttention(B, seed=seed).eval()
    g = torch.Generator().manual_seed(seed + 1)
    inputs = (torch.randn(B, 4, 1, 16, generator=g), torch.randn(B, 2, 1, 16, generator=g),
              torch.randn(B, 2, 1, 16, generator=g), torch.tensor(lengths))
    lowered = stepsim.torch.lower(module, inputs, schedule=schedule)
    res = lowered.run(mode="functional")
    got = torch.tensor(res.outputs[0])
    within(got, R.run_fp32(module, inputs), R.run_bf16(module, inputs))
    return res


def test_explicit_lengths_give_each_request_its_own_positions():
    res = serving(RAGGED, FLASH)
    assert kv_tiles_read(res) == 2 * sum(math.ceil((n + 1) / 32) for n in RAGGED)
    with pytest.raises(stepsim.Error, match="mixing old and newly written positions"):
        serving(RAGGED, None)  # whole keys: the per-row writes are not one region along one dim


# Cycles (functional runs, step-artifact) of the serving decode above (attention only), lengths
# RAGGED against every request padded to the longest (60), KV tiles of 32 read in brackets:
#   schedule                          ragged       padded
#   flash, none                       713 (12)     909 (16)
#   flash, interleaved, 2 regions     595 (12)     595 (16)   region 0 gets requests 0 and 2 either way
#   flash, coarse, 2 regions          569 (12)     667 (16)
#   flash, dynamic, 2 regions         544 (12)     596 (16)
#   flash, dynamic, 4 regions         544 (12)     544 (16)   one request per region: the longest sets it
#   whole                             refused      717        (the per-row writes are not one region)
# The corpus' Llama block (llama_complex, decode_steps) at these lengths is bound by its weight loads:
# whole 1722, flash 1815 to 1822 whether ragged or padded; at 8x the lengths ([480, 40, 264, 96]
# against 480) the attention shows: whole 4970 / 4941, flash none 3889 / 7123, interleaved-2
# 3563 / 4249, coarse-2 3193 / 4505, dynamic-2 3194 / 4250, dynamic-4 3194 / 3194.
@pytest.mark.parametrize("parallel,regions", [("none", None), ("coarse", 2), ("dynamic", 2)])
def test_ragged_lengths_take_fewer_cycles_than_padding_to_the_longest(parallel, regions):
    schedule = dict(FLASH, attention_parallel=parallel)
    if regions:
        schedule["attention_regions"] = regions
    ragged = serving(RAGGED, schedule)
    padded = serving([max(RAGGED)] * len(RAGGED), schedule)
    assert kv_tiles_read(ragged) < kv_tiles_read(padded)
    assert ragged.cycles < padded.cycles, (ragged.cycles, padded.cycles)
    if parallel == "dynamic":  # and below attention 'whole', which reads every request padded
        whole = serving([max(RAGGED)] * len(RAGGED), None)
        assert ragged.cycles < whole.cycles, (ragged.cycles, whole.cycles)


# ---- the schedule's keys, and refusals naming the operation and the line

def test_attention_schedule_keys_are_checked():
    module, inputs = STYLES["gpt2"].make()
    for schedule, message in (
            ({"attention": "paged"}, "attention must be 'whole' or 'flash'"),
            ({"attention": "flash", "attention_parallel": "round_robin"}, "attention_parallel must be"),
            ({"attention": "whole", "kv_tile": 16}, "kv_tile applies to attention 'flash'"),
            ({"attention": "whole", "attention_parallel": "dynamic", "attention_regions": 2},
             "attention_parallel, attention_regions apply to attention 'flash'"),
            ({"attention": "flash", "kv_tile": 0}, "kv_tile must be a whole number"),
            ({"attention_parallel": "none", "attention_regions": 2}, "attention_regions applies to attention_parallel"),
            ({"attention": "flash", "attention_parallel": "dynamic", "attention_regions": True},
             "attention_regions must be a whole number")):
        with pytest.raises(stepsim.Error, match=message):
            stepsim.torch.lower(module, inputs, schedule=schedule)
    with pytest.raises(stepsim.Error, match=r"aten.bmm \(schedule attention 'flash'\): attention_regions 3 for an "
                                            r"attention over 2 request\(s\).* at .*gpt2.py:\d+"):
        stepsim.torch.lower(*STYLES["gpt2"].make(batch=2),
                            schedule=dict(FLASH, attention_parallel="dynamic", attention_regions=3))


def test_a_flash_key_alone_means_flash_and_regions_alone_dynamic():
    """(So each key alone is a valid schedule, as a design space checks them.)"""
    module, inputs = STYLES["gpt2"].make(batch=2)
    alone = stepsim.torch.lower(module, inputs, schedule={"kv_tile": 16})
    assert ("Accum", "flash_attn_update") in ops_of(alone.graph)
    regions = stepsim.torch.lower(module, inputs, schedule={"attention_regions": 2})
    assert ("EagerMerge", None) in ops_of(regions.graph)


def test_a_module_without_attention_is_refused_for_flash():
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.Linear(64, 128)

        def forward(self, x):
            return torch.relu(self.up(x))

    with pytest.raises(stepsim.Error, match="attention 'flash'.*has no attention the lowering recognises"):
        stepsim.torch.lower(MLP(), (torch.randn(16, 64),), schedule=FLASH)


def test_a_mask_computed_from_the_inputs_is_refused_naming_its_line():
    class Gated(nn.Module):
        def forward(self, q, k, v, bias):
            scores = q @ k.transpose(-2, -1) * 0.25
            scores = scores + bias.sigmoid()  # a bias from an activation: lengths unknown when lowering
            return torch.softmax(scores, dim=-1) @ v

    x = [torch.randn(2, 16, 16) for _ in range(3)] + [torch.randn(2, 16, 16)]
    with pytest.raises(stepsim.Error, match=r"aten.add \(schedule attention 'flash'\): its mask or bias "
                                            r"\(aten.sigmoid\) is computed from the inputs.* at .*%s:\d+: scores = "
                                            r"scores \+ bias.sigmoid\(\)" % HERE):
        stepsim.torch.lower(Gated(), tuple(x), schedule=FLASH)
    stepsim.torch.lower(Gated(), tuple(x))  # attention 'whole' takes it


def test_a_product_of_streams_that_is_not_an_attention_is_refused_for_flash():
    class TwoProducts(nn.Module):
        def forward(self, q, k, v):
            att = torch.softmax(q @ k.transpose(-2, -1) * 0.25, dim=-1) @ v
            return att @ (v.transpose(-2, -1) @ v)  # a second, plain product of streams

    x = tuple(torch.randn(2, 16, 16) for _ in range(3))
    with pytest.raises(stepsim.Error, match=r"aten.bmm \(schedule attention 'flash'\): a product of streamed values "
                                            r"that is not an attention .* at .*%s:\d+: return att @ " % HERE):
        stepsim.torch.lower(TwoProducts(), x, schedule=FLASH)


def test_a_query_that_attends_no_key_is_refused():
    class Hidden(nn.Module):
        def forward(self, q, k, v):
            scores = (q @ k.transpose(-2, -1)).masked_fill(torch.ones(16, 16, dtype=torch.bool), float("-inf"))
            return torch.softmax(scores, dim=-1) @ v

    x = tuple(torch.randn(2, 16, 16) for _ in range(3))
    with pytest.raises(stepsim.Error, match=r"aten.masked_fill \(schedule attention 'flash'\): the mask hides "
                                            r"every key.* at .*%s:\d+: scores = " % HERE):
        stepsim.torch.lower(Hidden(), x, schedule=FLASH)


def test_whole_stays_the_default():
    module, inputs = STYLES["llama_complex"].make(batch=2)
    a = stepsim.torch.lower(module, inputs)
    b = stepsim.torch.lower(module, inputs, schedule={"attention": "whole"})
    assert a.graph.nodes == b.graph.nodes
    assert ("KvCacheAddrGen", None) not in ops_of(a.graph)
