#!/usr/bin/python3
"""A seeded fuzzer of DSE space files (issue 33): mutations of valid spaces -- values of another
type, sign or size, NaN and infinities, misspelt and dotted names, YAML aliases, anchors, deep
nesting, duplicate keys, damaged text -- each run as `stepsim dse FILE --trials 4` and counted:

    ran      exit 0 and the trials measured something (of which "warned": most trials failed,
             and the command said so on stderr)
    error    exit 1 with one `error: ...` line, no traceback
    crash    a Python traceback, a signal, or any other exit status
    hang     no answer within --timeout seconds
    silent   exit 0, but every trial failed, or a trial has no parameters

A long campaign:   PYTHONPATH=build/python /usr/bin/python3 scripts/dse/fuzz_space.py --minutes 60 --seed 1
The default tests run the same mutations in the process (testbench/python/test_dse_space_fuzz.py).
Each finding's space file is kept in --keep (default /tmp/fuzz_space_findings).
"""
import argparse
import copy
import csv
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SEEDS = [
    {"name": "grid", "program": {"layer": "swiglu", "params": {"batch": 32}},
     "parameters": {"tile_f": [32, 64, 128], "hbm.channels": {"low": 4, "high": 8, "step": 4}},
     "objectives": {"cycles": "min", "onchip_bytes": "min"}, "search": {"method": "grid", "batch": 2}},
    {"name": "nsga", "program": {"layer": "swiglu", "params": {"batch": 32}}, "preset": "step-artifact",
     "set": {"onchip_bw": 64}, "parameters": {"tile_f": [32, 64], "hbm.channels": {"low": 2, "high": 32},
                                               "compute_bw": {"low": 1024, "high": 8192, "log": True}},
     "objectives": {"cycles": "min", "allocated_flops_per_cycle": "min"},
     "constraints": {"memory_units": {"max": 100}, "hbm.channels": {"min": 2}},
     "search": {"method": "nsga2", "trials": 4, "seed": 3, "batch": 2}},
    {"name": "tpe", "program": {"layer": "swiglu"}, "mode": "timing",
     "parameters": {"batch": [16, 32], "clock_ghz": {"low": 0.5, "high": 2.0}},
     "objectives": {"cycles": "min"}, "search": {"method": "tpe", "trials": 4, "batch": 2}},
    {"name": "random", "program": {"layer": "swiglu", "params": {"batch": 32}},
     "parameters": {"tile_f": [64, 128], "num_pmus": [16, 1024]},
     "objectives": {"cycles": "max"}, "search": {"method": "random", "trials": 4, "seed": 9}},
]

JUNK = [None, 0, -1, -7, 1, 2, 1.5, -0.5, float("nan"), float("inf"), float("-inf"), True, False, "", "x", "min",
        "max", "grid", "1e3", "16", [], [None], [[1]], [1, 1], [1, "x"], [1, 2.5], [float("nan")], {}, {"low": "a"},
        {"low": 1}, {"low": 5, "high": 1}, {"low": 1, "high": 10**12}, {"low": 1, "high": 2, "step": 0},
        {"low": 0, "high": 4, "log": True}, {"low": 1, "high": 8, "log": "yes"}, {"max": float("nan")},
        {"min": float("inf")}, {"max": "a"}, {"min": 1, "max": 2}, 10**30, 2**63, -(2**63) - 1, 1e308, "x" * 10000]
NAMES = ["bogus_param", "hbm.channel", "hbm.chanels", "hbm", "tile_q", "TILE_F", "tile_f.x", ".", "a.b.c",
         "onchip_bw ", "compute-bw", "1", "", "node.depth", "load_x.tile", "cycles", "nan"]
TEXT_MUTATIONS = ["recursive_alias", "billion_laughs", "anchor", "deep_nesting", "duplicate_key", "flip",
                  "truncate", "tab", "unhashable_key", "huge_range"]


def paths(d, prefix=()):
    """Every key path of a nested dict."""
    out = []
    for k, v in d.items():
        out.append(prefix + (k,))
        if isinstance(v, dict):
            out += paths(v, prefix + (k,))
    return out


def mutate_data(rng, space):
    s = copy.deepcopy(space)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(paths(s))
        node = s
        for k in path[:-1]:
            node = node[k]
        what = rng.random()
        if what < 0.55:
            node[path[-1]] = copy.deepcopy(rng.choice(JUNK))
        elif what < 0.8 and len(path) > 1:  # a misspelt or dotted name
            node[rng.choice(NAMES)] = node.pop(path[-1])
        elif what < 0.9:
            node.pop(path[-1])
        else:
            node[rng.choice(NAMES)] = copy.deepcopy(rng.choice(JUNK))
    return s


def dump(data):
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=1 << 20)


def mutate_text(rng, text):
    kind = rng.choice(TEXT_MUTATIONS)
    lines = text.splitlines()
    if kind == "recursive_alias":
        return text + "x: &a [*a]\n"
    if kind == "billion_laughs":
        laughs = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        laughs += ["a%d: &a%d [%s]" % (i, i, ",".join(["*a%d" % (i - 1)] * 9)) for i in range(1, 10)]
        return "\n".join(laughs) + "\n" + text
    if kind == "anchor":
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i] + [lines[i].replace(": ", ": &x ", 1)] + lines[i + 1:]) + "\n"
    if kind == "deep_nesting":
        depth = rng.choice([33, 100, 5000, 100000])
        return text + "name: " + "[" * depth + "]" * depth + "\n"
    if kind == "duplicate_key":
        return text + rng.choice(lines) + "\n"
    if kind == "flip":
        b = bytearray(text.encode())
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return b.decode("utf-8", "replace")
    if kind == "truncate":
        return text[:rng.randrange(len(text))]
    if kind == "tab":
        return text.replace("  ", "\t", 1)
    if kind == "unhashable_key":
        return text + "? [1, 2]\n: 3\n"
    return text.replace("high: 8", "high: 1000000000000").replace("[32, 64, 128]", "{low: 1, high: 1000000000000}")


def case(rng):
    """One mutated space file's text."""
    space = rng.choice(SEEDS)
    if rng.random() < 0.7:
        return dump(mutate_data(rng, space))
    return mutate_text(rng, dump(space if rng.random() < 0.5 else mutate_data(rng, space)))


def classify_rows(rows, stderr=""):
    """'silent' for trials that all failed, or most of them without a word on stderr; else 'ran'
    ('warned' when most failed and the command said so)."""
    failed = sum(r["state"] == "failed" for r in rows)
    if not rows or failed == len(rows):
        return "silent"
    if 2 * failed > len(rows):
        return "warned" if "warning: " in stderr else "silent"
    return "ran"


def run_case(binary, text, folder, timeout):
    """The command line on one space -> (outcome, stderr)."""
    space = os.path.join(folder, "space.yaml")
    out = os.path.join(folder, "out")
    with open(space, "w") as f:
        f.write(text)
    try:
        p = subprocess.run([binary, "dse", space, "--out", out, "--trials", "4", "--quiet"], capture_output=True,
                           text=True, timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return "hang", ""
    if "Traceback" in p.stderr or p.returncode not in (0, 1):
        return "crash", p.stderr
    if p.returncode == 1:
        return ("error" if p.stderr.startswith("error: ") else "crash"), p.stderr
    with open(os.path.join(out, "trials.csv")) as f:
        rows = list(csv.DictReader(f))
    names = [k for k in (rows[0] if rows else {}) if k not in ("trial", "state")]
    params = names[:names.index("cycles")] if "cycles" in names else []
    if any(r[p] == "" for r in rows for p in params):
        return "silent", p.stderr
    return classify_rows(rows, p.stderr), p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a case counts as a hang")
    ap.add_argument("--binary", default=os.environ.get("STEPSIM_BINARY", os.path.join(ROOT, "build", "stepsim")))
    ap.add_argument("--keep", default="/tmp/fuzz_space_findings")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    counts = {k: 0 for k in ("ran", "warned", "error", "crash", "hang", "silent")}
    deadline = time.time() + 60 * a.minutes
    os.makedirs(a.keep, exist_ok=True)
    n = 0
    while time.time() < deadline:
        text = case(rng)
        n += 1
        folder = tempfile.mkdtemp(prefix="fuzz_space_")
        try:
            outcome, stderr = run_case(a.binary, text, folder, a.timeout)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        counts[outcome] += 1
        if outcome in ("crash", "hang", "silent"):
            path = os.path.join(a.keep, "%s_%d_%d.yaml" % (outcome, a.seed, n))
            with open(path, "w") as f:
                f.write(text)
            print("%s: %s\n  %s" % (outcome, path, (stderr.strip().splitlines() or [""])[-1]), file=sys.stderr)
    print("fuzz_space seed %d, %.1f min: %d cases: %s" % (a.seed, a.minutes, n, ", ".join(
        "%s %d" % kv for kv in counts.items())))
    return 1 if counts["crash"] or counts["hang"] or counts["silent"] else 0


if __name__ == "__main__":
    sys.exit(main())
