#!/usr/bin/python3
"""Issue 38, validation: the layers' cycles under the DRAM-level HBM model against the fixed one.

Every layer of `stepsim layers` at its defaults (`stepsim build LAYER`), and every graph of
graphs/examples/ that moves bytes off chip, runs in timing mode with its default preset under
`hbm.model=fixed` and `hbm.model=dram` (everything else as the preset has it). The table gives
both cycle counts and their ratio, the off-chip bandwidth use of both, and from the dram run's
`offchip.dram`: the row hit / miss / conflict shares, the controller queue's mean occupancy and
how often it was full, and the channel balance (the least and most bytes per cycle of a channel).
Writes DIR/dram_layers.csv and DIR/dram_layers.md.

    /usr/bin/python3 scripts/validation/dram_layers.py --stepsim PATH [--out DIR] [--timeout S]
"""
import argparse
import csv
import glob
import json
import os
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def layers(exe):
    out = subprocess.run([exe, "layers"], stdout=subprocess.PIPE, text=True, check=True).stdout
    return [line.strip() for line in out.splitlines() if line and not line.startswith(" ")]


def run(exe, graph, model, tmp, timeout):
    report = os.path.join(tmp, "r.json")
    if os.path.exists(report):
        os.remove(report)
    t0 = time.time()
    try:
        res = subprocess.run([exe, "run", graph, "--report", report, "--set", "hbm.model=" + model],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout after %d s" % timeout}
    wall = time.time() - t0
    if res.returncode:
        return {"status": "failed: " + (res.stderr.strip().splitlines() or ["?"])[-1]}
    with open(report) as f:
        rep = json.load(f)
    rep["process_wall_s"] = wall
    rep["status"] = "ok"
    return rep


def row_of(name, fixed, dram):
    row = {"graph": name, "status": fixed["status"] if fixed["status"] != "ok" else dram["status"]}
    if row["status"] != "ok":
        return row
    row.update({"fixed_cycles": fixed["cycles"], "dram_cycles": dram["cycles"],
                "ratio": round(dram["cycles"] / fixed["cycles"], 3),
                "offchip_bytes": fixed["offchip"]["read_bytes"] + fixed["offchip"]["write_bytes"],
                "fixed_bw_use": round(fixed["offchip"]["bandwidth_utilization"], 4),
                "dram_bw_use": round(dram["offchip"]["bandwidth_utilization"], 4),
                "fixed_wall_s": round(fixed["wall_seconds"], 4), "dram_wall_s": round(dram["wall_seconds"], 4)})
    d = dram["offchip"]["dram"]
    n = d["requests"] or 1
    per_channel = [c["bytes_per_cycle"] for c in d["channels"]]
    row.update({"requests": d["requests"], "row_hit": round(d["row_hits"] / n, 4),
                "row_miss": round(d["row_misses"] / n, 4), "row_conflict": round(d["row_conflicts"] / n, 4),
                "refresh_stall_cycles": d["refresh_stall_cycles"],
                "queue_depth": d["queue"]["depth"], "queue_mean": round(d["queue"]["mean_occupancy"], 2),
                "queue_full": round(d["queue"]["full_fraction"], 4), "max_pending": d["queue"]["max_pending"],
                "channels": len(per_channel), "channel_min_Bpc": round(min(per_channel), 2),
                "channel_max_Bpc": round(max(per_channel), 2)})
    return row


def pct(x):
    return "%.1f %%" % (100.0 * x)


def markdown(rows, exe, wall):
    md = "# Layers under the DRAM-level HBM model\n\n"
    md += ("Produced by `/usr/bin/python3 scripts/validation/dram_layers.py --stepsim %s`: every layer at its "
           "defaults and every graphs/examples graph that moves bytes off chip, default preset, timing mode, "
           "`--set hbm.model=fixed` and `--set hbm.model=dram`.\n\n" % exe)
    head = ["graph", "fixed [cycles]", "dram [cycles]", "dram / fixed", "bandwidth use fixed / dram",
            "rows hit / miss / conflict", "queue depth: mean / full", "channels: min-max [B/cycle]",
            "wall fixed / dram [s]"]
    md += "| " + " | ".join(head) + " |\n|" + "|".join("---" for _ in head) + "|\n"
    for r in rows:
        if r["status"] != "ok":
            md += "| %s | %s |%s\n" % (r["graph"], r["status"], " |" * (len(head) - 2))
            continue
        md += "| " + " | ".join(str(x) for x in [
            r["graph"], r["fixed_cycles"], r["dram_cycles"], "%.3f" % r["ratio"],
            "%s / %s" % (pct(r["fixed_bw_use"]), pct(r["dram_bw_use"])),
            "%s / %s / %s" % (pct(r["row_hit"]), pct(r["row_miss"]), pct(r["row_conflict"])),
            "%d: %.1f / %s" % (r["queue_depth"], r["queue_mean"], pct(r["queue_full"])),
            "%d x %.1f-%.1f" % (r["channels"], r["channel_min_Bpc"], r["channel_max_Bpc"]),
            "%.3f / %.3f" % (r["fixed_wall_s"], r["dram_wall_s"])]) + " |\n"
    return md + "\nTotal wall time: %.1f s.\n" % wall


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stepsim", required=True, help="the stepsim binary")
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "figures"), help="output directory")
    p.add_argument("--timeout", type=int, default=900, help="seconds per run")
    args = p.parse_args()
    exe = os.path.abspath(args.stepsim)
    t0 = time.time()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        graphs = []
        for layer in layers(exe):
            path = os.path.join(tmp, layer + ".yaml")
            subprocess.run([exe, "build", layer, "-o", path], check=True, stdout=subprocess.DEVNULL)
            graphs.append((layer, path))
        for path in sorted(glob.glob(os.path.join(ROOT, "graphs", "examples", "*.yaml"))):
            graphs.append(("examples/" + os.path.basename(path), path))
        for name, path in graphs:
            fixed = run(exe, path, "fixed", tmp, args.timeout)
            if fixed["status"] == "ok" and not fixed["offchip"]["read_bytes"] + fixed["offchip"]["write_bytes"]:
                continue  # no off-chip traffic: the memory model cannot change it
            dram = run(exe, path, "dram", tmp, args.timeout) if fixed["status"] == "ok" else fixed
            rows.append(row_of(name, fixed, dram))
            print(rows[-1], flush=True)
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, "dram_layers")
    fields = []
    for r in rows:
        fields += [k for k in r if k not in fields]
    with open(base + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    md = markdown(rows, args.stepsim, time.time() - t0)
    with open(base + ".md", "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
