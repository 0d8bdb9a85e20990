#!/usr/bin/python3
"""Issue 4, item 6: the approximate model against the cycle-accurate units on the paper's HDL
validation workload (SwiGLU, batch 64, hidden 256, intermediate 512, schedule mn_mk, tiles
(tile_b, 256, tile_f) for tile_b in 16|32|64 and tile_f in 16|32|64|128|256, `hdl-validation`
preset, tensors stored in 16 x 16 blocks).

For every point:
  1. the logical graph (`stepsim build swiglu ... --param block=16`) runs approximately, in
     functional mode: the model's prediction (cycles, off-chip bytes, y);
  2. the down-tiled graph (`stepsim downtile --tile 16`: the same program on 16 x 16 tiles, what
     the units execute) runs as a co-simulation with every node that has a unit on it (`--impl`),
     beside its all-approximate run: payload streams compared channel by channel, cycles, and y
     against the logical graph's (bit for bit: the down-tiler keeps the logical summation order);
  3. the table gives the cycle error of the logical model against the units, the traffic of both,
     whether y is bit-identical, and which nodes had no unit (they ran approximately).
Pearson correlation over the points and the wall time close the table.

    /usr/bin/python3 scripts/validation/swiglu_units.py [--impl rtl|hls] [--points all|reduced]
                                                        [--out DIR] [--build-dir DIR]

Writes DIR/swiglu_units.csv and DIR/swiglu_units.md (default docs/figures/). Exit status 1 if a
point fails to run; the failing point's row says why.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "figures"))
import common  # noqa: E402
import units_vs_model  # noqa: E402  (this folder)

POINTS_ALL = [(tb, tf) for tb in (16, 32, 64) for tf in (16, 32, 64, 128, 256)]
POINTS_REDUCED = [(16, 64)]
SIZES = {"batch": 64, "hidden": 256, "inter": 512}


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def point(exe, tb, tf, impl, tmp):
    row = {"tile_b": tb, "tile_h": 256, "tile_f": tf}
    d = os.path.join(tmp, "p%d_%d" % (tb, tf))
    os.makedirs(d)
    logical, blocks = os.path.join(d, "logical.yaml"), os.path.join(d, "blocks.yaml")
    cmd = [exe, "build", "swiglu", "-o", logical, "--param", "block=16", "--param", "tile_b=%d" % tb,
           "--param", "tile_f=%d" % tf]
    for k, v in SIZES.items():
        cmd += ["--param", "%s=%s" % (k, v)]
    for c in (cmd, [exe, "downtile", logical, "--tile", "16", "-o", blocks]):
        r = run(c)
        if r.returncode:
            row["status"] = "build failed: " + r.stderr.strip()
            return row
    # 1. The model: the logical graph, approximate.
    t0 = time.time()
    r = run([exe, "run", logical, "--preset", "hdl-validation", "--mode", "functional", "--out", d + "/logical",
             "--report", d + "/logical.json"])
    row["approx_wall_s"] = round(time.time() - t0, 3)
    if r.returncode:
        row["status"] = "approximate run failed: " + r.stderr.strip()
        return row
    rep = json.load(open(d + "/logical.json"))
    row["approx_cycles"] = rep["cycles"]
    row["approx_read_B"] = rep["offchip"]["read_bytes"]
    row["approx_written_B"] = rep["offchip"]["write_bytes"]
    # 2. The units: the down-tiled graph co-simulated (and its all-approximate twin).
    t0 = time.time()
    r = run([exe, "run", blocks, "--preset", "hdl-validation", "--mode", "functional", "--impl", impl,
             "--cosim-dir", d + "/cosim", "--out", d + "/units", "--report", d + "/units.json"])
    row["cosim_wall_s"] = round(time.time() - t0, 3)
    if r.returncode and not os.path.exists(d + "/units.json"):
        row["status"] = "co-simulation failed: " + (r.stderr.strip() or r.stdout.strip()).splitlines()[-1]
        return row
    md = open(d + "/cosim/report.md").read()
    m = re.search(r"Total cycles: approx (\d+), co-simulation (\d+)", md)
    row["blocks_approx_cycles"], row["units_cycles"] = int(m.group(1)), int(m.group(2))
    row["payload_identical"] = "identical on every channel" in md
    nodes = [n for n in re.findall(r"^\| (\S+) \| (\w+) \| (\w+)( \(no unit\))? \|", md, re.M)
             if n[0] not in ("node", "channel")]  # not the tables' header rows
    row["nodes_on_units"] = sum(1 for n in nodes if n[2] != "approx")
    row["nodes_approx"] = " ".join("%s(%s)" % (n[0], n[1]) for n in nodes if n[2] == "approx")
    units = json.load(open(d + "/units.json"))
    row["units_read_B"] = units["offchip"]["read_bytes"]
    row["units_written_B"] = units["offchip"]["write_bytes"]
    # The down-tiled program sums every matmul in the logical k order (sim/transform/downtile.h): the units'
    # y must equal the logical model's bit for bit.
    y_units, y_logical = numpy.load(d + "/units/y.npy"), numpy.load(d + "/logical/y.npy")
    row["y_bit_identical"] = y_units.tobytes() == y_logical.tobytes()
    row["error_pct"] = round(100.0 * (row["approx_cycles"] - row["units_cycles"]) / row["units_cycles"], 2)
    row["status"] = "ok" if row["payload_identical"] and not row["nodes_approx"] else \
        ("payload differs" if not row["payload_identical"] else "some nodes without a unit")
    return row


FIELDS = ["tile_b", "tile_h", "tile_f", "approx_cycles", "units_cycles", "error_pct", "blocks_approx_cycles",
          "approx_read_B", "units_read_B", "approx_written_B", "units_written_B", "payload_identical",
          "y_bit_identical", "nodes_on_units", "nodes_approx", "approx_wall_s", "cosim_wall_s", "status"]


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
        for tb, tf in (POINTS_ALL if args.points == "all" else POINTS_REDUCED):
            row = point(exe, tb, tf, args.impl, tmp)
            print("(%d, 256, %d): %s" % (tb, tf, row["status"]), file=sys.stderr)
            rows.append(row)
    total = time.time() - t0
    base = os.path.join(args.out, "swiglu_units")
    units_vs_model.write_csv(base + ".csv", rows, FIELDS)
    md = "# Approximate model vs cycle-accurate units: SwiGLU (HDL validation workload)\n\n"
    md += ("Produced by `/usr/bin/python3 scripts/validation/swiglu_units.py --impl %s --points %s`. "
           "approx: the logical graph (tiles as listed) in the approximate model; units: the same program "
           "down-tiled to 16 x 16 tiles, co-simulated with every node that has a unit on it (`--impl %s`); "
           "error = (approx - units) / units. Traffic in bytes of whole 64-byte requests. y bit-identical: the "
           "units' y against the logical graph's.\n\n"
           % (args.impl, args.points, args.impl))
    md += common.md_table(
        ["tiles (b, h, f)"] + units_vs_model.POINT_HEADERS + ["payload identical", "y bit-identical", "status"],
        [["(%d, 256, %d)" % (r["tile_b"], r["tile_f"])] + units_vs_model.point_cells(r) +
         [r.get("payload_identical", ""), r.get("y_bit_identical", ""), units_vs_model.status_cell(r)]
         for r in rows])
    md += units_vs_model.summary_md(rows, total)
    with open(base + ".md", "w") as f:
        f.write(md)
    print(md)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
