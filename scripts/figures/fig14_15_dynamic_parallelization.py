#!/usr/bin/python3
"""Paper Figs. 14 and 15: dynamic vs static parallelization of GQA decode attention.

Qwen3-30B-A3B decode attention (one KV head group: 8 queries, head_dim 64), KV lengths from the
Azure conversation trace (the artifact's batches, ../shared/traces/azure/step_artifact_kv_batches.csv),
KV tile 32, 4 regions, 2048 FLOPs/cycle per node, timing mode, step-artifact preset with FIFO depth 1
(metadata FIFOs 16, KV write-back 4), as in the authors' runs.
  Fig. 14: batch 64, the 3 low-, 3 medium- and 3 high-variability batches; speedup of dynamic over
           static interleaved parallelization.
  Fig. 15: the medium batch (rows 4007-4070) truncated to 16, 32, 48, 64 requests; speedup of
           dynamic over static coarse-grained parallelization (16 requests per region).
Writes fig14_15_dynamic_parallelization.csv, .png and .md.

    /usr/bin/python3 scripts/figures/fig14_15_dynamic_parallelization.py [--out DIR] [--build-dir DIR]
"""
import csv
import math
import os
import time

import matplotlib
matplotlib.use("Agg")  # no display: before pyplot is imported
import matplotlib.pyplot as plt  # noqa: E402

import common  # noqa: E402

BATCHES = os.path.join(os.path.dirname(common.ROOT), "shared", "traces", "azure", "step_artifact_kv_batches.csv")


def groups():
    """(group, stdev label, first row) of the batch-64 batches the artifact evaluates."""
    out = set()
    with open(BATCHES) as f:
        for r in csv.DictReader(f):
            if r["batch_size"] == "64" and r["ae_group"]:
                out.add((r["ae_group"], int(r["stdev_label"]), int(r["start_row"])))
    order = {"low": 0, "med": 1, "high": 2}
    return sorted(out, key=lambda g: (order[g[0]], g[2]))


def config(par, batch, first_row):
    """(layer, parameters, --set options) of one run; energy_claims.py runs the same points."""
    return "attention", {"parallel": par, "batch": batch, "kv_first_row": first_row}, {"fifo_depth": 1}


def cycles(exe, par, batch, first_row):
    layer, params, sets = config(par, batch, first_row)
    r = common.run_layer(exe, layer, params, sets=sets)
    return r["cycles"], r["wall_s"]


def main():
    args = common.arg_parser(__doc__).parse_args()
    os.makedirs(args.out, exist_ok=True)
    exe = common.stepsim_binary(args.build_dir)
    rows = []
    t0 = time.time()
    for group, label, first in groups():
        for par in ("interleaved", "dynamic"):
            c, w = cycles(exe, par, 64, first)
            rows.append({"figure": 14, "group": group, "stdev_label": label, "first_row": first, "batch": 64,
                         "parallel": par, "cycles": c, "wall_s": round(w, 3)})
    for batch in (16, 32, 48, 64):
        for par in ("coarse", "dynamic"):
            c, w = cycles(exe, par, batch, 4007)
            rows.append({"figure": 15, "group": "med", "stdev_label": 996, "first_row": 4007, "batch": batch,
                         "parallel": par, "cycles": c, "wall_s": round(w, 3)})
    total = time.time() - t0
    base = os.path.join(args.out, "fig14_15_dynamic_parallelization")
    common.write_csv(base + ".csv", rows, list(rows[0].keys()))

    def cyc(fig, par, batch, first):
        return next(r["cycles"] for r in rows if r["figure"] == fig and r["parallel"] == par and r["batch"] == batch
                    and r["first_row"] == first)

    f14 = []
    for group, label, first in groups():
        f14.append((group, label, first, cyc(14, "interleaved", 64, first) / cyc(14, "dynamic", 64, first)))
    f15 = [(b, cyc(15, "coarse", b, 4007) / cyc(15, "dynamic", b, 4007)) for b in (16, 32, 48, 64)]

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    axes[0].bar(["%s\n%d-%d" % (g, f, f + 63) for g, _, f, _ in f14], [s for *_, s in f14],
                color=[{"low": "tab:green", "med": "tab:orange", "high": "tab:red"}[g] for g, *_ in f14])
    axes[0].set_ylabel("speedup of dynamic over interleaved")
    axes[0].set_title("Fig. 14: batch 64")
    axes[0].tick_params(axis="x", labelsize=7)
    axes[1].plot([b for b, _ in f15], [s for _, s in f15], "o-")
    axes[1].set_xlabel("batch")
    axes[1].set_ylabel("speedup of dynamic over coarse-grained")
    axes[1].set_title("Fig. 15: medium-variability batch")
    fig.tight_layout()
    fig.savefig(base + ".png", dpi=120)

    def rng(group):
        v = [s for g, _, _, s in f14 if g == group]
        return "%.2fx-%.2fx (geomean %.2fx)" % (min(v), max(v), math.exp(sum(map(math.log, v)) / len(v)))

    md = "# Figs. 14 and 15: dynamic vs static parallelization of decode attention\n\n"
    md += ("Produced by `/usr/bin/python3 scripts/figures/fig14_15_dynamic_parallelization.py` (timing mode, "
           "`step-artifact` preset with `fifo_depth=1`, Qwen3-30B-A3B GQA, KV tile 32, 4 regions, 2048 FLOPs/cycle "
           "per node).\n\n")
    md += common.md_table(["comparison", "paper", "stepsim"], [
        ["Fig. 14, batch 64, low variability: dynamic / interleaved", "1.14x-1.26x", rng("low")],
        ["Fig. 14, batch 64, medium variability: dynamic / interleaved", "(not stated)", rng("med")],
        ["Fig. 14, batch 64, high variability: dynamic / interleaved", "1.47x-1.57x", rng("high")],
        ["Fig. 15, batch 16: dynamic / coarse", "2.72x", "%.2fx" % f15[0][1]],
        ["Fig. 15, batch 32: dynamic / coarse", "-", "%.2fx" % f15[1][1]],
        ["Fig. 15, batch 48: dynamic / coarse", "-", "%.2fx" % f15[2][1]],
        ["Fig. 15, batch 64: dynamic / coarse", "1.43x", "%.2fx" % f15[3][1]],
    ])
    md += "\nAll runs:\n\n"
    md += common.md_table(["figure", "variability", "rows", "batch", "parallelization", "cycles", "wall [s]"],
                          [[r["figure"], r["group"], "%d-%d" % (r["first_row"], r["first_row"] + r["batch"] - 1),
                            r["batch"], r["parallel"], r["cycles"], r["wall_s"]] for r in rows])
    common.finish(base, md, rows, total)


if __name__ == "__main__":
    main()
