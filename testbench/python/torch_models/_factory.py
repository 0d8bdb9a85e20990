"""What the corpus's factories share (not part of any style): a seeded init that leaves the global
RNG as it was, non-trivial norm weights, and the left-padded masks of the ragged decode helpers."""
import contextlib

import torch


@contextlib.contextmanager
def seeded(seed):
    """Runs the block under torch.manual_seed(seed), the global RNG restored afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def perturb_norms(module, seed):
    """Norm weights 1 + N(0, 0.1) and biases N(0, 0.1) (constructors give ones and zeros, which
    would hide a norm whose weight or bias is dropped or misplaced)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, m in module.named_modules():
            if "norm" in type(m).__name__.lower() or name.split(".")[-1].startswith(("ln", "norm")) \
                    or name.split(".")[-1].endswith("norm"):
                for pname, p in m.named_parameters(recurse=False):
                    if pname == "weight":
                        p.add_(0.1 * torch.randn(p.shape, generator=g))
                    elif pname == "bias":
                        p.copy_(0.1 * torch.randn(p.shape, generator=g))
    return module


def left_pad_valid(lengths, width):
    """[B, width] bool: row b's tokens are the last lengths[b] of `width` slots (left padding)."""
    lengths = torch.as_tensor(lengths)
    slots = torch.arange(width)
    return slots[None, :] >= (width - lengths)[:, None]


def padded_causal(lengths, width):
    """[B, width, width] bool, query i may attend key j: causal, key j not padding; a padding
    query attends only itself (its row would otherwise be all masked and its softmax NaN; Hugging
    Face unmasks such rows too, to every key; their outputs are never used)."""
    valid = left_pad_valid(lengths, width)
    causal = torch.ones(width, width, dtype=torch.bool).tril()
    eye = torch.eye(width, dtype=torch.bool)
    return (causal[None] & valid[:, None, :]) | eye[None]
