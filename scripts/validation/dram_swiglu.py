#!/usr/bin/python3
"""Issue 38, validation: the 15 SwiGLU HDL-validation points under the DRAM-level HBM model.

SwiGLU expert, batch 64, hidden 256, intermediate 512, schedule mn_mk, tiles (tile_b, 256,
tile_f) for tile_b in 16|32|64 and tile_f in 16|32|64|128|256, `hdl-validation` preset, timing
mode, tensors stored in 16 x 16 blocks (`--param block=16`, as the HDL fabric stores its tiles
and as scripts/validation/swiglu_units.py runs them). Every point runs under four memory
configurations (CONFIGS below):

  fixed    the preset as it is (hbm.model fixed): docs/validation.md's "model" column;
  dram     hbm.model=dram with the preset's HBM keys (8 channels of HBM2_2Gbps, 64-B requests);
  authors  hbm.model=dram configured as the authors' HDL run (Ramulator 2 behind the Bluespec
           fabric, docs/hbm-dram-validation.md, "The authors' memory configuration"): one
           512-B request per fabric request, all of them on one channel, 4096-B rows (8 requests
           a row), a 64-request queue;
  authors8k  the same with 8192-B rows (16 requests a row), the other reading of the unknown
           Ramulator channel width.

The table gives cycles, the row hit rate and the off-chip bandwidth use of each, the
cycle-accurate units' cycles (docs/figures/swiglu_units.csv, the `units_cycles` column: our HDL,
co-simulated against the `fixed` model) and, for tile_b 16, the authors' HDL cycles
(AUTHORS_HDL below), with the error of each configuration against them; a second table gives,
per point, the DRAM detail of `dram` and `authors` (row misses and conflicts, the read/write mix,
the channel balance, the queue). Writes DIR/dram_swiglu.csv and DIR/dram_swiglu.md.

    /usr/bin/python3 scripts/validation/dram_swiglu.py --stepsim PATH [--out DIR]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIZES = {"batch": 64, "hidden": 256, "inter": 512, "block": 16}
POINTS = [(tb, tf) for tb in (16, 32, 64) for tf in (16, 32, 64, 128, 256)]
AUTHORS_KEYS = {"hbm.model": "dram", "hbm.channels": 1, "hbm.request_bytes": 512, "hbm.dram.row_bytes": 4096,
                "hbm.dram.queue_depth": 64}
CONFIGS = {
    "fixed": {},
    "dram": {"hbm.model": "dram"},
    "authors": AUTHORS_KEYS,
    "authors8k": dict(AUTHORS_KEYS, **{"hbm.dram.row_bytes": 8192}),
}
# The authors' HDL cycles: anonymous7484/step-artifact-eval, dse_results.csv of its first commit
# c2a4275 (only tile_b 16 survives; reference-simulator-notes.md §6, §9), "cycles (HDL)".
AUTHORS_HDL = {(16, 16): 36259, (16, 32): 30432, (16, 64): 27859, (16, 128): 29112, (16, 256): 25998}
# ... and its off-chip traffic, "off_chip_mem_traffic(MB) (HDL)" = (reads + writes) x 512 B / 1e6: the HDL
# moves 2.0-2.6x our requests (its tiles are 4 B per element), so its bandwidth use is compared, against
# the peak of the one Ramulator channel its requests reach: 2 pseudo-channels x 512 B per nBL = 4 tCK,
# one tCK per fabric cycle = 256 B/cycle.
AUTHORS_HDL_MB = {(16, 16): 8.418816, (16, 32): 7.366144, (16, 64): 6.839808, (16, 128): 6.57664, (16, 256): 6.445056}
AUTHORS_HDL_PEAK = 256.0


def units_cycles(path):
    """The cycle-accurate units' cycles per (tile_b, tile_f), from swiglu_units.py's CSV."""
    with open(path) as f:
        return {(int(r["tile_b"]), int(r["tile_f"])): int(r["units_cycles"]) for r in csv.DictReader(f)
                if r["units_cycles"]}


def run_point(exe, graph, sets, tmp):
    report = os.path.join(tmp, "r.json")
    cmd = [exe, "run", graph, "--preset", "hdl-validation", "--report", report]
    for k, v in sets.items():
        cmd += ["--set", "%s=%s" % (k, v)]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode:
        sys.exit("stepsim run failed (%s): %s" % (" ".join(cmd), res.stderr.strip()))
    with open(report) as f:
        return json.load(f)


def dram_detail(rep):
    """Row classes, queue and channel balance of a dram run (None under fixed)."""
    d = rep["offchip"].get("dram")
    if d is None:
        return None
    n = d["requests"] or 1
    per_channel = [c["bytes_per_cycle"] for c in d["channels"]]
    busy = [c["requests"] for c in d["channels"] if c["requests"]]
    return {"requests": d["requests"], "hit": d["row_hits"] / n, "miss": d["row_misses"] / n,
            "conflict": d["row_conflicts"] / n, "activates": d["activates"], "refreshes": d["refreshes"],
            "queue_mean": d["queue"]["mean_occupancy"], "queue_full": d["queue"]["full_fraction"],
            "max_pending": d["queue"]["max_pending"], "channels_used": len(busy),
            "channel_min_Bpc": min(per_channel), "channel_max_Bpc": max(per_channel)}


def error(model, ref):
    return "%+.1f %%" % (100.0 * (model - ref) / ref) if ref else "-"


def build(exe, tb, tf, path):
    cmd = [exe, "build", "swiglu", "-o", path, "--param", "tile_b=%d" % tb, "--param", "tile_f=%d" % tf]
    for k, v in SIZES.items():
        cmd += ["--param", "%s=%s" % (k, v)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def measure(exe, units):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for tb, tf in POINTS:
            graph = os.path.join(tmp, "g.yaml")
            build(exe, tb, tf, graph)
            row = {"tile_b": tb, "tile_h": 256, "tile_f": tf, "units_cycles": units.get((tb, tf), ""),
                   "authors_hdl_cycles": AUTHORS_HDL.get((tb, tf), ""), "authors_hdl_bw_use": ""}
            if (tb, tf) in AUTHORS_HDL:
                row["authors_hdl_bw_use"] = round(AUTHORS_HDL_MB[(tb, tf)] * 1e6 / AUTHORS_HDL[(tb, tf)]
                                                  / AUTHORS_HDL_PEAK, 4)
            for name, sets in CONFIGS.items():
                rep = run_point(exe, graph, sets, tmp)
                row[name + "_cycles"] = rep["cycles"]
                row[name + "_bw_use"] = round(rep["offchip"]["bandwidth_utilization"], 4)
                row[name + "_bytes"] = rep["offchip"]["read_bytes"] + rep["offchip"]["write_bytes"]
                row[name + "_write_bytes"] = rep["offchip"]["write_bytes"]
                det = dram_detail(rep)
                for k, v in (det or {}).items():
                    row["%s_%s" % (name, k)] = round(v, 4) if isinstance(v, float) else v
            rows.append(row)
    return rows


def pct(x):
    return "%.1f %%" % (100.0 * x)


def main_table(rows):
    head = ["tiles (b, h, f)"]
    for name in CONFIGS:
        head += ["%s [cycles]" % name]
    head += ["units [cycles]", "authors' HDL [cycles]"]
    for name in CONFIGS:
        head += ["%s vs units" % name]
    for name in CONFIGS:
        head += ["%s vs HDL" % name]
    head += ["row hits dram / authors", "bandwidth use fixed / dram / authors / authors' HDL"]
    out = []
    for r in rows:
        line = ["(%d, 256, %d)" % (r["tile_b"], r["tile_f"])]
        line += [r[n + "_cycles"] for n in CONFIGS]
        line += [r["units_cycles"], r["authors_hdl_cycles"] or "-"]
        line += [error(r[n + "_cycles"], r["units_cycles"]) for n in CONFIGS]
        line += [error(r[n + "_cycles"], r["authors_hdl_cycles"]) for n in CONFIGS]
        line += ["%s / %s" % (pct(r["dram_hit"]), pct(r["authors_hit"])),
                 " / ".join([pct(r[n + "_bw_use"]) for n in ("fixed", "dram", "authors")]
                            + [pct(r["authors_hdl_bw_use"]) if r["authors_hdl_bw_use"] else "-"])]
        out.append(line)
    return head, out


def detail_table(rows):
    head = ["tiles (b, h, f)", "config", "requests", "hit / miss / conflict", "activates", "writes [% of bytes]",
            "channels used", "channel min-max [B/cycle]", "queue mean / full / max"]
    out = []
    for r in rows:
        for n in ("dram", "authors"):
            out.append(["(%d, 256, %d)" % (r["tile_b"], r["tile_f"]), n, r[n + "_requests"],
                        "%s / %s / %s" % (pct(r[n + "_hit"]), pct(r[n + "_miss"]), pct(r[n + "_conflict"])),
                        r[n + "_activates"], pct(r[n + "_write_bytes"] / r[n + "_bytes"]), r[n + "_channels_used"],
                        "%.1f-%.1f" % (r[n + "_channel_min_Bpc"], r[n + "_channel_max_Bpc"]),
                        "%.1f / %s / %d" % (r[n + "_queue_mean"], pct(r[n + "_queue_full"]), r[n + "_max_pending"])])
    return head, out


def md_table(head, rows):
    out = "| " + " | ".join(head) + " |\n|" + "|".join("---" for _ in head) + "|\n"
    return out + "".join("| " + " | ".join(str(x) for x in r) + " |\n" for r in rows)


def summary(rows):
    lines = []
    for n in CONFIGS:
        errs = sorted(abs(r[n + "_cycles"] - r["units_cycles"]) / r["units_cycles"] for r in rows if r["units_cycles"])
        hdl = [abs(r[n + "_cycles"] - r["authors_hdl_cycles"]) / r["authors_hdl_cycles"] for r in rows
               if r["authors_hdl_cycles"]]
        lines.append("- `%s`: |error| against the units median %.1f %%, max %.1f %%; against the authors' HDL "
                     "(tile_b 16) mean %.1f %%, max %.1f %%." % (n, 100 * errs[len(errs) // 2], 100 * errs[-1],
                                                               100 * sum(hdl) / len(hdl), 100 * max(hdl)))
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stepsim", required=True, help="the stepsim binary")
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "figures"), help="output directory")
    p.add_argument("--units-csv", default=os.path.join(ROOT, "docs", "figures", "swiglu_units.csv"),
                   help="the units' cycles (scripts/validation/swiglu_units.py)")
    args = p.parse_args()
    t0 = time.time()
    rows = measure(os.path.abspath(args.stepsim), units_cycles(args.units_csv))
    wall = time.time() - t0
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, "dram_swiglu")
    fields = list(rows[0].keys())
    with open(base + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    md = "# SwiGLU HDL-validation points under the DRAM-level HBM model\n\n"
    md += ("Produced by `/usr/bin/python3 scripts/validation/dram_swiglu.py --stepsim %s` (timing mode, "
           "`hdl-validation`, tensors in 16 x 16 blocks). Configurations: %s.\n\n"
           % (args.stepsim, "; ".join("`%s` = %s" % (n, " ".join("--set %s=%s" % kv for kv in s.items()) or "preset")
                                      for n, s in CONFIGS.items())))
    md += md_table(*main_table(rows)) + "\n" + summary(rows) + "\n"
    md += md_table(*detail_table(rows))
    md += "\nTotal wall time: %.1f s for %d runs.\n" % (wall, len(rows) * len(CONFIGS))
    with open(base + ".md", "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
