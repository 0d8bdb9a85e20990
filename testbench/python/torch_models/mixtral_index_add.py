"""Top-k MoE written as a plain loop over the experts that received tokens (torch.unique of the
chosen indices), each expert's tokens found by nonzero, gathered with index_select and scattered
back with index_add_. The router ranks raw logits and the softmax is taken over the k chosen
logits only (the Mistral reference's order; the same weights as softmax-then-renormalise).
Experts are SwiGLU with one fused gate/up Linear split by chunk. Names: `router`,
`experts_list`, `k`."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from ._factory import randn, seeded


class Expert(nn.Module):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate_up = nn.Linear(d_model, 2 * d_hidden, bias=False)
        self.down = nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x):
        g, u = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(g) * u)


class TopKMoE(nn.Module):
    def __init__(self, d_model, d_hidden, n_experts, k):
        super().__init__()
        assert k <= n_experts
        self.router = nn.Linear(d_model, n_experts, bias=False)
        self.experts_list = nn.ModuleList([Expert(d_model, d_hidden) for _ in range(n_experts)])
        self.k = k

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])  # (N, d): every token of every row
        logits = self.router(x)
        top_logits, indices = logits.topk(self.k, dim=-1)  # (N, k)
        gates = torch.softmax(top_logits.float(), dim=-1).to(x.dtype)

        out = torch.zeros_like(x)
        for e in torch.unique(indices).tolist():
            sel = (indices == e).nonzero(as_tuple=False)  # (n, 2): token, slot
            tok, slot = sel[:, 0], sel[:, 1]
            y = self.experts_list[e](x.index_select(0, tok))
            out.index_add_(0, tok, y * gates[tok, slot].unsqueeze(-1))
        return out.reshape(shape)


def router_of(moe):
    """The router Linear and k."""
    return moe.router, moe.k


def make(batch=1, seq=16, d_model=64, ffn=128, n_experts=4, top_k=2, seed=0):
    """(TopKMoE in eval mode, (x [batch, seq, d_model],))."""
    with seeded(seed):
        moe = TopKMoE(d_model, ffn, n_experts, top_k)
    return moe.eval(), (randn(batch, seq, d_model, seed=seed + 2),)
