"""Measures the bf16-vs-fp32 error of every style in eager PyTorch (the numbers behind
reference.TOLERANCE): prefill at batch 1, 2, 4 and decode with uniform and ragged caches, over
seeds 0..N-1 (default 20), the worst of each metric per style; MoE styles also count routing
flips. Run: /usr/bin/python3 testbench/python/torch_models/measure_bf16.py [N]"""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch_models as tm  # noqa: E402
from torch_models import reference as R  # noqa: E402
from torch_models.sdpa_torch2 import sdpa_shim  # noqa: E402

RAGGED = {1: [7], 2: [12, 5], 4: [12, 5, 9, 1]}


def measure(seeds=20):
    worst = collections.defaultdict(lambda: collections.defaultdict(float))
    routing = collections.defaultdict(collections.Counter)
    with sdpa_shim():
        for name, mod in tm.STYLES.items():
            for seed in range(seeds):
                for b in (1, 2, 4):
                    m, x = mod.make(batch=b, seed=seed)
                    row = name
                    if name in tm.MOE:
                        r = R.moe_compare(m, mod.router_of, x)
                        for key in ("tokens", "n_tied", "n_tied_measured", "n_flipped",
                                    "n_flipped_decided"):
                            routing[name][key] += r[key]
                        if r["n_flipped"]:
                            row = name + " (routing flip)"
                    for key, v in R.compare(m, x)[0].items():
                        worst[row][key] = max(worst[row][key], v)
                    if name in tm.CACHED:
                        for lengths in ([12] * b, RAGGED[b]):
                            m2, _ = mod.make(batch=b, seed=seed)
                            e = R.compare(m2, steps=mod.decode_steps(m2, lengths, seed=seed + 3))[0]
                            for key, v in e.items():
                                worst[name + " decode"][key] = max(worst[name + " decode"][key], v)
    return worst, routing


if __name__ == "__main__":
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    worst, routing = measure(seeds)
    print("%-30s %9s %9s %9s %9s" % ("style", "max_abs", "rel_max", "max_rms", "mean_rms"))
    for name, d in worst.items():
        print("%-30s %9.4f %9.4f %9.4f %9.4f" % (name, d["max_abs"], d["rel_max"], d["max_rms"], d["mean_rms"]))
    print("\nprefill routing, summed over the runs:")
    for name, c in routing.items():
        print("  %-18s %s" % (name, ", ".join("%s %d" % kv for kv in c.items())))
