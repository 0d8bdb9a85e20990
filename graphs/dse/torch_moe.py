"""The factory of graphs/dse/torch_moe.yaml: a sparse MoE block written as Hugging Face's Mixtral
writes it (a `gate` Linear, softmax in fp32, top-k, the chosen weights renormalised, a loop over
the experts with torch.where on a one-hot mask, index_add_ of each expert's SwiGLU output scaled by
its weight), and example tokens. `stepsim dse` calls mixtral(**the point's factory parameters) for
every trial and lowers what it returns with stepsim.torch.lower(module, inputs, schedule=the
point's schedule keys: moe_tiling, moe_tile_n, moe_regions, ...) (docs/dse.md)."""
import torch
import torch.nn.functional as F
from torch import nn


class Expert(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.w1 = nn.Linear(hidden, ffn, bias=False)
        self.w2 = nn.Linear(ffn, hidden, bias=False)
        self.w3 = nn.Linear(hidden, ffn, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoeBlock(nn.Module):
    def __init__(self, hidden, ffn, experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.experts = nn.ModuleList([Expert(hidden, ffn) for _ in range(experts)])

    def forward(self, hidden_states):
        batch, seq, hidden = hidden_states.shape
        x = hidden_states.view(-1, hidden)
        router_logits = self.gate(x)
        weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        weights, selected = torch.topk(weights, self.top_k, dim=-1)
        weights /= weights.sum(dim=-1, keepdim=True)
        weights = weights.to(x.dtype)
        out = torch.zeros_like(x)
        mask = F.one_hot(selected, num_classes=len(self.experts)).permute(2, 1, 0)
        for e, expert in enumerate(self.experts):
            slot, token = torch.where(mask[e])
            y = expert(x[token]) * weights[token, slot, None]
            out.index_add_(0, token, y.to(x.dtype))
        return out.view(batch, seq, hidden)


def mixtral(batch=4, seq=16, hidden=128, ffn=256, experts=8, top_k=2):
    """(module, example inputs): [batch x seq x hidden] tokens routed to top_k of `experts`."""
    return SparseMoeBlock(hidden, ffn, experts, top_k), (torch.randn(batch, seq, hidden),)
