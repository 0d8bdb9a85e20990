#!/usr/bin/python3
"""Issue 4, item 6 (the small MoE): the approximate model against the cycle-accurate units on the
MoE layer with dynamic tiling (graphs/layers/moe.cpp, tile_n = 0: Partition/Reassemble routing,
dynamic [P_e x 16] tiles) on real Mixtral-8x7B routing traces, `hdl-validation` preset.

The layer is scaled to the T = 16 units: hidden 16, weights in [16 x 16] tiles (tile_f 16), so
every expert's packed tile [P_e x 16] is a dynamic tile of the units (P_e <= 16: batch 16 or 32).
For every point (trace, batch, intermediate):
  1. `stepsim build moe ...` writes the graph;
  2. `stepsim run ... --impl rtl|hls --cosim-dir D` runs it approximately (the model) and as a
     co-simulation with every node that has a unit on it (all but the two routing-trace sources):
     payload streams compared channel by channel, y bit for bit, cycles;
  3. the table gives the cycle error of the model against the units, the traffic of both, and
     which nodes had no unit.
Pearson correlation over the points and the wall time close the table.

    /usr/bin/python3 scripts/validation/moe_units.py [--impl rtl|hls] [--points all|reduced]
                                                     [--out DIR] [--build-dir DIR]

Writes DIR/moe_units.csv and DIR/moe_units.md (default docs/figures/). Exit status 1 if a point
fails to run or differs; the failing point's row says why.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "figures"))
import common  # noqa: E402
import units_vs_model  # noqa: E402  (this folder)

TRACES = {
    "b64": "shared:traces/moe/mixtral8x7b_b64_iter008_layer010.csv",
    "b1024": "shared:traces/moe/mixtral8x7b_b1024_iter019_layer009.csv",
}
POINTS_ALL = [(t, b, i) for t in ("b64", "b1024") for b in (16, 32) for i in (32, 64)]
POINTS_REDUCED = [("b64", 16, 32)]


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def point(exe, trace, batch, inter, impl, tmp):
    row = {"trace": trace, "batch": batch, "inter": inter}
    d = os.path.join(tmp, "p_%s_%d_%d" % (trace, batch, inter))
    os.makedirs(d)
    graph = os.path.join(d, "moe.yaml")
    r = run([exe, "build", "moe", "-o", graph, "--param", "model=mixtral", "--param", "batch=%d" % batch,
             "--param", "hidden=16", "--param", "inter=%d" % inter, "--param", "tile_n=0", "--param", "tile_f=16",
             "--param", "trace=" + TRACES[trace]])
    if r.returncode:
        row["status"] = "build failed: " + r.stderr.strip()
        return row
    t0 = time.time()
    r = run([exe, "run", graph, "--preset", "hdl-validation", "--mode", "functional", "--impl", impl,
             "--cosim-dir", d + "/cosim", "--out", d + "/units", "--report", d + "/units.json"])
    row["cosim_wall_s"] = round(time.time() - t0, 3)
    if not os.path.exists(d + "/cosim/report.md"):
        row["status"] = "co-simulation failed: " + ((r.stderr.strip() or r.stdout.strip()).splitlines() or ["?"])[-1]
        return row
    md = open(d + "/cosim/report.md").read()
    m = re.search(r"Total cycles: approx (\d+), co-simulation (\d+)", md)
    row["approx_cycles"], row["units_cycles"] = int(m.group(1)), int(m.group(2))
    # Identical on every channel, or the same beats reordered downstream of an arrival-order
    # decision (the Reassemble serves the chunk that arrives first): the report's verdict.
    row["payload"] = ("identical" if "identical on every channel" in md else
                      "reordered (arrival order)" if "Verdict: equivalent" in md else "differs")
    row["y_bit_identical"] = "y identical" in md
    nodes = [n for n in re.findall(r"^\| (\S+) \| (\w+) \| (\w+)( \(no unit\))? \|", md, re.M)
             if n[0] not in ("node", "channel")]
    row["nodes_on_units"] = sum(1 for n in nodes if n[2] != "approx")
    row["nodes_approx"] = " ".join("%s(%s)" % (n[0], n[1]) for n in nodes if n[2] == "approx" and n[1] != "Source")
    # The approximate twin's traffic: the same graph run approximately.
    a = run([exe, "run", graph, "--preset", "hdl-validation", "--mode", "timing", "--report", d + "/approx.json"])
    if a.returncode:
        row["status"] = "approximate run failed: " + a.stderr.strip()
        return row
    approx = json.load(open(d + "/approx.json"))
    units = json.load(open(d + "/units.json"))
    row["approx_read_B"] = approx["offchip"]["read_bytes"]
    row["units_read_B"] = units["offchip"]["read_bytes"]
    row["approx_written_B"] = approx["offchip"]["write_bytes"]
    row["units_written_B"] = units["offchip"]["write_bytes"]
    row["error_pct"] = round(100.0 * (row["approx_cycles"] - row["units_cycles"]) / row["units_cycles"], 2)
    same_traffic = row["approx_read_B"] == row["units_read_B"] and row["approx_written_B"] == row["units_written_B"]
    row["status"] = ("payload differs" if row["payload"] == "differs" else
                     "y differs" if not row["y_bit_identical"] else
                     "traffic differs" if not same_traffic else
                     "some nodes without a unit" if row["nodes_approx"] else "ok")
    return row


FIELDS = ["trace", "batch", "inter", "approx_cycles", "units_cycles", "error_pct", "approx_read_B", "units_read_B",
          "approx_written_B", "units_written_B", "payload", "y_bit_identical", "nodes_on_units",
          "nodes_approx", "cosim_wall_s", "status"]


def main():
    p = common.arg_parser(__doc__)
    p.add_argument("--impl", default="rtl", choices=["rtl", "hls"])
    p.add_argument("--points", default="all", choices=["all", "reduced"])
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    exe = common.stepsim_binary(args.build_dir)
    rows = []
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for trace, batch, inter in (POINTS_ALL if args.points == "all" else POINTS_REDUCED):
            row = point(exe, trace, batch, inter, args.impl, tmp)
            print("(%s, batch %d, inter %d): %s" % (trace, batch, inter, row["status"]), file=sys.stderr)
            rows.append(row)
    total = time.time() - t0
    base = os.path.join(args.out, "moe_units")
    units_vs_model.write_csv(base + ".csv", rows, FIELDS)
    md = "# Approximate model vs cycle-accurate units: the small MoE\n\n"
    md += ("Produced by `/usr/bin/python3 scripts/validation/moe_units.py --impl %s --points %s`. The MoE layer "
           "with dynamic tiling (`stepsim build moe --param model=mixtral --param hidden=16 --param tile_n=0 "
           "--param tile_f=16`, batch and intermediate size as listed) on the Mixtral-8x7B routing trace named "
           "(b64: `%s`, b1024: `%s`, its first `batch` rows), `hdl-validation` preset. approx: the graph in the "
           "approximate model; units: the same graph co-simulated with every node but the two routing-trace "
           "sources on its cycle-accurate unit (`--impl %s`); error = (approx - units) / units. Traffic in bytes "
           "of whole requests. Payload streams: identical on every channel, or the same beats in another order "
           "downstream "
           "of the Reassemble (an arrival-order decision: it serves the expert whose chunk arrives first), with y "
           "still bit-identical.\n\n" % (args.impl, args.points, TRACES["b64"], TRACES["b1024"], args.impl))
    md += common.md_table(
        ["trace", "batch", "inter"] + units_vs_model.POINT_HEADERS +
        ["nodes on units", "payload streams", "y bit-identical", "status"],
        [[r["trace"], r["batch"], r["inter"]] + units_vs_model.point_cells(r) +
         [r.get("nodes_on_units", ""), r.get("payload", ""), r.get("y_bit_identical", ""),
          units_vs_model.status_cell(r)]
         for r in rows])
    md += units_vs_model.summary_md(rows, total)
    with open(base + ".md", "w") as f:
        f.write(md)
    print(md)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
