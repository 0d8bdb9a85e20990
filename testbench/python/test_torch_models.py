"""The corpus of plain-PyTorch LLM blocks (torch_models/): every style and construct runs in eager
PyTorch in fp32 and bf16, deterministically, bf16 within reference.TOLERANCE of fp32 (MoE styles
on their decided tokens, routing near ties reported), decode steps over ragged caches agree with
each row run alone. The lowering itself is not called here (torch_models/try_lower.py does)."""
import pytest
import torch
import torch.nn.functional as F

import torch_models as tm
from torch_models import constructs, reference as R
from torch_models.sdpa_torch2 import reference_sdpa, sdpa_shim

STYLES = list(tm.STYLES)

# Prompt lengths per batch row of the decode tests. Ragged rows (different lengths) are
# left-padded to the longest: Meta's start_pos and gpt-fast's input_pos are shared by the batch,
# so those styles hide each row's padding slots with the mask they already take (an additive
# -inf mask, a bool mask); the Qwen3 (Hugging Face) style also gives each row its own
# position_ids, so its rows decode at their own positions. See each style's decode_steps.
LENGTHS = [[12], [12, 12], [12, 5], [3, 12, 7]]


@pytest.fixture(autouse=True)
def sdpa():
    """sdpa_torch2 calls F.scaled_dot_product_attention, which torch 1.13 lacks."""
    with sdpa_shim():
        yield


def same_bits(a, b):
    """Outputs equal bit for bit (NaN payloads and the sign of zero included)."""
    ta, tb = R.tensors(a), R.tensors(b)
    return len(ta) == len(tb) and all(x.dtype == y.dtype and x.shape == y.shape and
                                      x.numpy().tobytes() == y.numpy().tobytes() for x, y in zip(ta, tb))


def first(out):
    return R.tensors(out)[0]


def direct(module, inputs):
    """The module called as it is (a copy: caches change), no runner in between."""
    import copy
    with torch.no_grad():
        return copy.deepcopy(module)(*inputs)


def check_bf16(name, module, inputs=None, steps=None):
    """bf16 against fp32: within the tolerance (MoE styles: on the decided tokens). Returns the
    errors of the first output (and the MoE report)."""
    want, got = R.run_fp32(module, inputs, steps), R.run_bf16(module, inputs, steps)
    if steps is not None:
        want, got = want[-1], got[-1]
    e = R.errors(first(got), first(want))
    report = None
    if name in tm.MOE:
        report = R.moe_compare(module, tm.STYLES[name].router_of, inputs, steps)
        assert report["n_flipped"] == int((report["flipped"] & report["tied_measured"]).sum())
        assert report["decided_measured_rel_max"] <= R.TOLERANCE["rel_max"], report
        assert e["mean_rms"] <= R.TOLERANCE["mean_rms"], e
        for t, g in zip(R.tensors(got)[1:], R.tensors(want)[1:]):  # router logits
            ok, et = R.within_tolerance(t, g)
            assert ok, et
    else:
        for t, g in zip(R.tensors(got), R.tensors(want)):
            ok, et = R.within_tolerance(t, g)
            assert ok, et
    return e, report


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("name", STYLES)
def test_prefill_fp32_bf16(name, batch):
    module, inputs = tm.STYLES[name].make(batch=batch)
    assert not module.training
    want = R.run_fp32(module, inputs)
    assert same_bits(want, R.run_fp32(module, inputs)), "fp32 not deterministic"
    for a, b in zip(R.tensors(want), R.tensors(direct(module, inputs))):
        assert torch.equal(a, b), "the fp32 runner changed the result"
    got = R.run_bf16(module, inputs)
    assert same_bits(got, R.run_bf16(module, inputs)), "bf16 not deterministic"
    assert first(want).shape == inputs[0].shape
    assert all(torch.isfinite(t).all() for t in R.tensors(want) + R.tensors(got))
    e, report = check_bf16(name, module, inputs)
    print(name, batch, e, report and {k: v for k, v in report.items() if k.startswith("n_")})


@pytest.mark.parametrize("name", STYLES)
def test_batch_rows_independent(name):
    """Row 0 of batch 2 is the batch-1 example (same seeded inputs) and gives its output."""
    m1, x1 = tm.STYLES[name].make(batch=1)
    m2, x2 = tm.STYLES[name].make(batch=2)
    assert torch.equal(x1[0][0], x2[0][0])
    torch.testing.assert_close(first(R.run_fp32(m2, x2))[:1], first(R.run_fp32(m1, x1)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", STYLES)
def test_make_deterministic(name):
    """make() twice: the same parameters, buffers and inputs bit for bit; the global RNG as it was."""
    state = torch.get_rng_state()
    m1, x1 = tm.STYLES[name].make(batch=2)
    m2, x2 = tm.STYLES[name].make(batch=2)
    assert torch.equal(state, torch.get_rng_state())
    s1, s2 = m1.state_dict(), m2.state_dict()
    assert list(s1) == list(s2) and all(torch.equal(s1[k], s2[k]) for k in s1)
    assert all(not isinstance(a, torch.Tensor) and a == b or torch.equal(a, b) for a, b in zip(x1, x2))
    other, _ = tm.STYLES[name].make(batch=2, seed=1)
    assert any(not torch.equal(s1[k], v) for k, v in other.state_dict().items() if v.is_floating_point())


@pytest.mark.parametrize("lengths", LENGTHS, ids=lambda lengths: "x".join(map(str, lengths)))
@pytest.mark.parametrize("name", tm.CACHED)
def test_decode_ragged(name, lengths):
    mod = tm.STYLES[name]
    module, _ = mod.make(batch=len(lengths))
    steps = mod.decode_steps(module, lengths)
    outs = R.run_fp32(module, steps=steps)
    assert [same_bits(a, b) for a, b in zip(outs, R.run_fp32(module, steps=steps))] == [True, True]
    assert same_bits(R.run_bf16(module, steps=steps)[-1], R.run_bf16(module, steps=steps)[-1])
    decoded = first(outs[-1])
    assert decoded.shape == (len(lengths), 1, steps[0][0].shape[-1])
    # each row decodes as if it were alone and unpadded: the cache and the mask (and positions)
    # carried the row's own prompt
    torch.testing.assert_close(decoded, mod.ragged_reference(module, lengths), rtol=1e-4, atol=1e-4)
    e, report = check_bf16(name, module, steps=steps)
    print(name, lengths, e, report and {k: v for k, v in report.items() if k.startswith("n_")})


@pytest.mark.parametrize("name", tm.CACHED)
def test_decode_reads_the_cache(name):
    """The decode output depends on the prefilled cache: another prompt gives another output."""
    mod = tm.STYLES[name]
    module, _ = mod.make(batch=1)
    a = R.run_fp32(module, steps=mod.decode_steps(module, [8], seed=3))[-1]
    steps = mod.decode_steps(module, [8], seed=4)
    steps[1] = mod.decode_steps(module, [8], seed=3)[1]  # same decode token, other prompt
    b = R.run_fp32(module, steps=steps)[-1]
    assert not torch.allclose(first(a), first(b), atol=1e-3)


@pytest.mark.parametrize("name", tm.MOE)
def test_moe_routing_metric(name):
    """The routing-aware comparison on each MoE style: every token classified, flips only among
    the near ties of the measured score error, decided tokens within the tolerance."""
    mod = tm.STYLES[name]
    module, inputs = mod.make(batch=2)
    r = R.moe_compare(module, mod.router_of, inputs)
    assert r["tokens"] == 32 and r["per_token"].shape == (32,)
    assert r["n_tied"] + int((~r["tied"]).sum()) == 32
    assert not (r["flipped"] & ~r["tied_measured"]).any()
    assert r["decided_measured_rel_max"] <= R.TOLERANCE["rel_max"]
    assert r["n_tied_scores_only"] <= r["n_tied"] < 32
    if name != "qwen3_moe":  # the router sees the model's input: the rounding bound is complete
        assert r["n_flipped_decided"] == 0 and r["decided_rel_max"] <= R.TOLERANCE["rel_max"]
    print(name, {k: v for k, v in r.items() if not isinstance(v, torch.Tensor)})


@pytest.mark.parametrize("name", tm.MOE)
def test_moe_forced_ties(name):
    """A router whose rows are all one vector plus 1e-6 noise scores the experts within one bf16
    spacing of each other: every token is a near tie, by either rule. With the factory's router
    no score is that close."""
    mod = tm.STYLES[name]
    module, inputs = mod.make(batch=1)
    router, k = mod.router_of(module)
    assert R.moe_compare(module, mod.router_of, inputs)["n_tied_scores_only"] == 0
    with torch.no_grad():
        w = router.weight
        g = torch.Generator().manual_seed(0)
        w.copy_(w[:1].expand_as(w) + 1e-6 * torch.randn(w.shape, generator=g))
    r = R.moe_compare(module, mod.router_of, inputs)
    assert r["n_tied"] == r["n_tied_scores_only"] == r["tokens"] == 16
    assert r["n_flipped_decided"] == 0


def test_bf16_spacing_and_near_ties():
    assert float(R.bf16_spacing(1.0)) == 2 ** -7
    assert float(R.bf16_spacing(0.75)) == 2 ** -8
    assert float(R.bf16_spacing(-3.0)) == 2 ** -6
    scores = torch.tensor([[1.0, 0.5, 0.5 - 2 ** -10, -1.0],   # 2nd and 3rd closer than 2^-8
                           [1.0, 0.5, 0.25, 0.0]])             # decided
    assert R.near_ties(scores, 2).tolist() == [True, False]
    assert R.near_ties(scores, 4).tolist() == [False, False]  # k = E: nothing to tie with
    # the rounding of a Linear's input and weight widens the margin: sum |w x| (2u + u^2) + ...
    x, w = torch.tensor([[1.0, 1.0]]), torch.tensor([[1.0, 0.0], [0.0, 1.01], [0.5, 0.0]])
    margin = R.score_rounding(x, w)
    assert margin.shape == (1, 3)
    assert abs(float(margin[0, 0]) - (2 * 2 ** -8 + 2 ** -16 + 2 * 2 ** -24 + 2 ** -8)) < 1e-12
    s = x @ w.t()  # 1.0 and 1.01: a gap of 0.01 > one spacing (2^-7 at 1.0), < the margins' sum
    assert R.near_ties(s, 1).tolist() == [False]
    assert R.near_ties(s, 1, margin).tolist() == [True]


def test_qwen3_moe_block_as_root():
    from torch_models import qwen3_moe
    for batch in (1, 2):
        moe, inputs = qwen3_moe.make_moe(batch=batch)
        out, logits = R.run_fp32(moe, inputs)
        assert out.shape == inputs[0].shape and logits.shape == (batch * 16, 4)
        r = R.moe_compare(moe, qwen3_moe.router_of, inputs)
        assert r["n_flipped_decided"] == 0 and r["decided_rel_max"] <= R.TOLERANCE["rel_max"]
        assert r["tokens"] == batch * 16


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("name", list(constructs.CONSTRUCTS))
def test_construct(name, batch):
    doc = constructs.describe(name)
    assert doc and "\n" not in doc
    module, inputs = constructs.CONSTRUCTS[name](batch=batch)
    want = R.run_fp32(module, inputs)
    assert same_bits(want, R.run_fp32(module, inputs))
    assert torch.equal(first(want), first(direct(module, inputs))), "the fp32 runner changed the result"
    got = R.run_bf16(module, inputs)
    assert same_bits(got, R.run_bf16(module, inputs))
    assert torch.isfinite(first(want)).all() and torch.isfinite(first(got)).all()
    ok, e = R.within_tolerance(first(got), first(want))
    assert ok, e


def test_construct_registry():
    """Every construct the corpus promises has an entry."""
    names = set(constructs.CONSTRUCTS)
    for n in ["size_unpack_assert", "shape_star", "attention_4d_b1", "attention_4d_b2", "rope_complex",
              "rope_interleaved", "rope_rotate_half", "gqa_repeat_interleave", "gqa_expand_reshape",
              "mask_masked_fill_tril", "mask_where", "mask_bool_attn_mask", "mask_add_inplace",
              "mask_additive_float", "split_fused", "chunk_fused", "unbind_fused", "cat", "slicing",
              "layer_norm_bias", "f_layer_norm", "gelu_exact", "var", "tanh", "neg", "sqrt", "pow3",
              "pow2", "dtype_roundtrip", "embedding", "int_start_pos", "int64_positions",
              "complex_freqs_cis_arg", "prime_seq_37"]:
        assert n in names, n
    assert constructs.CONSTRUCTS["prime_seq_37"]()[1][0].shape[-2] == 37
    assert constructs.CONSTRUCTS["attention_4d_b2"](batch=1)[1][0].shape[0] == 2


def test_rope_forms_agree():
    """The three RoPE forms rotate the same pairs by the same angles once the layouts match:
    complex and interleaved act on adjacent pairs; rotate-half on (i, i + hd/2)."""
    c, (x,) = constructs.CONSTRUCTS["rope_complex"]()
    i, _ = constructs.CONSTRUCTS["rope_interleaved"]()
    h, _ = constructs.CONSTRUCTS["rope_rotate_half"]()
    with torch.no_grad():
        a, b = c(x), i(x)
        torch.testing.assert_close(a, b)
        hd = x.shape[-1]
        perm = torch.cat([torch.arange(0, hd, 2), torch.arange(1, hd, 2)])  # pairs -> halves
        rh = h(x[..., perm].transpose(1, 2)).transpose(1, 2)
        torch.testing.assert_close(rh, a[..., perm], rtol=1e-5, atol=1e-5)


def test_gqa_forms_agree():
    m1, qkv = constructs.CONSTRUCTS["gqa_repeat_interleave"](batch=2)
    m2, _ = constructs.CONSTRUCTS["gqa_expand_reshape"](batch=2)
    with torch.no_grad():
        torch.testing.assert_close(m1(*qkv), m2(*qkv))


def test_mask_forms_agree():
    """All five causal mask forms give the same attention."""
    outs = []
    for n in ["mask_masked_fill_tril", "mask_where", "mask_bool_attn_mask", "mask_add_inplace",
              "mask_additive_float"]:
        m, inputs = constructs.CONSTRUCTS[n](batch=2)
        with torch.no_grad():
            outs.append(m(*inputs))
    for o in outs[1:]:
        torch.testing.assert_close(o, outs[0])


def test_sdpa_shim():
    """The shim installs reference_sdpa only where torch lacks the function, and takes it away
    again; reference_sdpa's causal, bool and float mask forms agree with a hand attention."""
    had = hasattr(F, "scaled_dot_product_attention")  # the autouse fixture's shim is in place
    assert had
    native = F.scaled_dot_product_attention is not reference_sdpa
    with sdpa_shim() as fn:  # nested: already there, nothing installed, nothing removed
        assert fn is F.scaled_dot_product_attention
    assert hasattr(F, "scaled_dot_product_attention")
    if not native:
        from torch_models.sdpa_torch2 import remove_sdpa, install_sdpa
        remove_sdpa()
        assert not hasattr(F, "scaled_dot_product_attention")
        with sdpa_shim():
            assert F.scaled_dot_product_attention is reference_sdpa
        assert not hasattr(F, "scaled_dot_product_attention")
        assert install_sdpa()  # back for the fixture to remove
    q, k, v = (torch.randn(2, 4, 5, 8, generator=torch.Generator().manual_seed(s)) for s in range(3))
    keep = torch.ones(5, 5, dtype=torch.bool).tril()
    hand = torch.softmax((q @ k.transpose(-2, -1) / 8 ** 0.5).masked_fill(~keep, float("-inf")), -1) @ v
    torch.testing.assert_close(reference_sdpa(q, k, v, is_causal=True), hand)
    torch.testing.assert_close(reference_sdpa(q, k, v, attn_mask=keep), hand)
    torch.testing.assert_close(
        reference_sdpa(q, k, v, attn_mask=torch.zeros(5, 5).masked_fill(~keep, float("-inf"))), hand)
