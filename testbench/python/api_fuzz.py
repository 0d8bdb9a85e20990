"""A seeded fuzzer of the Python API (issue 33): calls of the public methods with one or two
arguments mutated (types, signs, sizes, names, NaN, inf, huge integers, None, nested tuples,
strings with NUL and '..'), each case run in a worker process so that a crash of the interpreter
or a hang is seen and counted instead of ending the campaign.

Every case ends in one of:
  clean    stepsim.Error, TypeError or ValueError with a message that names something (not
           pybind11's signature dump, not GiNaC's parser internals)
  ok       the call succeeded and no mutated argument was known to be invalid
  silent   the call succeeded although a mutated argument was outside its documented range
  unclean  any other exception (AttributeError, OverflowError, RecursionError, ...) or an
           unclear message
  crash    the worker died (a signal, an abort)
  hang     the case did not finish within the time limit

Used by test_api_fuzz.py (fixed seeds, a few hundred cases) and scripts/fuzz/python_api.py (long
campaigns). `python3 api_fuzz.py --worker SEED FIRST COUNT` is the worker.
"""
import json
import os
import random
import re
import select
import subprocess
import sys
import tempfile

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
UNKNOWN = object()  # validity of a value the fuzzer cannot judge (e.g. an expression)

# ---- mutated values

NAMES = ["", "x\0", "../../etc", "/tmp/abs/x", "a.b", "a-b", "x" * 129, "x" * 128, "1x", "_ok", "ok2", " ",
         "é", "a/b", "..", "x\n", "CON", "a b"]
INTS = [-1, 0, 1, 2, 3, 4, 255, 256, 257, 2 ** 20, 2 ** 20 + 1, 2 ** 31, 2 ** 32, 2 ** 40, 2 ** 40 + 1, 2 ** 41,
        2 ** 63 - 1, 2 ** 63, 2 ** 64, 10 ** 9, 10 ** 30, -2 ** 63]
FLOATS = [4.7, 0.5, -1.0, 4.0, float("nan"), float("inf"), float("-inf"), 1e300, -0.0]
STRINGS = ["", "16", "x\0y", "../../etc/passwd", "2**100000000", "2^100000000", "((((((((", ")" * 50,
           "1 2 S1 D", "nan", "inf", "-1", "{", "[1, 2", "a" * 5000]
OTHERS = [None, True, False, [], {}, (), [1, [2, [3]]], ((((1,),),),), {"a": 1}, {1, 2}, object(), b"bytes",
          (lambda: 5)]


def deep_list(depth):
    v = 1
    for _ in range(depth):
        v = [v]
    return v


def numpy_values():
    import numpy as np

    return [np.int64(2 ** 40), np.int32(-1), np.uint64(2 ** 64 - 1), np.float64("nan"), np.int8(3),
            np.array([1, 2]), np.zeros((2, 2))]


def pool(rng, kinds):
    """One value from the pools of `kinds` (a subset of 'names ints floats strings others numpy')."""
    choices = []
    if "names" in kinds:
        choices += NAMES
    if "ints" in kinds:
        choices += INTS
    if "floats" in kinds:
        choices += FLOATS
    if "strings" in kinds:
        choices += STRINGS
    if "others" in kinds:
        choices += OTHERS + [deep_list(rng.choice([20, 200, 5000]))]
    if "numpy" in kinds:
        choices += numpy_values()
    return rng.choice(choices)


# ---- validity of a value, per argument kind (False: known invalid; UNKNOWN: cannot tell)

def is_int(v):
    import numpy as np

    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def int_in(lo, hi):
    return lambda v: is_int(v) and lo <= int(v) <= hi


def ident(v):
    return isinstance(v, str) and bool(IDENT.match(v))


def one_of(*choices):
    return lambda v: isinstance(v, str) and v in choices


def unknown(v):
    return UNKNOWN


# ---- the calls: each builds what it needs, mutates arguments and makes one call

def base_graph():
    import stepsim

    g = stepsim.Graph("fz")
    g.tensor("x", (64, 64), init="random", seed=1)
    g.output_tensor("y", (64, 64))
    x = g.LinearOffChipLoad(tensor="x", tile=[16, 64], name="load")
    return g, x


def finish(g, s):
    g.LinearOffChipStore(s, tensor="y", tile=[16, 64], name="store")


class Args:
    """The valid arguments of a call, the mutation of some of them, and whether any mutated
    value is known to be invalid."""

    def __init__(self, rng, spec):
        self.values = {k: v for k, (v, _, _) in spec.items()}
        self.invalid = False
        keys = list(spec)
        for key in rng.sample(keys, min(len(keys), rng.choice([1, 1, 2]))):
            _, kinds, valid = spec[key]
            value = pool(rng, kinds)
            self.values[key] = value
            verdict = valid(value)
            if verdict is not UNKNOWN and not verdict:
                self.invalid = True

    def __getitem__(self, k):
        return self.values[k]


def c_graph(rng, tmp):
    import stepsim

    a = Args(rng, {"name": ("g", "names strings others ints", ident),
                   "description": ("d", "strings others ints", lambda v: isinstance(v, str))})
    stepsim.Graph(a["name"], a["description"])
    return a


def c_tensor(rng, tmp):
    g, _ = base_graph()
    a = Args(rng, {"name": ("t", "names others ints", lambda v: ident(v) and v not in ("x", "y")),
                   "rows": (4, "ints floats others numpy strings", int_in(1, 2 ** 40)),
                   "cols": (4, "ints floats others numpy strings", int_in(1, 2 ** 40)),
                   "dtype": ("bf16", "strings others", one_of("bf16", "fp32", "int32")),
                   "init": ("zeros", "strings others", one_of("zeros", "random", "output")),
                   "seed": (0, "ints floats others numpy", int_in(0, 2 ** 63 - 1))})
    rows, cols = a["rows"], a["cols"]
    if is_int(rows) and is_int(cols) and int(rows) * int(cols) > 2 ** 40:
        a.invalid = True
    g.tensor(a["name"], (rows, cols), dtype=a["dtype"], init=a["init"], seed=a["seed"])
    return a


def c_tensor_shape(rng, tmp):
    g, _ = base_graph()
    a = Args(rng, {"shape": ((4, 4), "others floats ints strings numpy", unknown)})
    shape = a["shape"]
    if not (isinstance(shape, (tuple, list)) and len(shape) == 2 and all(is_int(d) for d in shape)):
        a.invalid = True
    g.tensor("t", shape)
    return a


def c_tensor_file(rng, tmp):
    g, _ = base_graph()
    a = Args(rng, {"file": (os.path.join(tmp, "missing.npy"), "strings others names", unknown)})
    a.invalid = True  # no such .npy exists
    g.tensor("t", (4, 4), init="file", file=a["file"])
    return a


def c_init_array(rng, tmp):
    import numpy as np

    g, x = base_graph()
    big = rng.choice([2 ** 40 + 7, 2 ** 31, -2 ** 31 - 1, 2 ** 63 - 1, 7])
    dtype = rng.choice([np.int64, np.uint64, np.int32, np.int8])
    if big < 0 and dtype == np.uint64:
        big = 2 ** 64 - 1
    arr = np.full((4, 4), big if dtype in (np.int64, np.uint64) else 7, dtype=dtype)
    a = Args(rng, {"array": (arr, "others numpy", unknown)})
    fits = isinstance(a["array"], np.ndarray) and a["array"].dtype.kind in "iu" and (
        a["array"].size == 0 or (-2 ** 31 <= int(a["array"].min()) and int(a["array"].max()) < 2 ** 31))
    a.invalid = not fits or a["array"].shape != (4, 4)
    g.tensor("t", (4, 4), dtype="int32", init=a["array"])
    return a


def c_run_inputs(rng, tmp):
    import numpy as np

    g, x = base_graph()
    finish(g, g.Map(x, fn="neg", name="m"))
    g.tensor("t", (4, 4), dtype="int32")
    value = rng.choice([2 ** 40 + 7, 2 ** 31, -2 ** 31 - 1, 7])
    arr = np.full((4, 4), value, dtype=rng.choice([np.int64, np.uint64]) if value > 0 else np.int64)
    given = {"t": arr}
    a = Args(rng, {"inputs": (given, "others numpy", unknown)})
    inputs = a["inputs"]
    a.invalid = value != 7 if inputs is given else inputs not in (None, {})
    g.run(mode="functional", inputs=inputs)
    return a


def c_op(rng, tmp):
    g, x = base_graph()
    a = Args(rng, {"name": ("n", "names others ints", ident),
                   "compute_bw": (None, "ints floats others numpy strings",
                                  lambda v: v is None or int_in(1, 2 ** 40)(v)),
                   "depth": (None, "ints floats others numpy strings", lambda v: v is None or int_in(1, 2 ** 20)(v)),
                   "impl": (None, "strings others", lambda v: v is None or one_of("approx", "hls", "rtl")(v))})
    finish(g, g.Map(x, fn="neg", name=a["name"], compute_bw=a["compute_bw"], depth=a["depth"], impl=a["impl"]))
    return a


def c_broadcast(rng, tmp):
    g, x = base_graph()
    a = Args(rng, {"outputs": (2, "ints floats others numpy strings",
                               lambda v: UNKNOWN if v is None else int_in(1, 256)(v))})
    outs = g.Broadcast(x, outputs=a["outputs"], name="b")
    for k, s in enumerate(outs):
        g.Sink(s, name="k%d" % k)
    g.run()  # a graph the builder took must run or be refused by the run, never crash
    return a


def c_params(rng, tmp):
    g, x = base_graph()
    a = Args(rng, {"tile": ([16, 64], "ints floats strings others numpy", unknown),
                   "fn": ("neg", "strings names others ints", unknown)})
    y = g.LinearOffChipLoad(tensor="x", tile=a["tile"], name="l2")
    finish(g, g.Map(y, fn=a["fn"], name="m"))
    return a


def c_settings(rng, tmp):
    g, x = base_graph()
    finish(g, g.Map(x, fn="neg", name="m"))
    node = {"node": ("m", "names others ints", lambda v: v == "m")}
    which = rng.randrange(3)  # only the arguments the chosen call takes are mutated
    a = Args(rng, [dict(node, depth=(4, "ints floats others numpy strings", int_in(1, 2 ** 20))),
                   dict(node, bw=(8, "ints floats others numpy strings", int_in(1, 2 ** 40))),
                   {"impl": ("approx", "strings others", one_of("approx", "hls", "rtl"))}][which])
    if which == 0:
        g.set_depth(a["node"], a["depth"])
    elif which == 1:
        g.set_compute_bw(a["node"], a["bw"])
    else:
        g.set_impl(a["impl"])
    return a


def c_literal(rng, tmp):
    g, _ = base_graph()
    nested = "(" * rng.choice([10, 3000, 100000]) + "1" + ")" * 5
    a = Args(rng, {"name": ("s", "names others ints", ident),
                   "tokens": ("1 2 S1 D", "strings others ints", unknown)})
    if rng.random() < 0.3:
        a.values["tokens"] = nested
        a.invalid = True
    g.literal_stream(a["name"], a["tokens"])
    if rng.random() < 0.3:
        g.literal_stream(a["name"], "1 D")  # the same name again
        a.invalid = True
    return a


def c_symbol(rng, tmp):
    g, _ = base_graph()
    a = Args(rng, {"name": ("n", "names others ints", ident),
                   "value": ("4", "strings ints floats others numpy", unknown)})
    g.symbol(a["name"], a["value"])
    return a


def c_stream(rng, tmp):
    g, _ = base_graph()
    a = Args(rng, {"ref": ("load", "names strings others ints", lambda v: v in ("load", "load.out"))})
    g.stream(a["ref"])
    return a


def c_set_dim(rng, tmp):
    g, x = base_graph()
    s = g.Map(x, fn="neg", name="m")
    a = Args(rng, {"dim": (0, "ints floats others numpy", int_in(0, s.rank - 1)),
                   "expr": ("4", "strings ints floats others numpy", unknown)})
    s.set_dim(a["dim"], a["expr"])
    return a


def c_run(rng, tmp):
    g, x = base_graph()
    finish(g, g.Map(x, fn="neg", name="m"))
    a = Args(rng, {"preset": ("step-artifact", "strings names others ints", unknown),
                   "mode": ("timing", "strings others ints", one_of("timing", "functional")),
                   "set": (None, "strings others ints", lambda v: v is None or v == {}),
                   "impl": (None, "strings others", lambda v: v is None or one_of("approx", "hls", "rtl")(v)),
                   "shuffle": (0, "ints floats others numpy strings", int_in(0, 2 ** 64 - 1))})
    g.run(preset=a["preset"], mode=a["mode"], set=a["set"], impl=a["impl"], shuffle=a["shuffle"])
    return a


def c_run_set(rng, tmp):
    g, x = base_graph()
    finish(g, g.Map(x, fn="neg", name="m"))
    key = rng.choice(["hbm.channels", "m.fn", "bogus", "", "m.", ".x", "hbm_channels"])
    a = Args(rng, {"value": (4, "ints floats strings others numpy", unknown)})
    g.run(set={key: a["value"]})
    return a


def c_analyze(rng, tmp):
    g, x = base_graph()
    finish(g, g.Map(x, fn="neg", name="m"))
    a = Args(rng, {"model": ("paper", "strings others ints", unknown),
                   "symbols": (None, "strings others ints", lambda v: v is None or v == {})})
    g.analyze(model=a["model"], symbols=a["symbols"])
    return a


def c_sweep(rng, tmp):
    import stepsim

    g, x = base_graph()
    finish(g, g.Map(x, fn="neg", name="m"))
    graph = rng.choice([g, g, lambda: 5, lambda **k: g, None, "g"])
    a = Args(rng, {"values": ([2], "strings others ints", unknown)})
    values = a["values"]
    ok_values = isinstance(values, (list, tuple)) and 0 < len(values) <= 3 and all(
        is_int(v) and 1 <= v <= 64 for v in values)
    a.invalid = not ok_values or not (graph is g or callable(graph) and graph.__code__.co_flags & 0x08)
    if isinstance(values, (list, tuple)) and len(values) > 3:
        values = values[:3]
    stepsim.sweep(graph, {"hbm.channels": values})
    return a


def c_save(rng, tmp):
    import numpy as np

    import stepsim

    g = stepsim.Graph("fz")
    a = Args(rng, {"name": ("t", "names others", ident),
                   "path": ("g.yaml", "strings names others", unknown)})
    g.tensor(a["name"], (2, 2), init=np.zeros((2, 2), dtype=np.float32))
    path = a["path"]
    if isinstance(path, str) and "\0" not in path:
        path = os.path.join(tmp, path.lstrip("/"))  # stay inside the case's folder
    g.save(path)
    for root, _, files in os.walk(os.path.dirname(tmp)):
        if not os.path.abspath(root).startswith(tmp) and any(f.endswith(".npy") for f in files):
            raise AssertionError("a .npy written outside the case folder: %s" % root)
    return a


def c_from_yaml(rng, tmp):
    import stepsim

    a = Args(rng, {"text": ("name: t\nnodes: []\n", "strings names others ints", unknown),
                   "params": (None, "strings others ints", lambda v: v is None or v == {})})
    stepsim.Graph.from_yaml(a["text"], params=a["params"])
    return a


def c_registry(rng, tmp):
    import stepsim

    a = Args(rng, {"arg": ("map", "strings names others ints", unknown)})
    [stepsim.functions, stepsim.preset, stepsim.layers.build][rng.randrange(3)](a["arg"])
    return a


def c_forward(rng, tmp):
    g, _ = base_graph()
    a = Args(rng, {"node": ("f", "names others ints", ident), "port": ("out", "names others ints", ident),
                   "type": ("[4] of selector", "strings others ints", unknown)})
    g.forward(a["node"], a["port"], a["type"])
    return a


def c_layer(rng, tmp):
    import stepsim

    key = rng.choice(["batch", "hidden", "tile_b", "compute_bw", "seed", "block", "bogus"])
    a = Args(rng, {"value": (32, "ints floats strings others numpy", unknown)})
    stepsim.layers.swiglu(**{key: a["value"]})
    return a


CALLS = [c_graph, c_tensor, c_tensor_shape, c_tensor_file, c_init_array, c_run_inputs, c_op, c_broadcast, c_params,
         c_settings, c_literal, c_symbol, c_stream, c_set_dim, c_run, c_run_set, c_analyze, c_sweep, c_save,
         c_from_yaml, c_registry, c_forward, c_layer]

BAD_MESSAGE = ("incompatible function arguments", "Invoked with", "GiNaC", "parser.cpp", "_stepsim.")


def run_case(seed, index):
    """(outcome, call name, message) of case `index` of campaign `seed`."""
    import stepsim

    rng = random.Random(seed * 1000003 + index)
    call = CALLS[rng.randrange(len(CALLS))]
    with tempfile.TemporaryDirectory(prefix="fz") as tmp:
        try:
            case = os.path.join(tmp, "case")
            os.makedirs(case)
            a = call(rng, case)
        except (stepsim.Error, TypeError, ValueError) as e:
            msg = str(e)
            if len(msg) < 10 or any(b in msg for b in BAD_MESSAGE):
                return "unclean", call.__name__, "%s: %s" % (type(e).__name__, msg[:300])
            return "clean", call.__name__, msg[:200]
        except AssertionError as e:
            return "unclean", call.__name__, "AssertionError: %s" % e
        except BaseException as e:  # the class the fuzzer looks for: anything else
            return "unclean", call.__name__, "%s: %s" % (type(e).__name__, str(e)[:300])
    return ("silent" if a.invalid else "ok"), call.__name__, repr(a.values)[:300]


def worker(seed, first, count):
    os.makedirs(tempfile.gettempdir(), exist_ok=True)
    import stepsim  # noqa: F401 (imported once, before the first case's clock starts)

    print("READY", flush=True)
    for i in range(first, first + count):
        print("START %d" % i, flush=True)
        outcome, call, msg = run_case(seed, i)
        print("END " + json.dumps([i, outcome, call, msg]), flush=True)


# ---- the campaign: workers in subprocesses, one case at a time

class Campaign:
    def __init__(self, seed, case_timeout=20.0, batch=200, log=None):
        self.seed, self.case_timeout, self.batch, self.log = seed, case_timeout, batch, log
        self.counts = {k: 0 for k in ("ran", "clean", "ok", "silent", "unclean", "crash", "hang")}
        self.findings = []  # (index, outcome, call, message)

    def _record(self, i, outcome, call, msg):
        self.counts["ran"] += 1
        self.counts[outcome] += 1
        if outcome in ("silent", "unclean", "crash", "hang"):
            self.findings.append((i, outcome, call, msg))
            if self.log:
                print("case %d (seed %d): %s in %s: %s" % (i, self.seed, outcome, call, msg), file=self.log, flush=True)

    def run(self, first, count):
        """Cases first .. first+count-1; returns the next case number."""
        i, end = first, first + count
        while i < end:
            i = self._batch(i, min(self.batch, end - i))
        return end

    def _batch(self, first, count):
        env = dict(os.environ)
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", str(self.seed), str(first),
                              str(count)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             text=True, bufsize=1)
        current, timeout = None, 120.0  # importing stepsim first
        try:
            while True:
                ready, _, _ = select.select([p.stdout], [], [], timeout)
                if not ready:
                    if current is None:
                        raise RuntimeError("the fuzz worker did not start: %s" % p.stderr.read())
                    p.kill()
                    self._record(current, "hang", "?", "no answer within %.0f s" % self.case_timeout)
                    return current + 1
                line = p.stdout.readline()
                if not line:  # the worker died
                    p.wait()
                    if current is None:
                        raise RuntimeError("the fuzz worker failed: %s" % p.stderr.read()[-2000:])
                    self._record(current, "crash", "?", "worker exit status %s: %s"
                                 % (p.returncode, p.stderr.read()[-500:]))
                    return current + 1
                timeout = self.case_timeout
                if line.startswith("START "):
                    current = int(line.split()[1])
                elif line.startswith("END "):
                    i, outcome, call, msg = json.loads(line[4:])
                    self._record(i, outcome, call, msg)
                    current = None
                    if i == first + count - 1:
                        p.wait()
                        return i + 1
                    current = i + 1  # a crash before the next START is still that case
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
            p.stderr.close()


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "--worker":
    worker(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
