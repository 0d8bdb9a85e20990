"""Shared helpers of the paper-figure scripts (scripts/figures/fig*.py).

Every script builds layers with `stepsim build`, runs them in timing mode with `stepsim run
--report`, and writes a CSV, a PNG and a Markdown table (ours beside the paper's numbers) into
its output directory (default docs/figures/). Run them with Debian's /usr/bin/python3 (it has
matplotlib); they build stepsim first if build/stepsim is missing.
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


def stepsim_binary(build_dir):
    exe = os.path.join(build_dir, "stepsim")
    if not os.path.exists(exe):
        subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                        "-DSTEPSIM_TESTS=OFF", "-DSTEPSIM_BENCHMARKS=OFF", "-DSTEPSIM_RTL=OFF"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", build_dir, "-j", str(os.cpu_count() or 1), "--target", "stepsim"],
                       check=True, stdout=subprocess.DEVNULL)
    return exe


def arg_parser(doc):
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "figures"), help="output directory")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"), help="stepsim build directory")
    return p


def run_layer(exe, layer, params, preset="step-artifact", sets=None, tech=None):
    """Builds and runs one layer configuration; returns the JSON report plus wall time (s). The
    report's "symbolic" section holds the symbolic prediction (what `stepsim analyze` gives, with
    the on-chip formulas of the run's onchip_requirement_model); its "energy" and "area" sections
    are priced by the technology table `tech` (stepsim's default when None)."""
    with tempfile.TemporaryDirectory() as tmp:
        graph = os.path.join(tmp, "g.yaml")
        report = os.path.join(tmp, "r.json")
        cmd = [exe, "build", layer, "-o", graph]
        for k, v in params.items():
            cmd += ["--param", "%s=%s" % (k, v)]
        subprocess.run(cmd, check=True)
        cmd = [exe, "run", graph, "--preset", preset, "--report", report] + (["--tech", tech] if tech else [])
        for k, v in (sets or {}).items():
            cmd += ["--set", "%s=%s" % (k, v)]
        t0 = time.time()
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.time() - t0
        if res.returncode != 0:
            sys.exit("stepsim run failed for %s %s: %s" % (layer, params, res.stderr.strip()))
        with open(report) as f:
            r = json.load(f)
        r["wall_s"] = wall
        return r


def onchip_bytes(report, static):
    """On-chip memory as the authors' scripts count it (run with onchip_requirement_model
    artifact): a static design allocates every buffer up front (the symbolic total), a dynamic
    one on demand (the run's requirement)."""
    if static:
        return report["symbolic"]["onchip_requirement_bytes"]["value"]
    return report["onchip"]["requirement_bytes"]


def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in fields})


def md_table(header, rows):
    out = "| " + " | ".join(header) + " |\n|" + "|".join("---" for _ in header) + "|\n"
    for r in rows:
        out += "| " + " | ".join(str(x) for x in r) + " |\n"
    return out


def pareto(points):
    """Pareto-optimal subset of (cycles, mem, ...) tuples, both minimised."""
    def dominates(q, p):
        return q[0] <= p[0] and q[1] <= p[1] and (q[0] < p[0] or q[1] < p[1])

    return [p for p in points if not any(dominates(q, p) for q in points)]


def pid(point, baseline):
    """Pareto Improvement Distance of `point` over the baseline's frontier (paper App. B.4)."""
    front = pareto(baseline)
    return min(max(q[0] / point[0], q[1] / point[1]) for q in front)


def finish(base, md, rows, total_s):
    """Appends the total wall time, writes BASE.md and prints it."""
    md += "\nTotal wall time: %.1f s for %d configurations.\n" % (total_s, len(rows))
    with open(base + ".md", "w") as f:
        f.write(md)
    print(md)
