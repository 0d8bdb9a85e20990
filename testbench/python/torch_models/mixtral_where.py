"""Sparse MoE block in the Hugging Face Mixtral manner: `gate` Linear giving router_logits,
softmax in fp32, torch.topk, renormalisation in place, cast back to the input dtype, a one-hot
expert mask permuted to [E, k, tokens], a loop over experts with torch.where on the mask, the
chosen tokens gathered by `hidden_states[None, top_x]`, the expert's SwiGLU (w1/w2/w3) output
scaled by its routing weight and accumulated with index_add_. Returns (hidden, router_logits)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from ._factory import randn, seeded


class MixtralConfig:
    def __init__(self, hidden_size=64, intermediate_size=128, num_local_experts=4,
                 num_experts_per_tok=2, hidden_act="silu"):
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.num_local_experts = num_local_experts
        self.num_experts_per_tok = num_experts_per_tok
        self.hidden_act = hidden_act


ACT2FN = {"silu": nn.SiLU(), "gelu": nn.GELU()}


class MixtralBlockSparseTop2MLP(nn.Module):
    def __init__(self, config: MixtralConfig):
        super().__init__()
        self.ffn_dim = config.intermediate_size
        self.hidden_dim = config.hidden_size

        self.w1 = nn.Linear(self.hidden_dim, self.ffn_dim, bias=False)
        self.w2 = nn.Linear(self.ffn_dim, self.hidden_dim, bias=False)
        self.w3 = nn.Linear(self.hidden_dim, self.ffn_dim, bias=False)

        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, hidden_states):
        current_hidden_states = self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states)
        current_hidden_states = self.w2(current_hidden_states)
        return current_hidden_states


class MixtralSparseMoeBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.hidden_dim = config.hidden_size
        self.ffn_dim = config.intermediate_size
        self.num_experts = config.num_local_experts
        self.top_k = config.num_experts_per_tok

        self.gate = nn.Linear(self.hidden_dim, self.num_experts, bias=False)

        self.experts = nn.ModuleList([MixtralBlockSparseTop2MLP(config) for _ in range(self.num_experts)])

    def forward(self, hidden_states: torch.Tensor):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        # one score per expert for every token: (batch * sequence_length, num_experts)
        router_logits = self.gate(hidden_states)

        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        # weights were computed in fp32; back to the activations' dtype
        routing_weights = routing_weights.to(hidden_states.dtype)

        final_hidden_states = torch.zeros(
            (batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype, device=hidden_states.device
        )

        # expert_mask[e, j, t] == 1 when token t chose expert e as its j-th choice
        expert_mask = torch.nn.functional.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)

        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])

            # the tokens routed to this expert, and the slot (0..k-1) that routed each
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]

            # scatter-add back to the token rows (a token gets k contributions)
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


def router_of(moe):
    """The router Linear and k."""
    return moe.gate, moe.top_k


def make(batch=1, seq=16, d_model=64, ffn=128, n_experts=4, top_k=2, seed=0):
    """(MixtralSparseMoeBlock in eval mode, (hidden_states [batch, seq, d_model],))."""
    config = MixtralConfig(hidden_size=d_model, intermediate_size=ffn, num_local_experts=n_experts,
                           num_experts_per_tok=top_k)
    with seeded(seed):
        moe = MixtralSparseMoeBlock(config)
    return moe.eval(), (randn(batch, seq, d_model, seed=seed + 2),)
