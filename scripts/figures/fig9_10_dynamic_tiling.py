#!/usr/bin/python3
"""Paper Figs. 9 and 10: dynamic vs static tiling of the MoE layer (cycles vs on-chip memory).

MoE with SwiGLU experts, Mixtral-8x7B and Qwen3-30B-A3B, real routing traces, tile_f 64,
batch 64 (static tiles 8, 16, 32, 64) and batch 1024 (static tiles 16 ... 1024), timing mode,
step-artifact preset. Static tiling runs at 4096 FLOPs/cycle per node; dynamic tiling at 6400
FLOPs/cycle as in the authors' scripts (reference-simulator-notes §9) and, beside it, at 4096
(equal compute). On-chip memory follows the authors' method (dyn_tiling/test_*_sweep_revision.py):
the artifact's requirement formulas (its default mode=1), for static tiling from the symbolic
equations over the whole graph (memory is allocated statically, idle experts included:
`stepsim analyze`), for dynamic tiling with the trace's bin counts and no memory for experts
that receive no token (allocated on demand: the run's requirement, evaluated on what each node
held).

Writes fig9_10_dynamic_tiling.csv, .png and .md (our ratios beside the paper's, with the
Pareto Improvement Distance).

    /usr/bin/python3 scripts/figures/fig9_10_dynamic_tiling.py [--out DIR] [--build-dir DIR]
"""
import os
import time

import matplotlib
matplotlib.use("Agg")  # no display: before pyplot is imported
import matplotlib.pyplot as plt  # noqa: E402

import common  # noqa: E402

STATIC_TILES = {64: [8, 16, 32, 64], 1024: [16, 32, 64, 128, 256, 512, 1024]}
# Paper v2 §5.2: (model, batch) -> [(static tile, speedup of dynamic, memory ratio static/dynamic)], PID.
PAPER = {
    ("mixtral", 64): ([(16, 1.65, 1.0), (32, 1 / 1.0026, 1.33)], 1.33),
    ("qwen", 64): ([(8, 1.69, 2.1), (64, 1 / 1.0076, 5.05)], 2.11),
    ("mixtral", 1024): ([(128, 1.86, 1 / 1.79), (256, 1.87, 1.0)], 1.86),
    ("qwen", 1024): ([(64, 1.87, 1.13), (1024, 1.12, 12.5)], 1.87),
}


def config(model, batch, tile_n, bw):
    """(layer, parameters, --set options) of one point; energy_claims.py runs the same points."""
    return ("moe", {"model": model, "batch": batch, "tile_n": tile_n, "tile_f": 64, "compute_bw": bw},
            {"onchip_requirement_model": "artifact"})


def point(exe, model, batch, tile_n, bw):
    layer, params, sets = config(model, batch, tile_n, bw)
    r = common.run_layer(exe, layer, params, sets=sets)
    onchip = common.onchip_bytes(r, tile_n != 0)
    return {"model": model, "batch": batch, "tiling": "dynamic" if tile_n == 0 else "static",
            "tile_n": tile_n, "compute_bw": bw, "cycles": r["cycles"],
            "onchip_bytes": onchip,
            "offchip_bytes": r["offchip"]["read_bytes"] + r["offchip"]["write_bytes"],
            "flops": r["compute"]["flops"], "wall_s": round(r["wall_s"], 3),
            "cycles_per_s": round(r["cycles"] / r["wall_s"])}


def main():
    args = common.arg_parser(__doc__).parse_args()
    os.makedirs(args.out, exist_ok=True)
    exe = common.stepsim_binary(args.build_dir)
    rows = []
    t0 = time.time()
    for batch in (64, 1024):
        for model in ("mixtral", "qwen"):
            for tn in STATIC_TILES[batch]:
                rows.append(point(exe, model, batch, tn, 4096))
            rows.append(point(exe, model, batch, 0, 6400))
            rows.append(point(exe, model, batch, 0, 4096))
    total = time.time() - t0
    base = os.path.join(args.out, "fig9_10_dynamic_tiling")
    common.write_csv(base + ".csv", rows, list(rows[0].keys()))

    fig, axes = plt.subplots(2, 2, figsize=(10, 8))
    md = "# Figs. 9 and 10: dynamic vs static tiling (MoE)\n\n"
    md += ("Produced by `/usr/bin/python3 scripts/figures/fig9_10_dynamic_tiling.py` (timing mode, `step-artifact` "
           "preset, tile_f 64, on-chip memory by the artifact's requirement formulas: static tiling allocates every "
           "expert "
           "statically (symbolic total, `stepsim analyze`), dynamic tiling allocates on demand (experts without tokens "
           "hold nothing), as in the authors' scripts). Static tiling at 4096 "
           "FLOPs/cycle per node; dynamic tiling at 6400 (the authors' setting) and at 4096 (equal compute). "
           "Speedup = static cycles / dynamic cycles; memory = static on-chip / dynamic on-chip.\n\n")
    table = []
    for i, batch in enumerate((64, 1024)):
        for j, model in enumerate(("mixtral", "qwen")):
            st = [r for r in rows if r["model"] == model and r["batch"] == batch and r["tiling"] == "static"]
            dyn = {r["compute_bw"]: r for r in rows
                   if r["model"] == model and r["batch"] == batch and r["tiling"] == "dynamic"}
            ax = axes[i][j]
            ax.plot([r["onchip_bytes"] / 2**20 for r in st], [r["cycles"] for r in st], "o-", label="static tiles")
            for r in st:
                ax.annotate(str(r["tile_n"]), (r["onchip_bytes"] / 2**20, r["cycles"]), fontsize=7)
            ax.plot([dyn[6400]["onchip_bytes"] / 2**20], [dyn[6400]["cycles"]], "r*", ms=12,
                    label="dynamic (6400 FLOPs/cycle)")
            ax.plot([dyn[4096]["onchip_bytes"] / 2**20], [dyn[4096]["cycles"]], "gs",
                    label="dynamic (4096 FLOPs/cycle)")
            ax.set_xlabel("on-chip memory [MiB]")
            ax.set_ylabel("cycles")
            ax.set_title("%s, batch %d" % (model, batch))
            ax.legend(fontsize=7)
            comps, paper_pid = PAPER[(model, batch)]
            pts = [(r["cycles"], r["onchip_bytes"]) for r in st]
            for bw in (6400, 4096):
                d = dyn[bw]
                ours_pid = common.pid((d["cycles"], d["onchip_bytes"]), pts)
                for tn, p_speed, p_mem in comps:
                    s = next(r for r in st if r["tile_n"] == tn)
                    table.append([model, batch, bw, "tile %d" % tn, "%.2fx" % p_speed,
                                  "%.2fx" % (s["cycles"] / d["cycles"]),
                                  "%.2fx" % p_mem, "%.2fx" % (s["onchip_bytes"] / d["onchip_bytes"]),
                                  "%.2f" % paper_pid if bw == 6400 else "-", "%.2f" % ours_pid])
    fig.tight_layout()
    fig.savefig(base + ".png", dpi=120)
    md += common.md_table(["model", "batch", "dynamic FLOPs/cycle", "vs static", "paper speedup", "our speedup",
                           "paper memory ratio", "our memory ratio", "paper PID", "our PID"], table)
    md += "\nAll points:\n\n"
    md += common.md_table(["model", "batch", "tiling", "tile_n", "FLOPs/cycle", "cycles", "on-chip [B]", "off-chip [B]",
                           "wall [s]", "simulated cycles/s"],
                          [[r["model"], r["batch"], r["tiling"], r["tile_n"], r["compute_bw"], r["cycles"],
                            r["onchip_bytes"], r["offchip_bytes"], r["wall_s"], r["cycles_per_s"]] for r in rows])
    common.finish(base, md, rows, total)


if __name__ == "__main__":
    main()
