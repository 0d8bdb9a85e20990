#!/usr/bin/python3
"""The Qwen3 MoE design-space exploration (graphs/dse/qwen3_moe.yaml) beside the static tilings of
the paper's Figs. 9/10 (batch 64: tile_n 8, 16, 32, 64; tile_f 64; 4096 FLOPs/cycle per node;
the step-artifact hardware).

Two searches: the space as it is (hardware and schedule together, NSGA-II) into OUT/search, and
every schedule of the space on the static tiles' own hardware (32 HBM channels, 64 B/cycle
on-chip; a grid) into OUT/schedules. For every static tile it finds the fastest trial of each that
needs no more on-chip memory and no more allocated compute than the static tile, and writes
OUT/compare.md, OUT/compare.csv, and OUT/search/pareto.png with the static tiles drawn in.

    PYTHONPATH=build/python /usr/bin/python3 scripts/dse/qwen3_moe.py --out /tmp/dse-qwen3 --workers local:2
    ... --workers slurm:2        (on a Slurm login node, OUT on a shared filesystem)
"""
import argparse
import os
import sys
import time

import stepsim
from stepsim.design import explore
from stepsim.design.evaluate import run_metrics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPACE = os.path.join(ROOT, "graphs", "dse", "qwen3_moe.yaml")
STATIC_TILES = [8, 16, 32, 64]
BASE_HARDWARE = {"hbm.channels": 32, "onchip_bw": 64}  # step-artifact's, the static tiles' hardware


def static_point(tile_n):
    g = stepsim.layers.moe(model="qwen", batch=64, tile_n=tile_n, tile_f=64, compute_bw=4096)
    m = run_metrics(g.run(set={"onchip_requirement_model": "artifact"}))
    return dict(m, tile_n=tile_n)


def schedules_space(data):
    """The space's schedules on the static tiles' hardware, every one of them (a grid)."""
    d = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    d["name"] = data["name"] + "-schedules"
    d["parameters"] = {k: v for k, v in data["parameters"].items() if k not in BASE_HARDWARE}
    d["set"] = dict(data.get("set", {}), **BASE_HARDWARE)
    d["search"] = {"method": "grid"}
    return d


def best_within(rows, ref):
    """The fastest feasible trial using no more on-chip memory and compute than `ref`."""
    fit = [r for r in rows if r["state"] == "ok" and r["onchip_bytes"] <= ref["onchip_bytes"]
           and r["allocated_flops_per_cycle"] <= ref["allocated_flops_per_cycle"]]
    return min(fit, key=lambda r: (r["cycles"], r["trial"])) if fit else None


def describe(r):
    hw = ", %s HBM ch, %s B/cycle" % (r["hbm.channels"], r["onchip_bw"]) if "hbm.channels" in r else ""
    return "#%d: tile_n %s, tile_f %s, %s FLOPs/cycle%s" % (r["trial"], r["tile_n"], r["tile_f"], r["compute_bw"], hw)


def compare(rows, grid_rows, statics):
    lines, table = [], []
    head = ("| static tile_n | static cycles | static on-chip [B] (run / allocated up front) | static compute "
            "[FLOPs/cycle] | search (hardware and schedule): fastest trial within both | its cycles | speedup | "
            "schedules on the static hardware: fastest within both | its cycles | speedup |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    for st in statics:
        cells = ["%d" % st["tile_n"], "{:,}".format(st["cycles"]),
                 "{:,} / {:,}".format(st["onchip_bytes"], int(st["onchip_static_bytes"])),
                 "{:,}".format(st["allocated_flops_per_cycle"])]
        row = dict(tile_n=st["tile_n"], static_cycles=st["cycles"], static_onchip_bytes=st["onchip_bytes"],
                   static_onchip_static_bytes=st["onchip_static_bytes"],
                   static_allocated_flops_per_cycle=st["allocated_flops_per_cycle"])
        for label, candidates in (("search", rows), ("schedules", grid_rows)):
            b = best_within(candidates, st)
            if b is None:
                cells += ["none", "", ""]
                continue
            cells += [describe(b), "{:,}".format(b["cycles"]), "%.3f" % (st["cycles"] / b["cycles"])]
            row.update({label + "_trial": b["trial"], label + "_cycles": b["cycles"],
                        label + "_speedup": st["cycles"] / b["cycles"]})
        lines.append("| " + " | ".join(cells) + " |")
        table.append(row)
    return head + "\n" + "\n".join(lines) + "\n", table


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workers", default="local:2")
    ap.add_argument("--trials", type=int)
    a = ap.parse_args()
    import yaml

    with open(SPACE) as f:
        data = yaml.safe_load(f)
    t0 = time.time()
    s, rows = explore.run(SPACE, os.path.join(a.out, "search"), workers=a.workers, trials=a.trials)
    wall = time.time() - t0
    t1 = time.time()
    gs, grid_rows = explore.run(schedules_space(data), os.path.join(a.out, "schedules"), workers=a.workers)
    grid_wall = time.time() - t1
    statics = [static_point(t) for t in STATIC_TILES]
    reference = {"static %d" % st["tile_n"]: st for st in statics}
    explore.write_outputs(s, rows, os.path.join(a.out, "search"), reference)  # the static tiles drawn in
    explore.write_outputs(gs, grid_rows, os.path.join(a.out, "schedules"), reference)
    md, table = compare(rows, grid_rows, statics)
    explore.write_csv(os.path.join(a.out, "compare.csv"), table)
    head = "# Qwen3 MoE design-space exploration beside the static tilings of Figs. 9/10\n\n"
    head += "`%s`:\n\n" % " ".join(["scripts/dse/qwen3_moe.py"] + sys.argv[1:])
    head += "- " + run_line("search (hardware and schedule, NSGA-II)", s, rows, wall, a.workers)
    head += "- " + run_line("every schedule on the static tiles' hardware (grid)", gs, grid_rows, grid_wall, a.workers)
    with open(os.path.join(a.out, "compare.md"), "w") as f:
        f.write(head + "\n" + md)
    print(head + "\n" + md)
    print(explore.summary(s, rows, os.path.join(a.out, "search")))


def run_line(what, s, rows, wall, workers):
    ran = sum(r["worker"] != "cache" for r in rows)
    counts = {k: sum(r["state"] == k for r in rows) for k in explore.STATES}
    return ("%s, workers %s: %d trials (%d ok, %d infeasible, %d failed; %d simulated, %d repeats of a point "
            "already run), %.0f s wall, %.2f trials/s, %.1f s of simulation; front: %d trials\n"
            % (what, workers, len(rows), counts["ok"], counts["infeasible"], counts["failed"], ran, len(rows) - ran,
               wall, len(rows) / wall, sum(r["wall_seconds"] for r in rows), len(explore.pareto_front(s, rows))))


if __name__ == "__main__":
    main()
