#!/usr/bin/python3
"""What the paper's three optimizations save in energy and area (issue 37, item 5).

Runs the comparison points of the figure scripts (their own configurations, imported) and prices
each run with a technology table (`stepsim run --tech`): the default tech-7nm-literature and, when
hw/presets/tech/tech-7nm-rtl.yaml exists, the table derived from our RTL.
  dynamic tiling (Figs. 9/10): MoE, Mixtral and Qwen3; batch 64 against every static tile the
      figure sweeps (8-64), batch 1024 against the two tiles the paper quotes; dynamic tiling at
      6400 FLOPs/cycle per node (the authors' setting) and 4096 (the static points' compute);
  time-multiplexing (Figs. 12/13): Qwen3 MoE batch 64, 32 regions against 128, static tile 32 and
      dynamic tiling;
  dynamic parallelization (Figs. 14/15): decode attention, dynamic against interleaved at the nine
      batch-64 batches of Fig. 14, and against coarse-grained at the batches 16-64 of Fig. 15.
Per point: cycles, energy per token (the report's energy.tokens, checked to be the layer's batch),
dynamic and static (leakage) energy, the largest shares of the energy, the allocated fabric's area
(compute and memory units), and for the MoE points the memory-unit area the figure's on-chip bytes
fill (whole memory units of the preset's capacity; the paper's accounting, while the report counts
the memory units the run held). Per comparison: baseline / optimized cycles, and the energy per
token and areas the optimization saves. Writes energy_claims.csv (points), energy_claims_comparisons.csv,
energy_claims.md and energy_claims.png (energy saved against time saved).

    /usr/bin/python3 scripts/figures/energy_claims.py [--out DIR] [--build-dir DIR]
"""
import math
import os
import sys
import time

import matplotlib
matplotlib.use("Agg")  # no display: before pyplot is imported
import matplotlib.pyplot as plt  # noqa: E402

import common  # noqa: E402
import fig9_10_dynamic_tiling as tiling  # noqa: E402
import fig12_13_time_multiplexing as tm  # noqa: E402
import fig14_15_dynamic_parallelization as par  # noqa: E402

DEFAULT_TECH = "tech-7nm-literature"
RTL_TECH = "tech-7nm-rtl"
TILING_BWS = (6400, 4096)
TM_REGIONS = (128, 32)
FIG15_BATCHES = (16, 32, 48, 64)


def techs():
    """The default table, plus the RTL-derived one when its file is there."""
    rtl = os.path.join(common.ROOT, "hw", "presets", "tech", RTL_TECH + ".yaml")
    return [DEFAULT_TECH] + ([RTL_TECH] if os.path.exists(rtl) else [])


def tiling_tiles(model, batch):
    """Static tiles compared with dynamic tiling: the whole sweep at batch 64, the paper's at 1024."""
    if batch == 64:
        return tiling.STATIC_TILES[64]
    return [t for t, _, _ in tiling.PAPER[(model, batch)][0]]


def plan():
    """(points, comparisons): a point is (key, optimization, config, static allocation or None when
    the figure counts no on-chip memory); a comparison is (optimization, label, baseline key,
    optimized key)."""
    points, comps = [], []
    for model, batch in sorted(tiling.PAPER):
        for bw in TILING_BWS:
            points.append((("tiling", model, batch, 0, bw), "dynamic tiling", tiling.config(model, batch, 0, bw),
                           False))
        for tn in tiling_tiles(model, batch):
            points.append((("tiling", model, batch, tn, 4096), "dynamic tiling",
                           tiling.config(model, batch, tn, 4096), True))
            for bw in TILING_BWS:
                text = "%s b%d: static tile %d -> dynamic (%d FLOPs/cycle)" % (model, batch, tn, bw)
                comps.append(("dynamic tiling", text, ("tiling", model, batch, tn, 4096),
                              ("tiling", model, batch, 0, bw)))
    for tn in (32, 0):
        for regions in TM_REGIONS:
            points.append((("tm", regions, tn), "time-multiplexing", tm.config(regions, tn), tn != 0))
        comps.append(("time-multiplexing", "%s tiling: 128 -> 32 regions" % ("static" if tn else "dynamic"),
                      ("tm", 128, tn), ("tm", 32, tn)))
    for group, _, first in par.groups():
        for p in ("interleaved", "dynamic"):
            points.append((("attn", p, 64, first), "dynamic parallelization", par.config(p, 64, first), None))
        text = "Fig. 14 %s rows %d-%d: interleaved -> dynamic" % (group, first, first + 63)
        comps.append(("dynamic parallelization", text, ("attn", "interleaved", 64, first),
                      ("attn", "dynamic", 64, first)))
    for batch in FIG15_BATCHES:
        for p in ("coarse", "dynamic"):
            key = ("attn", p, batch, 4007)
            if not any(k == key for k, *_ in points):
                points.append((key, "dynamic parallelization", par.config(p, batch, 4007), None))
        comps.append(("dynamic parallelization", "Fig. 15 batch %d: coarse -> dynamic" % batch,
                      ("attn", "coarse", batch, 4007), ("attn", "dynamic", batch, 4007)))
    return points, comps


def label(key):
    if key[0] == "tiling":
        _, model, batch, tn, bw = key
        return "%s b%d %s, %d FLOPs/cycle" % (model, batch, "tile %d" % tn if tn else "dynamic", bw)
    if key[0] == "tm":
        return "qwen b64 %s, %d regions" % ("tile 32" if key[2] else "dynamic", key[1])
    return "attention b%d rows %d-%d, %s" % (key[2], key[3], key[3] + key[2] - 1, key[1])


def shares(energy, top=3):
    """The largest actions' shares of the total energy (static reported apart)."""
    by = sorted(energy["by_action_pj"].items(), key=lambda kv: -kv[1])[:top]
    return ", ".join("%s %.1f %%" % (k, 100 * v / energy["total_pj"]) for k, v in by)


def figure_memory_mm2(report, onchip):
    """Memory-unit area of `onchip` bytes packed into whole memory units (the report's area per unit)."""
    a = report["area"]
    per_unit = a["memory_units_mm2"] / a["units"]["memory_units"]
    return math.ceil(onchip / report["fabric"]["pmu_capacity_bytes"]) * per_unit


def measure(exe, key, optimization, cfg, static_alloc, tech):
    layer, params, sets = cfg
    r = common.run_layer(exe, layer, params, sets=sets, tech=tech)
    e, a = r["energy"], r["area"]
    if e["tokens"] != params["batch"]:
        sys.exit("%s: energy.tokens %s is not the layer's batch %d" % (label(key), e["tokens"], params["batch"]))
    onchip = None if static_alloc is None else common.onchip_bytes(r, static_alloc)
    return {"optimization": optimization, "point": label(key), "tech": tech, "cycles": r["cycles"],
            "tokens": e["tokens"], "flops": r["compute"]["flops"], "total_pj": e["total_pj"],
            "dynamic_pj": e["dynamic_pj"], "static_pj": e["static_pj"], "pj_per_token": e["pj_per_token"],
            "static_share": e["static_pj"] / e["total_pj"],
            "hbm_share": (e["by_action_pj"]["hbm_read"] + e["by_action_pj"]["hbm_write"]) / e["total_pj"],
            "largest_actions": shares(e), "average_power_w": e["average_power_w"], "area_mm2": a["total_mm2"],
            "compute_units_mm2": a["compute_units_mm2"], "memory_units_mm2": a["memory_units_mm2"],
            "compute_units": a["units"]["compute_units"], "memory_units": a["units"]["memory_units"],
            "figure_onchip_bytes": "" if onchip is None else onchip,
            "figure_memory_mm2": "" if onchip is None else figure_memory_mm2(r, onchip),
            "wall_s": round(r["wall_s"], 3)}


def saved(base, opt):
    """Fraction of `base` the optimized point saves (negative: it costs more); None without data."""
    if base in ("", None) or opt in ("", None) or base == 0:
        return None
    return 1 - opt / base


def compare(rows, comps, tech):
    get = {(r["tech"], r["point"]): r for r in rows}
    out = []
    for optimization, text, bkey, okey in comps:
        b, o = get[(tech, label(bkey))], get[(tech, label(okey))]
        out.append({"optimization": optimization, "comparison": text, "tech": tech,
                    "cycle_ratio": b["cycles"] / o["cycles"],
                    "energy_per_token_ratio": b["pj_per_token"] / o["pj_per_token"],
                    "energy_per_token_saved": saved(b["pj_per_token"], o["pj_per_token"]),
                    "static_energy_saved": saved(b["static_pj"], o["static_pj"]),
                    "dynamic_energy_saved": saved(b["dynamic_pj"], o["dynamic_pj"]),
                    "area_saved": saved(b["area_mm2"], o["area_mm2"]),
                    "compute_area_saved": saved(b["compute_units_mm2"], o["compute_units_mm2"]),
                    "memory_area_saved": saved(b["memory_units_mm2"], o["memory_units_mm2"]),
                    "figure_memory_area_saved": saved(b["figure_memory_mm2"], o["figure_memory_mm2"])})
    return out


def pct(x):
    return "-" if x is None else "%.0f %%" % (100 * x)


def plot(path, comparisons, tech_names):
    """Energy per token saved against time saved, one panel per technology table."""
    fig, axes = plt.subplots(1, len(tech_names), figsize=(6 * len(tech_names), 5), squeeze=False)
    styles = {"dynamic tiling": "o", "time-multiplexing": "s", "dynamic parallelization": "^"}
    for ax, tech in zip(axes[0], tech_names):
        for optimization, marker in styles.items():
            cs = [c for c in comparisons if c["tech"] == tech and c["optimization"] == optimization]
            ax.plot([c["cycle_ratio"] for c in cs], [c["energy_per_token_ratio"] for c in cs], marker, ls="none",
                    label=optimization)
        ax.plot([0.8, 4.5], [0.8, 4.5], "k:", lw=0.8, label="energy ratio = cycle ratio")
        ax.set_xlabel("cycles, baseline / optimized")
        ax.set_ylabel("energy per token, baseline / optimized")
        ax.set_title(tech)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def markdown(rows, comparisons, tech_names, total_s):
    md = "# Energy and area of the paper's optimizations\n\n"
    md += ("Produced by `/usr/bin/python3 scripts/figures/energy_claims.py` (timing mode, `step-artifact` preset, the "
           "configurations of fig9_10_dynamic_tiling.py, fig12_13_time_multiplexing.py and "
           "fig14_15_dynamic_parallelization.py; technology tables: %s). Energy per token = the run's energy (dynamic "
           "+ leakage of the allocated fabric over the run's time at 1 GHz) / the layer's batch (tokens decoded). "
           "Ratios are baseline / optimized; \"saved\" = 1 - optimized / baseline (negative: the optimization costs "
           "more). Area: the allocated fabric (compute units, memory units, routers, address generators, HBM PHYs); "
           "\"memory, run\" counts the memory units the run held, \"memory, figure\" the memory units the figure's "
           "on-chip bytes fill (static tiling allocated statically, dynamic on demand).\n\n"
           % ", ".join("`%s`" % t for t in tech_names))
    md += ("What the model does not say: leakage is each table's mW per allocated unit for the whole run, idle "
           "or not (tech-7nm-literature's is an unverified 20 mW/mm² rule, which tech-7nm-rtl reuses); a channel is "
           "one network hop (no placement) and HBM energy is per byte (no row activations); the memory units of a "
           "run are whole 512 KiB units, at least one per buffer, off-chip load or store, so the run's memory area "
           "follows the node count more than the bytes; at batches below 64 the "
           "coarse-grained attention graph builds only the regions that receive requests (16 per region), so its "
           "fabric is smaller than the dynamic one's (Fig. 15 area rows); the attention layer is one KV head group "
           "of one layer, its energy per token that group's.\n\n")
    for tech in tech_names:
        md += "## Comparisons, %s\n\n" % tech
        md += common.md_table(
            ["optimization", "comparison", "cycles", "energy/token", "saved: energy/token", "leakage", "dynamic",
             "area", "compute area", "memory area, run", "memory area, figure"],
            [[c["optimization"], c["comparison"], "%.2fx" % c["cycle_ratio"], "%.2fx" % c["energy_per_token_ratio"],
              pct(c["energy_per_token_saved"]), pct(c["static_energy_saved"]), pct(c["dynamic_energy_saved"]),
              pct(c["area_saved"]), pct(c["compute_area_saved"]), pct(c["memory_area_saved"]),
              pct(c["figure_memory_area_saved"])] for c in comparisons if c["tech"] == tech])
        md += "\n"
    md += "All points:\n\n"
    md += common.md_table(
        ["tech", "point", "cycles", "tokens", "energy/token [µJ]", "leakage share", "HBM share", "largest actions",
         "power [W]", "area [mm²]", "compute units [mm²]", "memory units [mm²]", "memory, figure [mm²]", "wall [s]"],
        [[r["tech"], r["point"], r["cycles"], r["tokens"], "%.2f" % (r["pj_per_token"] / 1e6), pct(r["static_share"]),
          pct(r["hbm_share"]), r["largest_actions"], "%.1f" % r["average_power_w"], "%.1f" % r["area_mm2"],
          "%.1f" % r["compute_units_mm2"], "%.1f" % r["memory_units_mm2"],
          "-" if r["figure_memory_mm2"] == "" else "%.1f" % r["figure_memory_mm2"], r["wall_s"]] for r in rows])
    md += "\nTotal wall time: %.1f s for %d runs.\n" % (total_s, len(rows))
    return md


def main():
    args = common.arg_parser(__doc__).parse_args()
    os.makedirs(args.out, exist_ok=True)
    exe = common.stepsim_binary(args.build_dir)
    points, comps = plan()
    tech_names = techs()
    t0 = time.time()
    rows = [measure(exe, key, optimization, cfg, static_alloc, tech)
            for tech in tech_names for key, optimization, cfg, static_alloc in points]
    total = time.time() - t0
    comparisons = [c for tech in tech_names for c in compare(rows, comps, tech)]
    base = os.path.join(args.out, "energy_claims")
    common.write_csv(base + ".csv", rows, list(rows[0].keys()))
    common.write_csv(base + "_comparisons.csv", comparisons, list(comparisons[0].keys()))
    plot(base + ".png", comparisons, tech_names)
    md = markdown(rows, comparisons, tech_names, total)
    with open(base + ".md", "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
