#!/usr/bin/python3
"""Fig. 17 (paper v2 §5.5): end-to-end decode, Qwen3-30B-A3B and Mixtral-8x7B, batch 64.

One decoder layer (graphs/layers/decoder.cpp: QKV generation, GQA attention over every KV head,
output projection + residual, MoE) in timing mode, step-artifact preset, 4096 FLOPs/cycle per
projection and MoE node, 2048 per attention node, attention FIFO depth 1 (the artifact's
attention runs), KV lengths of the artifact's medium-variability batch (conv rows 4007..4070),
the model's real routing trace, MoE tile_f 64.

  dynamic                 attention: dynamic parallelization; MoE: dynamic tiling, and for Qwen3
                          configuration time-multiplexing over 32 regions (the paper applies it
                          to Qwen3 only: Mixtral's 8 experts are all active at batch 64)
  static, memory-matched  attention: static interleaved; MoE: the static tile whose MoE on-chip
                          memory is closest to dynamic tiling's (Fig. 9 sweep, run here)
  static, perf-matched    attention: static interleaved; MoE: the cheapest static tile within
                          1 % of dynamic tiling's MoE cycles (Fig. 9 sweep)

On-chip memory follows the Fig. 9 method (artifact formulas: static designs allocate every
buffer statically, the symbolic total; dynamic designs on demand, the run's requirement);
compute resources are the allocated FLOPs/cycle. A whole model runs the layer once per decoder
layer (48 for Qwen3, 32 for Mixtral) with that layer's routing; only one routing snapshot per
model exists in ../shared/traces/moe, so every layer uses it, and the model total is the layer
count times one layer (ratios equal the one-layer ratios).
"""
import os
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import common  # noqa: E402

MODELS = {"mixtral": {"layers": 32, "tm_regions": 0}, "qwen": {"layers": 48, "tm_regions": 32}}
STATIC_TILES = [8, 16, 32, 64]
# Paper v2 §5.5: speedup of dynamic over static, and dynamic's on-chip memory / compute saving.
PAPER = {
    ("mixtral", "memory-matched"): {"speedup": 1.27},
    ("qwen", "memory-matched"): {"speedup": 1.15, "memory_saved": 0.69, "compute_saved": 0.54},
    ("mixtral", "perf-matched"): {"speedup": 1.05, "memory_saved": 0.20},
    ("qwen", "perf-matched"): {"speedup": 1.14, "memory_saved": 0.88},
}
ARTIFACT = {"onchip_requirement_model": "artifact"}


def matched_tiles(exe, model):
    """The Fig. 9 sweep (MoE alone): memory- and performance-matched static tiles."""
    pts = {}
    for tn in STATIC_TILES + [0]:
        r = common.run_layer(exe, "moe", {"model": model, "batch": 64, "tile_n": tn, "tile_f": 64, "compute_bw": 4096},
                             sets=ARTIFACT)
        pts[tn] = (r["cycles"], common.onchip_bytes(r, tn != 0))
    dyn_cycles, dyn_mem = pts[0]
    mem = min(STATIC_TILES, key=lambda t: (abs(pts[t][1] - dyn_mem), t))
    perf = min((t for t in STATIC_TILES if pts[t][0] <= dyn_cycles * 1.01), key=lambda t: (pts[t][1], t))
    return mem, perf, pts


def decoder(exe, model, attention, moe_tile, moe_regions, attn_depth=1):
    params = {"model": model, "batch": 64, "attention": attention, "moe_tile_n": moe_tile, "moe_regions": moe_regions,
              "moe_tile_f": 64, "moe_compute_bw": 4096, "proj_compute_bw": 4096, "attn_fifo_depth": attn_depth}
    r = common.run_layer(exe, "decoder", params, sets=ARTIFACT)
    finish = {n["name"]: n["finish_cycle"] for n in r["nodes"]}
    static = attention != "dynamic" and moe_tile != 0
    return {"cycles": r["cycles"], "qkv": finish["attn_start"],
            "attention": finish["oproj_start"] - finish["attn_start"],
            "oproj": finish["moe_start"] - finish["oproj_start"], "moe": r["cycles"] - finish["moe_start"],
            "onchip_bytes": common.onchip_bytes(r, static),
            "allocated_flops_per_cycle": r["compute"]["allocated_flops_per_cycle"],
            "offchip_bytes": r["offchip"]["read_bytes"] + r["offchip"]["write_bytes"], "wall_s": round(r["wall_s"], 3),
            "cycles_per_s": round(r["cycles"] / r["wall_s"])}


def main():
    args = common.arg_parser(__doc__).parse_args()
    os.makedirs(args.out, exist_ok=True)
    exe = common.stepsim_binary(args.build_dir)
    t0 = time.time()
    rows, sweeps = [], {}
    for model, m in MODELS.items():
        mem_tile, perf_tile, pts = matched_tiles(exe, model)
        sweeps[model] = (mem_tile, perf_tile, pts)
        configs = [("dynamic", "dynamic", 0, m["tm_regions"]), ("memory-matched", "interleaved", mem_tile, 0),
                   ("perf-matched", "interleaved", perf_tile, 0)]
        for depth in (1, 0):  # 0: the preset's FIFO depth (2) in the attention too (sensitivity)
            for name, attn, tile, regions in configs:
                row = {"model": model, "design": name, "attn_fifo_depth": depth or 2, "attn_scheme": attn,
                       "moe_tiling": "dynamic" if tile == 0 else "static %d" % tile, "moe_regions": regions or "-",
                       "layers": m["layers"]}
                row.update(decoder(exe, model, attn, tile, regions, depth))
                row["model_cycles"] = row["cycles"] * m["layers"]
                rows.append(row)
    total = time.time() - t0
    base = os.path.join(args.out, "fig17_end_to_end")
    common.write_csv(base + ".csv", rows, list(rows[0].keys()))

    def get(model, design, depth=1):
        return next(r for r in rows if r["model"] == model and r["design"] == design and r["attn_fifo_depth"] == depth)

    md = "# Fig. 17: end to end (one decoder layer per model, batch 64)\n\n"
    md += "Produced by `/usr/bin/python3 scripts/figures/fig17_end_to_end.py`. " + \
        " ".join(__doc__.split("\n\n")[1:]).replace("\n", " ") + "\n\n"
    md += "Matched static tiles from the MoE-only sweep (cycles, on-chip bytes by tile; 0 = dynamic):\n\n"
    md += common.md_table(["model", "memory-matched tile", "perf-matched tile", "sweep"],
                          [[m, s[0], s[1], ", ".join("%d: %d cyc, %.1f MiB" % (t, c, b / 2**20)
                                                     for t, (c, b) in sorted(s[2].items()))]
                           for m, s in sweeps.items()])
    table = []
    for depth in (1, 2):
        for model in MODELS:
            d = get(model, "dynamic", depth)
            for design in ("memory-matched", "perf-matched"):
                s = get(model, design, depth)
                p = PAPER[(model, design)] if depth == 1 else {}
                fmt = lambda k: ("%d %%" % round(100 * p[k])) if k in p else "-"  # noqa: E731
                table.append([model, design, depth, "%.2fx" % p["speedup"] if p else "-",
                              "%.2fx" % (s["cycles"] / d["cycles"]),
                              fmt("memory_saved"), "%d %%" % round(100 * (1 - d["onchip_bytes"] / s["onchip_bytes"])),
                              fmt("compute_saved"),
                              "%d %%" % round(100 * (1 - d["allocated_flops_per_cycle"]
                                                     / s["allocated_flops_per_cycle"]))])
    md += "\nDynamic vs static (speedup = static cycles / dynamic cycles; saved = 1 - dynamic / static):\n\n"
    md += common.md_table(["model", "vs static", "attention FIFO depth", "paper speedup", "our speedup",
                           "paper on-chip memory saved", "our on-chip memory saved", "paper compute saved",
                           "our compute saved"], table)
    md += "\nPer design (cycles of one layer, and of its phases; the model total is `layers` times one layer):\n\n"
    md += common.md_table(["model", "design", "attention FIFO depth", "attention", "MoE", "MoE regions", "cycles",
                           "QKV", "attention", "o-proj", "MoE", "layers", "model cycles", "on-chip [B]",
                           "allocated FLOPs/cycle", "off-chip [B]", "wall [s]", "simulated cycles/s"],
                          [[r["model"], r["design"], r["attn_fifo_depth"], r["attn_scheme"], r["moe_tiling"],
                            r["moe_regions"], r["cycles"], r["qkv"], r["attention"], r["oproj"], r["moe"], r["layers"],
                            r["model_cycles"],
                            r["onchip_bytes"], r["allocated_flops_per_cycle"], r["offchip_bytes"], r["wall_s"],
                            r["cycles_per_s"]] for r in rows])

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, model in zip(axes, MODELS):
        designs = ["perf-matched", "memory-matched", "dynamic"]
        bottom = [0.0] * 3
        ref = get(model, "memory-matched")["cycles"]
        for phase, color in (("qkv", "#9ecae1"), ("attention", "#fdae6b"), ("oproj", "#a1d99b"), ("moe", "#bcbddc")):
            vals = [get(model, d)[phase] / ref for d in designs]
            ax.bar(designs, vals, bottom=bottom, color=color, label=phase)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_ylabel("cycles / memory-matched static")
        ax.set_title("%s, one decoder layer, batch 64" % model)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(base + ".png", dpi=120)
    common.finish(base, md, rows, total)


if __name__ == "__main__":
    main()
