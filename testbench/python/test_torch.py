"""The PyTorch front door: plain modules traced at the ATen level, lowered, run in functional mode and
compared with the same module evaluated in bf16 by PyTorch, within the project's layer tolerance
(docs/validation.md: every element within 4 % of the reference's RMS, the mean error within 1 %)."""
import math

import numpy as np
import pytest
import stepsim
import stepsim.torch
import torch
import torch.nn.functional as F

torch.manual_seed(0)


def bf16_reference(module, *inputs):
    with torch.no_grad():
        out = module.to(torch.bfloat16)(*(x.to(torch.bfloat16) for x in inputs))
    outs = out if isinstance(out, tuple) else (out,)
    return [o.float().numpy() for o in outs]


def within_layer_tolerance(got, want):
    rms = float(np.sqrt(np.mean(np.square(want.astype(np.float64)))))
    err = np.abs(got.astype(np.float64) - want)
    return err.max() <= 0.04 * rms and err.mean() <= 0.01 * rms, (err.max() / rms, err.mean() / rms)


def check(module, *inputs, schedule=None):
    module = module.eval()
    lowered = stepsim.torch.lower(module, inputs, schedule=schedule)
    res = lowered.run(mode="functional")
    want = bf16_reference(module, *inputs)
    assert len(res.outputs) == len(want)
    for got, ref in zip(res.outputs, want):
        assert got.shape == ref.shape
        ok, errors = within_layer_tolerance(got, ref)
        assert ok, "max error %.3g, mean error %.3g of the RMS" % errors
    return lowered, res


class Fn(torch.nn.Module):
    """forward(x, y) = f(self, x, y), with parameters p[...] (torch.fx traces fixed arguments)."""

    def __init__(self, f, params=None):
        super().__init__()
        self.f = f
        self.p = torch.nn.ParameterDict({k: torch.nn.Parameter(v) for k, v in (params or {}).items()})

    def forward(self, x, y):
        return self.f(self, x, y)


X = torch.randn(32, 64)
Y = torch.randn(32, 64)

ELEMENTWISE = {
    "add": lambda m, x, y: x + y,
    "sub": lambda m, x, y: x - y,
    "mul": lambda m, x, y: x * y,
    "div": lambda m, x, y: x / (y * y + 1.0),
    "scalar": lambda m, x, y: (x * 0.5 - 2.0) / 3.0 + 1.0,
    "row_vector": lambda m, x, y: x * m.p["v"] + m.p["v"],
    "silu": lambda m, x, y: F.silu(x),
    "gelu_tanh": lambda m, x, y: F.gelu(x, approximate="tanh"),
    "exp": lambda m, x, y: torch.exp(x * 0.25),
    "sigmoid": lambda m, x, y: torch.sigmoid(x),
    "softmax": lambda m, x, y: torch.softmax(x, dim=-1),
    "rsqrt": lambda m, x, y: torch.rsqrt(x * x + 1.0),
    "mean_pow": lambda m, x, y: x - x.pow(2).mean(-1, keepdim=True),
    "residual": lambda m, x, y: x + F.silu(x),
    "view": lambda m, x, y: x.view(2, 16, 64).reshape(32, 64) + y,
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_every_supported_elementwise_op_matches_pytorch_in_bf16(name):
    check(Fn(ELEMENTWISE[name], {"v": torch.rand(64)}), X, Y)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("tile_cols", [None, 32, 96])
def test_linear_matches_pytorch_with_and_without_bias(bias, tile_cols):
    check(torch.nn.Linear(64, 96, bias=bias), X, schedule={"tile_cols": tile_cols})


def test_matmul_by_a_parameter_and_3d_inputs():
    w = torch.randn(64, 48) / 8
    check(Fn(lambda m, x, y: torch.matmul(x, m.p["w"]) @ m.p["w2"] + y, {"w": w, "w2": torch.randn(48, 16)}),
          torch.randn(2, 16, 64), torch.randn(2, 16, 16))


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class NormSwiGLU(torch.nn.Module):
    def __init__(self, d=64, f=128):
        super().__init__()
        self.norm = RMSNorm(d)
        self.w1 = torch.nn.Linear(d, f, bias=False)
        self.w3 = torch.nn.Linear(d, f, bias=False)
        self.w2 = torch.nn.Linear(f, d, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def test_rmsnorm_swiglu_residual_block_matches_and_its_traffic_agrees():
    lowered, res = check(NormSwiGLU(), X, schedule={"tile_rows": 8, "tile_cols": 64})
    sym = res.result.symbolic.set_index("metric")
    read, write = res.result.tile_traffic()
    assert sym.loc["read_bytes", "predicted"] == read
    assert sym.loc["write_bytes", "predicted"] == write == 32 * 64 * 2
    assert sym.loc["flops", "predicted"] == sym.loc["flops", "measured"]
    assert res.cycles > 0 and lowered.graph.tensors[0]["name"] == "input_x"  # named after the argument
    assert lowered.graph.name == "NormSwiGLU"


class DecoderBlock(torch.nn.Module):
    """A Llama-style decoder block in plain PyTorch: RMSNorm, Q/K/V projections, causal attention
    over a fixed sequence, output projection, residual, RMSNorm, SwiGLU MLP, residual."""

    def __init__(self, seq=32, d=64, heads=4, f=128):
        super().__init__()
        self.S, self.H, self.hd = seq, heads, d // heads
        self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d, bias=False) for _ in range(4))
        self.w1, self.w3 = torch.nn.Linear(d, f, bias=False), torch.nn.Linear(d, f, bias=False)
        self.w2 = torch.nn.Linear(f, d, bias=False)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, x):
        h = self.norm1(x)
        q = self.q(h).view(self.S, self.H, self.hd).transpose(0, 1)
        k = self.k(h).view(self.S, self.H, self.hd).transpose(0, 1)
        v = self.v(h).view(self.S, self.H, self.hd).transpose(0, 1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.hd) + self.mask
        a = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(self.S, self.H * self.hd)
        x = x + self.o(a)
        h = self.norm2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def test_a_llama_style_decoder_block_lowers_runs_and_matches_pytorch():
    lowered, res = check(DecoderBlock(), torch.randn(32, 64), schedule={"tile_rows": 8})
    sym = res.result.symbolic.set_index("metric")
    assert (sym.loc["read_bytes", "predicted"], sym.loc["write_bytes", "predicted"]) == res.result.tile_traffic()
    assert sym.loc["flops", "predicted"] == sym.loc["flops", "measured"]
    ops = {n["op"] for n in lowered.graph.nodes}
    assert {"Bufferize", "Streamify", "Accum", "Repeat", "Map"} <= ops  # K and V kept whole per head


class BmmAttention(torch.nn.Module):
    """Multi-head attention written with torch.bmm and F.softmax (no mask), Linear with bias."""

    def __init__(self, seq=16, d=32, heads=2):
        super().__init__()
        self.S, self.H, self.hd = seq, heads, d // heads
        self.q, self.k, self.v = (torch.nn.Linear(d, d) for _ in range(3))

    def forward(self, x):
        q = self.q(x).reshape(self.S, self.H, self.hd).transpose(0, 1)
        k = self.k(x).reshape(self.S, self.H, self.hd).transpose(0, 1)
        v = self.v(x).reshape(self.S, self.H, self.hd).transpose(0, 1)
        p = F.softmax(torch.bmm(q, k.transpose(1, 2)) * (1.0 / math.sqrt(self.hd)), dim=-1)
        return torch.bmm(p, v).transpose(0, 1).reshape(self.S, self.H * self.hd)


def test_bmm_attention_with_biases_matches():
    check(BmmAttention(), torch.randn(16, 32), schedule={"tile_rows": 4})


class Expert(torch.nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.w1 = torch.nn.Linear(d, f, bias=False)
        self.w3 = torch.nn.Linear(d, f, bias=False)
        self.w2 = torch.nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(torch.nn.Module):
    """Top-k gating written densely in PyTorch (every expert on every token, weighted by the
    renormalized top-k probabilities); the lowering routes each token to its k experts only."""

    def __init__(self, d=32, f=64, n=4, k=2):
        super().__init__()
        self.top_k = k
        self.gate = torch.nn.Linear(d, n, bias=False)
        self.experts = torch.nn.ModuleList(Expert(d, f) for _ in range(n))

    def forward(self, x):
        probs = torch.softmax(self.gate(x), dim=-1)
        w, idx = torch.topk(probs, self.top_k, dim=-1)
        w = w / w.sum(-1, keepdim=True)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            out = out + (w * (idx == e)).sum(-1, keepdim=True) * expert(x)
        return out


class MoEBlock(torch.nn.Module):
    def __init__(self, n=4, k=2):
        super().__init__()
        self.norm = RMSNorm(32)
        self.moe = MoE(n=n, k=k)

    def forward(self, x):
        return x + self.moe(self.norm(x))


def test_a_moe_block_routes_by_its_gate_in_functional_mode_and_matches():
    lowered, res = check(MoEBlock(), torch.randn(16, 32), schedule={"tile_rows": 8})
    ops = [n["op"] for n in lowered.graph.nodes]
    assert ops.count("TopK") == 1 and ops.count("Partition") == 2 and ops.count("Reassemble") == 1
    # Sparse: each expert's matmuls run on its routed tokens only, so the FLOPs are those of
    # k experts per token, not of every expert on every token.
    dense = 16 * 4 * (3 * 2 * 32 * 64)
    assert res.result.symbolic.set_index("metric").loc["flops", "measured"] < 0.75 * dense


def test_a_moe_block_takes_its_routing_from_a_trace_in_timing_mode():
    trace = "shared:traces/moe/mixtral8x7b_b64_iter008_layer010.csv"
    lowered = stepsim.torch.lower(MoEBlock(n=8, k=2).eval(), (torch.randn(64, 32),),
                                  schedule={"tile_rows": 8, "routing_trace": trace})
    assert lowered.run(mode="timing").cycles > 0
    assert not any(n["op"] == "TopK" for n in lowered.graph.nodes)
    with pytest.raises(stepsim.Error, match="routes its MoE tokens by a trace"):
        lowered.run(mode="functional")


def test_an_unsupported_operation_names_the_op_and_its_source_line():
    class Bad(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(x, -1)  # no lowering for a running sum

    with pytest.raises(stepsim.Error, match=r"aten.cumsum is not supported: .*docs/python.md at .*test_torch.py:\d+: "
                                            r"return torch.cumsum"):
        stepsim.torch.lower(Bad(), (X,))
    with pytest.raises(stepsim.Error, match="schedule: unknown key"):
        stepsim.torch.lower(torch.nn.SiLU(), (X,), schedule={"tile": 4})
    with pytest.raises(stepsim.Error, match="tile_rows 5 does not divide the 32 rows"):
        stepsim.torch.lower(torch.nn.SiLU(), (X,), schedule={"tile_rows": 5}).run()
