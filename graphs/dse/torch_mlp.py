"""The factory of graphs/dse/torch_mlp.yaml: a feed-forward block as PyTorch writes it (two
Linears with SiLU between), and example inputs of the point's shape. `stepsim dse` calls
mlp(**the point's factory parameters) for every trial and lowers what it returns with
stepsim.torch.lower(module, inputs, schedule=the point's schedule keys) (docs/dse.md)."""
import torch
import torch.nn.functional as F


class MLP(torch.nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.up = torch.nn.Linear(hidden, ffn)
        self.down = torch.nn.Linear(ffn, hidden)

    def forward(self, x):
        return self.down(F.silu(self.up(x)))


def mlp(batch=4, seq=64, hidden=256, ffn=1024):
    """(module, example inputs): x is [batch x seq x hidden]; the lowering tiles its batch * seq rows."""
    return MLP(hidden, ffn), (torch.randn(batch, seq, hidden),)
