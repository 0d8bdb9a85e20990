#!/usr/bin/env python3
"""A seeded campaign against the command line's edges (issue 33): YAML aliases and nesting, nested
elements, expressions, names used as file names, and input files of the wrong kind.

    /usr/bin/python3 scripts/fuzz/cli_edges.py [--stepsim build/stepsim] [--cases N | --minutes M]
                                               [--seed S] [--classes yaml,tuples,exprs,names,files]

Each case runs one stepsim command (20 s and 4 GiB at most) on a generated input and is judged:
  ran     exit 0, and the input was one the tool should take
  error   exit 1 or 2 with a line 'error: ...' (a clean refusal)
  crash   killed by a signal, or an exit status other than 0, 1, 2
  hang    still running after 20 s
  silent  exit 0 where the input should have been refused, or a file written outside --out
Prints a table of counts per class and the first inputs of every outcome but ran and error.
Exit status 1 when any case crashed, hung or was silent.
"""
import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

GRAPH = """name: edges
{symbols}tensors:
  a: {{shape: [16, 16], dtype: bf16, init: {init}}}
  {out_name}: {{shape: [16, 16], dtype: bf16, init: output}}
streams:
  s: '{stream}'
nodes:
  - {{name: load, op: LinearOffChipLoad, params: {{tensor: a, tile: [16, 16]}}{dims}}}
  - {{name: store, op: LinearOffChipStore, params: {{tensor: {out_ref}, tile: [16, 16]}}, inputs: {{in: load}}}}
  - {{name: src, op: Source, params: {{stream: s}}}}
  - {{name: sink, op: Sink, inputs: {{in: src}}}}
"""


def graph(symbols="", init="random", out_name="b", stream="1 2 S1 D", dims=""):
    return GRAPH.format(symbols=symbols, init=init, out_name=yaml_quote(out_name), out_ref=yaml_quote(out_name),
                        stream=stream.replace("'", "''"), dims=dims)


def yaml_quote(s):
    return "'" + s.replace("'", "''") + "'"


# ---- generators: each returns (argv after 'stepsim', files {name: bytes or None for a FIFO}, should_run)

def gen_yaml(rng):
    kind = rng.choice(["recursive", "laughs", "anchor", "alias_only", "deep", "shallow"])
    if kind == "recursive":
        text = "%s: &a [*a]\n" % rng.choice(["a", "nodes", "name"])
    elif kind == "laughs":
        levels, width = rng.randint(2, 12), rng.randint(2, 10)
        text = "a: &a [%s]\n" % ",".join(['"lol"'] * width)
        for i in range(1, levels):
            text += "l%d: &l%d [%s]\n" % (i, i, ",".join(["*" + ("a" if i == 1 else "l%d" % (i - 1))] * width))
    elif kind == "anchor":
        text = graph().replace("{name: load,", "&n {name: load,", 1)
    elif kind == "alias_only":
        text = graph().replace("name: edges", "name: *x", 1)
    else:
        depth = rng.randint(65, 5000) if kind == "deep" else rng.randint(1, 60)
        text = graph() + "x: " + "[" * depth + "]" * depth + "\n"
        nested = "[" * depth + "1" + "]" * depth
        text = text if kind == "deep" else graph().replace("streams:", "params: {p: %s}\nstreams:" % nested, 1)
    cmd = rng.choice([["run"], ["analyze"], ["size-fifos", "-o", "OUT/s.yaml"],
                      ["downtile", "--tile", "8", "-o", "OUT/d.yaml"], ["preset"]])
    refuse = False if kind != "shallow" else None  # nesting up to 64 is the graph's own business
    if cmd == ["preset"]:
        return ["run", "GOOD", "--preset", "IN"], {"IN": text, "GOOD": graph()}, refuse
    return cmd[:1] + ["IN"] + cmd[1:], {"IN": text}, refuse


def nested(rng, depth):
    e = rng.choice(["1", "T[2x2]", "{0,1}"])
    for _ in range(depth):
        e = rng.choice(["(%s)", "(1,%s)", "(%s,T[1x1])"]) % e
    return e


def gen_tuples(rng):
    depth = rng.choice([rng.randint(0, 16), rng.randint(17, 3000)])
    stream = " ".join([nested(rng, depth)] * rng.randint(1, 3)) + " S1 D"
    if rng.random() < 0.3 and len(stream) < 100000:
        return ["eval", "Flatten", "--param", "min=0", "--param", "max=0", "--in", stream], {}, depth <= 16
    return [rng.choice(["run", "analyze"]), "IN"], {"IN": graph(stream=stream)}, depth <= 16


def expression(rng, depth=0):
    if depth > 3 or rng.random() < 0.3:
        return rng.choice(["n", "m", str(rng.randint(0, 100)), str(rng.randint(0, 2 ** 63 - 1)),
                           str(rng.randint(2 ** 63, 2 ** 80)), "1e%d" % rng.randint(1, 10 ** 9), "1.5",
                           "ceil_div(n, 16)", "0x10"])
    a, b = expression(rng, depth + 1), expression(rng, depth + 1)
    form = rng.choice(["%s+%s", "%s*%s", "(%s)-(%s)", "%s/%s", "(%s)^%s", "power"])
    if form == "power":
        return "(%s)^%d" % (a, rng.choice([2, 64, 65, 10 ** 9]))
    return form % (a, b)


def gen_exprs(rng):
    e = expression(rng)
    where = rng.choice(["symbols", "dims", "sym"])
    if where == "symbols":
        symbols = "symbols:\n  n: %s\n" % yaml_quote(e)
        return [rng.choice(["run", "analyze"]), "IN"], {"IN": graph(symbols=symbols)}, None
    if where == "dims":
        return ["analyze", "IN"], {"IN": graph(dims=", dims: {out: [%s, 1, 1]}" % yaml_quote(e))}, None
    return ["analyze", "IN", "--sym", "n=" + e], {"IN": graph()}, None


NASTY_NAMES = ["../escaped", "/tmp/stepsim_campaign_abs", "a/b", "..", ".", "", "a.b", "a-b", "x\u00e9", "a b",
               "x" * 129, "x" * 128, "_ok", "ok1", "1bad", "a\tb", "..\\x", "~", "$HOME", "*"]


def gen_names(rng):
    name = rng.choice(NASTY_NAMES)
    valid = bool(name) and len(name) <= 128 and (name[0].isalpha() or name[0] == "_") and \
        all(c.isascii() and (c.isalnum() or c == "_") for c in name)
    return ["run", "IN", "--mode", "functional", "--out", "OUT/out"], {"IN": graph(out_name=name)}, valid


def npy_bytes(rng):
    keys = [("descr", "'<f4'"), ("fortran_order", "False"), ("shape", "(16, 16)")]
    mutation = rng.choice(["none", "dup", "typo", "drop", "extra", "reorder", "unquoted", "junk", "true"])
    if mutation == "dup":
        keys.insert(rng.randint(0, 3), rng.choice([("descr", "'<i4'"), ("shape", "(4, 4)"), ("fortran_order", "True")]))
    elif mutation == "typo":
        keys[1] = ("fortran_order", rng.choice(["Flase", "false", "0", "'False'", "None"]))
    elif mutation == "drop":
        keys.pop(rng.randrange(3))
    elif mutation == "extra":
        keys.append(("x", "1"))
    elif mutation == "reorder":
        rng.shuffle(keys)
    elif mutation == "unquoted":
        keys[0] = ("descr", "<f4")
    elif mutation == "true":
        keys[1] = ("fortran_order", "True")
    d = "{" + ", ".join("'%s': %s" % kv for kv in keys) + ", }" + (" junk" if mutation == "junk" else "")
    total = 10 + len(d) + 1
    d += " " * ((64 - total % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d.encode() + bytes(16 * 16 * 4), mutation


def numpy_accepts(data):
    with tempfile.NamedTemporaryFile(suffix=".npy") as f:
        f.write(data)
        f.flush()
        try:
            a = np.load(f.name)
            return a.shape == (16, 16) and a.dtype == np.float32 and not np.isfortran(a)
        except Exception:
            return False


def gen_files(rng):
    kind = rng.choice(["fifo", "fifo_link", "dev", "dir", "npy", "graph_dev", "preset_dev"])
    if kind == "npy":
        data, mutation = npy_bytes(rng)
        # A repeated key is refused on purpose, although NumPy 1.24 takes the last one.
        should_run = numpy_accepts(data) and mutation != "dup"
        return ["run", "IN"], {"IN": graph(init="file, file: DATA"), "DATA": data}, should_run
    if kind in ("fifo", "fifo_link"):
        return ["run", "IN"], {"IN": graph(init="file, file: DATA"), "DATA": None if kind == "fifo" else "->FIFO",
                               "FIFO": None}, False
    if kind == "dev":
        return ["run", "IN"], {"IN": graph(init="file, file: /dev/zero")}, False
    if kind == "dir":
        return ["run", "IN"], {"IN": graph(init="file, file: OUT")}, False
    if kind == "graph_dev":
        return ["run", "/dev/zero"], {}, False
    return ["run", "GOOD", "--preset", "/dev/zero"], {"GOOD": graph()}, False


GENERATORS = {"yaml": gen_yaml, "tuples": gen_tuples, "exprs": gen_exprs, "names": gen_names, "files": gen_files}


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def run_case(stepsim, argv, files, should_run, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    paths = {}
    for name, content in files.items():
        paths[name] = os.path.join(work, name.lower() + (".npy" if name == "DATA" else ".yaml"))
    for name, content in files.items():
        p = paths[name]
        if content is None:
            os.mkfifo(p)
        elif isinstance(content, str) and content.startswith("->"):
            os.symlink(paths[content[2:]], p)
        else:
            with open(p, "wb") as f:
                if not isinstance(content, bytes):
                    content = content.replace("DATA", paths.get("DATA", "")).encode()
                f.write(content)
    args = [a.replace("OUT", work) if "OUT" in a else paths.get(a, a) for a in argv]
    for stray in ("/tmp/stepsim_campaign_abs.npy", os.path.join(work, "escaped.npy")):
        if os.path.exists(stray):
            os.remove(stray)
    try:
        p = subprocess.run([stepsim] + args, capture_output=True, timeout=20, preexec_fn=limit_memory)
    except subprocess.TimeoutExpired:
        return "hang", ""
    out = (p.stdout + p.stderr).decode(errors="replace")
    escaped = any(os.path.exists(s) for s in ("/tmp/stepsim_campaign_abs.npy", os.path.join(work, "escaped.npy")))
    if p.returncode < 0 or p.returncode > 2:
        return "crash", out
    if escaped:
        return "silent", "a file outside --out: " + out
    if p.returncode == 0:
        return ("silent", out) if should_run is False else ("ran", out)
    if "error:" not in out:
        return "crash", out
    return ("silent", "refused an input it should take: " + out) if should_run is True else ("error", out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stepsim", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "stepsim"))
    ap.add_argument("--cases", type=int, default=200, help="cases per class")
    ap.add_argument("--minutes", type=float,
                    help="run rounds of every class until this time is up (instead of --cases)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--classes", default=",".join(GENERATORS))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="stepsim_edges_")
    counts, examples = {}, {}
    end = time.monotonic() + a.minutes * 60 if a.minutes else None
    try:
        while True:
            for cls in a.classes.split(","):
                c = counts.setdefault(cls, {k: 0 for k in ("ran", "error", "crash", "hang", "silent")})
                for _ in range(a.cases if end is None else 10):
                    argv, files, should_run = GENERATORS[cls](rng)
                    outcome, out = run_case(os.path.abspath(a.stepsim), argv, files, should_run,
                                            os.path.join(work, "case"))
                    c[outcome] += 1
                    if outcome not in ("ran", "error") and len(examples.setdefault((cls, outcome), [])) < 3:
                        examples[(cls, outcome)].append((argv, {k: (v[:300] if isinstance(v, (str, bytes)) else v)
                                                                for k, v in files.items()}, out[-500:]))
            if end is None or time.monotonic() > end:
                break
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%-8s %6s %6s %6s %6s %6s" % ("class", "ran", "error", "crash", "hang", "silent"))
    for cls, c in counts.items():
        print("%-8s %6d %6d %6d %6d %6d" % (cls, c["ran"], c["error"], c["crash"], c["hang"], c["silent"]))
    for (cls, outcome), cases in examples.items():
        for argv, files, out in cases:
            print("\n%s %s: stepsim %s\n  files: %r\n  output: %s" % (cls, outcome, " ".join(argv), files, out))
    return 1 if examples else 0


if __name__ == "__main__":
    sys.exit(main())
