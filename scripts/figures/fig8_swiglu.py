#!/usr/bin/python3
"""Paper Fig. 8 (HDL validation workload): the 15-point SwiGLU tiling sweep.

SwiGLU expert, batch 64, hidden 256, intermediate 512, schedule mn_mk, tiles
(tile_b, 256, tile_f) for tile_b in 16|32|64 and tile_f in 16|32|64|128|256, hdl-validation
preset, timing mode. Writes fig8_swiglu.csv, .png and .md with cycles and off-chip traffic
(bf16 bytes as the simulator moves them, and at 4 B/element as the paper's HDL run counted).

    /usr/bin/python3 scripts/figures/fig8_swiglu.py [--out DIR] [--build-dir DIR]
"""
import os
import time

import matplotlib
matplotlib.use("Agg")  # no display: before pyplot is imported
import matplotlib.pyplot as plt  # noqa: E402

import common  # noqa: E402


def main():
    args = common.arg_parser(__doc__).parse_args()
    os.makedirs(args.out, exist_ok=True)
    exe = common.stepsim_binary(args.build_dir)
    rows = []
    t0 = time.time()
    for tb in (16, 32, 64):
        for tf in (16, 32, 64, 128, 256):
            r = common.run_layer(exe, "swiglu", {"batch": 64, "hidden": 256, "inter": 512, "tile_b": tb, "tile_f": tf},
                                 preset="hdl-validation")
            traffic = r["offchip"]["read_bytes"] + r["offchip"]["write_bytes"]
            rows.append({"tile_b": tb, "tile_h": 256, "tile_f": tf, "cycles": r["cycles"], "offchip_bytes": traffic,
                         "offchip_bytes_at_4B": traffic * 2, "wall_s": round(r["wall_s"], 3),
                         "cycles_per_s": round(r["cycles"] / r["wall_s"])})
    total = time.time() - t0
    base = os.path.join(args.out, "fig8_swiglu")
    common.write_csv(base + ".csv", rows, list(rows[0].keys()))

    fig, ax1 = plt.subplots(figsize=(8, 4))
    labels = ["(%d,256,%d)" % (r["tile_b"], r["tile_f"]) for r in rows]
    x = range(len(rows))
    ax1.bar(x, [r["cycles"] for r in rows], color="tab:blue", label="cycles")
    ax1.set_ylabel("cycles")
    ax1.set_xticks(list(x))
    ax1.set_xticklabels(labels, rotation=60, fontsize=7)
    ax2 = ax1.twinx()
    ax2.plot(list(x), [r["offchip_bytes_at_4B"] / 1e6 for r in rows], "o-", color="tab:red",
             label="off-chip traffic (MB, 4 B/element)")
    ax2.set_ylabel("off-chip traffic [MB at 4 B/element]")
    ax1.set_title("SwiGLU B=64, H=256, I=512, mn_mk, hdl-validation preset (stepsim)")
    fig.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(base + ".png", dpi=120)

    md = "# Fig. 8: SwiGLU tiling sweep\n\n"
    md += ("Produced by `/usr/bin/python3 scripts/figures/fig8_swiglu.py` (timing mode, `hdl-validation` preset: "
           "256 B/cycle on chip, 8 HBM channels, par_dispatch 4, FIFO depth 1, 4096 FLOPs/cycle per node). "
           "The paper (Fig. 8) plots cycles on a 0-4x10^4 axis and off-chip traffic on a 0-10 MB axis for these 15 "
           "points and reports no per-point values; its HDL run counted traffic at 4 B/element.\n\n")
    md += common.md_table(["tiles (b, h, f)", "cycles", "off-chip [B] (bf16)", "off-chip [MB] at 4 B/elem",
                           "wall [s]", "simulated cycles/s"],
                          [[label, r["cycles"], r["offchip_bytes"], "%.2f" % (r["offchip_bytes_at_4B"] / 1e6),
                            r["wall_s"], r["cycles_per_s"]] for label, r in zip(labels, rows)])
    common.finish(base, md, rows, total)


if __name__ == "__main__":
    main()
