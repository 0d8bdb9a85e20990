#!/usr/bin/python3
"""The PyTorch front door on the corpus of blocks as their authors write them
(testbench/python/torch_models): per style, whether it lowers unedited, its error against PyTorch
in fp32 and bf16 (max error over the output's largest value; MoE blocks: the decided tokens'),
cycles of a prefill (batch 1 and 2, 16 tokens) and of a decode step (cache of 12 positions, and
ragged prompts of 12 and 5), and the wall time of lowering and of the functional run.

    PYTHONPATH=build/python /usr/bin/python3 scripts/bench/torch_styles.py [--markdown]
"""
import copy
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "testbench", "python"))

import torch  # noqa: E402

import stepsim.torch  # noqa: E402
from torch_models import STYLES, reference as R  # noqa: E402


def lowered(module, inputs):
    t0 = time.perf_counter()
    low = stepsim.torch.lower(module, inputs)
    t1 = time.perf_counter()
    res = low.run(mode="functional")
    t2 = time.perf_counter()
    return res, t1 - t0, t2 - t1


def rel(got, want):
    return R.errors(torch.tensor(got), want)["rel_max"]


def prefill(style, batch):
    module, inputs = STYLES[style].make(batch=batch)
    res, t_lower, t_run = lowered(module, inputs)
    w32 = R.tensors(R.run_fp32(module, inputs))[0]
    w16 = R.tensors(R.run_bf16(module, inputs))[0]
    return res.cycles, rel(res.outputs[0], w32), rel(res.outputs[0], w16), t_lower, t_run


def decode(style, lengths):
    mod = STYLES[style]
    module, _ = mod.make(batch=len(lengths))
    steps = mod.decode_steps(module, lengths)
    w32 = R.tensors(R.run_fp32(module, steps=steps)[-1])[0]
    live, live_steps = copy.deepcopy((module, steps))
    with torch.no_grad():
        live(*live_steps[0])
    res, t_lower, t_run = lowered(live, live_steps[1])
    return res.cycles, rel(res.outputs[0], w32), t_lower, t_run


def row(style):
    cells = [style]
    try:
        c1, e32, e16, tl, tr = prefill(style, 1)
        c2, _, _, _, _ = prefill(style, 2)
        cells += ["yes", "0", "%.4f" % e32, "%.4f" % e16, str(c1), str(c2)]
    except stepsim.Error as e:
        return cells + ["no: " + str(e).split(" at ")[0][:90]] + [""] * 9
    if hasattr(STYLES[style], "decode_steps"):
        d1 = decode(style, [12])
        d2 = decode(style, [12, 5])
        cells += [str(d1[0]), str(d2[0]), "%.4f" % max(d1[1], d2[1])]
    else:
        cells += ["-", "-", "-"]
    cells += ["%.2f" % tl, "%.2f" % tr]
    return cells


HEAD = ["style", "lowers as written", "edits", "max err / max vs fp32", "vs bf16", "prefill cycles B=1",
        "B=2", "decode cycles L=12", "ragged [12, 5]", "decode err vs fp32", "lower s", "run s"]


def main():
    sdpa = stepsim.torch.sdpa_shim()
    rows = []
    with sdpa:
        for style in STYLES:
            rows.append(row(style))
    if "--markdown" in sys.argv:
        print("| " + " | ".join(HEAD) + " |")
        print("|" + "---|" * len(HEAD))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        for r in rows:
            print("  ".join(r))


if __name__ == "__main__":
    main()
