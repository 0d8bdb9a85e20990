#!/usr/bin/python3
"""Paper Figs. 12 and 13: configuration time-multiplexing of the MoE layer.

Qwen3-30B-A3B MoE, batch 64 (real routing trace), tile_f 48, over 128, 64, 32, 16, 8 and 4
parallel regions (1, 2, 4, 8, 16, 32 experts per region), static tiling with tile 32 and
dynamic tiling, timing mode, step-artifact preset, 4096 FLOPs/cycle per higher-order node.
Compute utilization = FLOPs executed / (allocated FLOPs/cycle x cycles) (padding rows included
for static tiling, as in the authors' accounting). On-chip memory: the artifact's requirement
formulas, static tiling allocated statically (symbolic total), dynamic on demand (as for Figs.
9/10). Writes fig12_13_time_multiplexing.csv, .png and .md.

    /usr/bin/python3 scripts/figures/fig12_13_time_multiplexing.py [--out DIR] [--build-dir DIR]
"""
import os
import time

import matplotlib
matplotlib.use("Agg")  # no display: before pyplot is imported
import matplotlib.pyplot as plt  # noqa: E402

import common  # noqa: E402

REGIONS = [128, 64, 32, 16, 8, 4]


def config(regions, tile_n):
    """(layer, parameters, --set options) of one point; energy_claims.py runs the same points."""
    return ("moe_tm", {"model": "qwen", "batch": 64, "regions": regions, "tile_n": tile_n, "tile_f": 48},
            {"onchip_requirement_model": "artifact"})


def point(exe, regions, tile_n):
    layer, params, sets = config(regions, tile_n)
    r = common.run_layer(exe, layer, params, sets=sets)
    onchip = common.onchip_bytes(r, tile_n != 0)
    return {"tiling": "dynamic" if tile_n == 0 else "static", "tile_n": tile_n, "regions": regions,
            "cycles": r["cycles"], "flops": r["compute"]["flops"],
            "allocated_flops_per_cycle": r["compute"]["allocated_flops_per_cycle"],
            "utilization": r["compute"]["utilization"], "onchip_bytes": onchip,
            "offchip_bw_utilization": r["offchip"]["bandwidth_utilization"], "wall_s": round(r["wall_s"], 3),
            "cycles_per_s": round(r["cycles"] / r["wall_s"])}


def main():
    args = common.arg_parser(__doc__).parse_args()
    os.makedirs(args.out, exist_ok=True)
    exe = common.stepsim_binary(args.build_dir)
    t0 = time.time()
    rows = [point(exe, R, tn) for tn in (32, 0) for R in REGIONS]
    total = time.time() - t0
    base = os.path.join(args.out, "fig12_13_time_multiplexing")
    common.write_csv(base + ".csv", rows, list(rows[0].keys()))

    def get(tiling, R):
        return next(r for r in rows if r["tiling"] == tiling and r["regions"] == R)

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for tiling, style in (("static", "o-"), ("dynamic", "s--")):
        pts = [get(tiling, R) for R in REGIONS]
        labels = ["%d(%d)" % (R, 128 // R) for R in REGIONS]
        axes[0].plot(labels, [100 * p["utilization"] for p in pts], style, label=tiling)
        axes[1].plot(labels, [p["cycles"] for p in pts], style, label=tiling)
        axes[2].plot(labels, [p["onchip_bytes"] / 2**20 for p in pts], style, label=tiling)
    axes[0].set_ylabel("compute utilization [%]")
    axes[1].set_ylabel("cycles")
    axes[2].set_ylabel("on-chip memory [MiB]")
    for ax in axes:
        ax.set_xlabel("regions (experts per region)")
        ax.legend(fontsize=8)
    fig.suptitle("Qwen3-30B-A3B MoE, batch 64, time-multiplexed regions (stepsim)")
    fig.tight_layout()
    fig.savefig(base + ".png", dpi=120)

    s128, s32, d128, d32 = get("static", 128), get("static", 32), get("dynamic", 128), get("dynamic", 32)
    cmp = [
        ["static: utilization 32 regions / 128 regions", "2.64x", "%.2fx" % (s32["utilization"] / s128["utilization"])],
        ["static: cycles 32 regions / 128 regions", "< 1.01x", "%.3fx" % (s32["cycles"] / s128["cycles"])],
        ["dynamic: utilization 32 regions / 128 regions", "2.51x",
         "%.2fx" % (d32["utilization"] / d128["utilization"])],
        ["dynamic: cycles 32 regions / 128 regions", "~1.05x", "%.3fx" % (d32["cycles"] / d128["cycles"])],
        ["FLOPs executed, static / dynamic", "3.81x", "%.2fx" % (s128["flops"] / d128["flops"])],
        ["static: allocated compute saved, 32 vs 128 regions", "62 %",
         "%.0f %%" % (100 * (1 - s32["allocated_flops_per_cycle"] / s128["allocated_flops_per_cycle"]))],
        ["static: on-chip memory saved, 32 vs 128 regions", "46 %",
         "%.0f %%" % (100 * (1 - s32["onchip_bytes"] / s128["onchip_bytes"]))],
    ]
    md = "# Figs. 12 and 13: configuration time-multiplexing (Qwen3-30B-A3B MoE, batch 64)\n\n"
    md += ("Produced by `/usr/bin/python3 scripts/figures/fig12_13_time_multiplexing.py` (timing mode, `step-artifact` "
           "preset, tile_f 48, static tile 32 or dynamic tiling, 4096 FLOPs/cycle per higher-order node; the paper's "
           "2.64x/2.51x compare 128 regions with 32, reference-simulator-notes §4.3).\n\n")
    md += common.md_table(["quantity", "paper", "stepsim"], cmp)
    md += "\nAll points:\n\n"
    md += common.md_table(["tiling", "regions", "cycles", "FLOPs", "allocated FLOPs/cycle", "utilization [%]",
                           "on-chip [B]", "off-chip BW use [%]", "wall [s]", "simulated cycles/s"],
                          [[r["tiling"], r["regions"], r["cycles"], r["flops"], r["allocated_flops_per_cycle"],
                            "%.3f" % (100 * r["utilization"]), r["onchip_bytes"],
                            "%.1f" % (100 * r["offchip_bw_utilization"]), r["wall_s"], r["cycles_per_s"]]
                           for r in rows])
    common.finish(base, md, rows, total)


if __name__ == "__main__":
    main()
