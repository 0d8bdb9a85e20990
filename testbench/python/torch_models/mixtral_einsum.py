"""Mixture of experts with the experts' weights stacked in 3-d Parameters [E, d, ffn] and the
expert MLPs computed by einsum on the weights gathered per token (`w1[expert_indices]`), as the
gpt-fast Mixtral port does: router Linear, softmax in fp32, top-k, renormalisation, SiLU GLU
experts, the k outputs summed with their weights by einsum. No loop, no data-dependent shapes."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch import Tensor
from torch.nn import functional as F

from ._factory import randn, seeded


@dataclass
class ModelArgs:
    dim: int = 64
    intermediate_size: int = 128
    num_experts: int = 4
    num_activated_experts: int = 2


class ConditionalFeedForward(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(config.num_experts, config.dim, config.intermediate_size))
        self.w3 = nn.Parameter(torch.empty(config.num_experts, config.dim, config.intermediate_size))
        self.w2 = nn.Parameter(torch.empty(config.num_experts, config.intermediate_size, config.dim))
        self.reset_parameters()

    def reset_parameters(self):
        # the bound nn.Linear would use, per expert: 1 / sqrt(fan_in)
        for w in (self.w1, self.w3, self.w2):
            bound = 1.0 / math.sqrt(w.shape[1])
            nn.init.uniform_(w, -bound, bound)

    def forward(self, x: Tensor, expert_indices: Tensor) -> Tensor:
        w1_weights = self.w1[expert_indices]  # [T, K, D, F]
        w3_weights = self.w3[expert_indices]  # [T, K, D, F]
        w2_weights = self.w2[expert_indices]  # [T, K, F, D]
        x1 = F.silu(torch.einsum("td,tkdf->tkf", x, w1_weights))
        x3 = torch.einsum("td,tkdf->tkf", x, w3_weights)
        expert_outs = torch.einsum("tkf,tkfd->tkd", (x1 * x3), w2_weights)
        return expert_outs


class MOEFeedForward(nn.Module):
    def __init__(self, config) -> None:
        super().__init__()
        self.gate = nn.Linear(config.dim, config.num_experts, bias=False)
        self.cond_ffn = ConditionalFeedForward(config)
        self.dim = config.dim
        self.num_activated_experts = config.num_activated_experts

    def forward(self, x: Tensor) -> Tensor:
        orig_shape = x.shape
        x = x.view(-1, self.dim)
        # T = num_tokens, E = num_experts, D = hidden dim, K = activated experts
        scores = self.gate(x)  # [T, E]
        expert_weights = F.softmax(scores, dim=-1, dtype=torch.float)
        expert_weights, expert_indices = torch.topk(expert_weights, self.num_activated_experts, dim=-1)  # [T, K]
        expert_weights /= expert_weights.sum(dim=-1, keepdim=True)  # [T, K]
        expert_weights = expert_weights.to(x.dtype)
        expert_outs = self.cond_ffn(x, expert_indices)
        return torch.einsum("tkd,tk->td", expert_outs, expert_weights).view(orig_shape)


def router_of(moe):
    """The router Linear (its outputs are the scores top-k ranks) and k."""
    return moe.gate, moe.num_activated_experts


def make(batch=1, seq=16, d_model=64, ffn=128, n_experts=4, top_k=2, seed=0):
    """(MOEFeedForward in eval mode, (x [batch, seq, d_model],))."""
    config = ModelArgs(dim=d_model, intermediate_size=ffn, num_experts=n_experts,
                       num_activated_experts=top_k)
    with seeded(seed):
        moe = MOEFeedForward(config)
    return moe.eval(), (randn(batch, seq, d_model, seed=seed + 2),)
