#!/usr/bin/python3
"""Fuzzes the PyTorch front door with random modules built from what LLM code writes.

Each case is a module that applies a random chain of operations (Linears, norms, activations,
views into heads, attention products, masks, RoPE forms, residuals, casts, splits, ...) to a
random [B, T, D] input, at random sizes. The case passes when stepsim.torch.lower refuses it with
a stepsim.Error or TypeError, or lowers it and its functional run matches PyTorch in fp32 within
a loose bound (every element within 6 % of the output's largest value). Findings: a wrong result
(silent), any other exception (crash), a case over --timeout seconds (hang).

    PYTHONPATH=build/python /usr/bin/python3 scripts/fuzz/torch_front_door.py --cases 200 --seed 1
    ... --minutes 60 --seed 2          (a campaign; the counts are the last lines)
"""
import argparse
import math
import random
import signal
import sys
import time
import traceback

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import stepsim
import stepsim.torch


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


# ---- the operations a case chains: each maps x [B, T, D] to a value of the same shape

def op_linear(m, rng, d):
    lin = nn.Linear(d, d, bias=rng.random() < 0.5)
    m.mods.append(lin)
    return lambda x: lin(x)


def op_mlp(m, rng, d):
    f = rng.choice([d, 2 * d])
    a, b = nn.Linear(d, f, bias=False), nn.Linear(f, d, bias=False)
    g = nn.Linear(d, f, bias=False) if rng.random() < 0.5 else None
    m.mods.extend([a, b] + ([g] if g else []))
    act = rng.choice([F.silu, F.gelu, lambda t: F.gelu(t, approximate="tanh"), torch.tanh, torch.sigmoid])
    return (lambda x: b(act(a(x)) * g(x))) if g else (lambda x: b(act(a(x))))


def op_norm(m, rng, d):
    kind = rng.randrange(3)
    if kind == 0:
        ln = nn.LayerNorm(d, elementwise_affine=rng.random() < 0.7)
        m.mods.append(ln)
        return lambda x: ln(x)
    w = nn.Parameter(torch.rand(d) + 0.5)
    m.params.append(w)
    if kind == 1:
        return lambda x: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).type_as(x) * w
    return lambda x: (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)


def op_elementwise(m, rng, d):
    c = rng.choice([0.5, 2.0, -1.0, 3.0])
    f = rng.choice([lambda x: x * c, lambda x: x + c, lambda x: x / (x * x + 1.0), lambda x: -x,
                    lambda x: x ** 2 * 0.1, lambda x: torch.exp(x * 0.1), lambda x: x.abs() + x,
                    lambda x: torch.where(x > 0, x, x * 0.1), lambda x: torch.maximum(x, x * 0.5)])
    return f


def op_residual(m, rng, d):
    inner = rng.choice([op_linear, op_mlp, op_elementwise])(m, rng, d)
    return lambda x: x + inner(x)


def op_attention(m, rng, d):
    heads = rng.choice([h for h in (1, 2, 4) if d % h == 0])
    kv = rng.choice([h for h in (1, heads) if heads % h == 0])
    hd = d // heads
    q, k, v, o = nn.Linear(d, d, bias=False), nn.Linear(d, kv * hd, bias=False), nn.Linear(d, kv * hd, bias=False), \
        nn.Linear(d, d, bias=False)
    m.mods.extend([q, k, v, o])
    mask_form = rng.randrange(4)
    gqa = rng.randrange(2)

    def attend(x):
        B, T, C = x.size()
        qh = q(x).view(B, T, heads, hd).transpose(1, 2)
        kh = k(x).view(B, T, kv, hd).transpose(1, 2)
        vh = v(x).view(B, T, kv, hd).transpose(1, 2)
        if heads != kv:
            r = heads // kv
            if gqa:
                kh, vh = kh.repeat_interleave(r, dim=1), vh.repeat_interleave(r, dim=1)
            else:
                kh = kh[:, :, None].expand(B, kv, r, T, hd).reshape(B, heads, T, hd)
                vh = vh[:, :, None].expand(B, kv, r, T, hd).reshape(B, heads, T, hd)
        s = qh @ kh.transpose(-2, -1) / math.sqrt(hd)
        tril = torch.tril(torch.ones(T, T))
        if mask_form == 0:
            s = s.masked_fill(tril == 0, float("-inf"))
        elif mask_form == 1:
            s = torch.where(tril.bool(), s, torch.tensor(float("-inf")))
        elif mask_form == 2:
            s = s + torch.full((T, T), float("-inf")).triu(1)
        p = F.softmax(s.float(), dim=-1).type_as(s)
        return o((p @ vh).transpose(1, 2).contiguous().view(B, T, C))

    return attend


def op_rope(m, rng, d):
    form = rng.randrange(2)
    half = d // 2
    ang = torch.arange(64)[:, None] * (1.0 / 10000 ** (torch.arange(half) / half))[None]

    def rope(x):
        B, T, C = x.size()
        if form == 0:
            xc = torch.view_as_complex(x.float().reshape(B, T, -1, 2))
            return torch.view_as_real(xc * torch.polar(torch.ones(T, half), ang[:T])[None]).flatten(2).type_as(x)
        cos, sin = torch.cat([ang[:T].cos()] * 2, -1), torch.cat([ang[:T].sin()] * 2, -1)
        x1, x2 = x[..., :half], x[..., half:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    return rope


def op_split(m, rng, d):
    lin = nn.Linear(d, 3 * d, bias=rng.random() < 0.5)
    m.mods.append(lin)
    how = rng.randrange(3)

    def split(x):
        if how == 0:
            a, b, c = lin(x).split(d, dim=-1)
        elif how == 1:
            a, b, c = lin(x).chunk(3, dim=-1)
        else:
            a, b, c = lin(x).view(*x.shape[:-1], 3, d).unbind(-2)
        return a * torch.sigmoid(b) + c

    return split


OPS = [op_linear, op_mlp, op_norm, op_elementwise, op_residual, op_attention, op_rope, op_split]


class Case(nn.Module):
    def __init__(self, rng, d, depth):
        super().__init__()
        self.mods, self.params = nn.ModuleList(), nn.ParameterList()
        self.steps = [rng.choice(OPS)(self, rng, d) for _ in range(depth)]

    def forward(self, x):
        for f in self.steps:
            x = f(x)
            if self.rounding:  # the judge's reference: bf16 rounding where each step ends
                x = x.bfloat16().float()
        return x

    rounding = False


def one(seed, timeout):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    d = rng.choice([16, 32, 64])
    b, t = rng.choice([1, 2, 3]), rng.choice([4, 8, 12, 16, 32])
    module = Case(rng, d, rng.randint(1, 4)).eval()
    x = torch.randn(b, t, d)
    schedule = rng.choice([None, {"tile_rows": rng.choice([4, 8, 16])}, {"tile_cols": rng.choice([16, 32])}])
    signal.alarm(timeout)
    try:
        lowered = stepsim.torch.lower(module, (x,), schedule=schedule)
        got = lowered.run(mode="functional").outputs[0]
    except (stepsim.Error, TypeError) as e:
        return "refused", str(e).splitlines()[0][:160]
    except Hang:
        return "hang", "over %d s" % timeout
    except Exception:
        return "crash", traceback.format_exc(limit=3)
    finally:
        signal.alarm(0)
    with torch.no_grad():
        want = module(x).numpy().astype(np.float64)
        module.rounding = True
        rounded = module(x.bfloat16().float()).numpy().astype(np.float64)
    peak = float(np.abs(want).max()) or 1.0
    err = float(np.abs(got.astype(np.float64) - want).max()) / peak
    # how much bf16 rounding alone moves this chain (a norm after a large offset amplifies it)
    sensitivity = float(np.abs(rounded - want).max()) / peak
    if not err <= max(0.06, 3 * sensitivity):
        return "silent", "max error %.4g of the largest output (bf16 rounding at each step: %.4g)" % (
            err, sensitivity)
    return "ok", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=0, help="cases (0: as many as --minutes allow)")
    ap.add_argument("--minutes", type=float, default=0)
    ap.add_argument("--timeout", type=int, default=60, help="seconds per case before it counts as a hang")
    ap.add_argument("--refusals", action="store_true", help="print each refusal's message")
    args = ap.parse_args()
    signal.signal(signal.SIGALRM, _alarm)
    counts = {"ok": 0, "refused": 0, "silent": 0, "crash": 0, "hang": 0}
    end = time.time() + args.minutes * 60 if args.minutes else None
    k = 0
    while (args.cases and k < args.cases) or (end and time.time() < end):
        seed = args.seed * 1000003 + k
        outcome, detail = one(seed, args.timeout)
        counts[outcome] += 1
        if outcome == "refused" and args.refusals:
            print("refused seed %d: %s" % (seed, detail), flush=True)
        if outcome in ("silent", "crash", "hang"):
            print("finding (%s) seed %d: %s" % (outcome, seed, detail), flush=True)
        k += 1
    print("cases %d: %s" % (k, ", ".join("%s %d" % kv for kv in counts.items())))
    return 1 if counts["silent"] or counts["crash"] or counts["hang"] else 0


if __name__ == "__main__":
    sys.exit(main())
