"""The simulations a serving run is made of, and their cache.

A task is one run of one layer graph: {"layer": decoder | prefill | lm_head, "params": {...},
"preset", "set", "mode"}. The layers of a model hand over through HBM (each phase starts when the
previous phase's stores are acknowledged), so tasks are independent and a run's cycles are sums
of task cycles (stepsim.serving.policy).

The cache is content-addressed: a task's key is the SHA-256 of what decides its result (the
layer, its parameters with the routing table's contents instead of its file name, the hardware
parameters the preset and the settings give, the mode, and the simulator itself: the SHA-256 of
the extension module), and its result is CACHE/KEY[:2]/KEY.json, written whole or not at all by
whoever simulated it (a worker, or the coordinator inline). So identical tasks are simulated once,
across iterations, runs and DSE trials, and a run that was killed loses no finished task.
"""
import functools
import hashlib
import json
import os
import time

from .. import _stepsim
from ..core.graph import Graph

# The decoder's and prefill's node-name prefixes, in the order the phases run; an lm_head task
# is one phase of its own.
PHASES = ("qkv", "attn", "oproj", "moe")
CATEGORY = {"qkv": "projections", "oproj": "projections", "attn": "attention", "moe": "moe", "lm_head": "lm_head"}
CACHE_FORMAT = 3  # 3: results carry energy and area


def default_cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("STEPSIM_CACHE") or os.path.join(base, "stepsim", "tasks")


@functools.lru_cache(maxsize=1)
def engine_id():
    """The SHA-256 of the extension module: a rebuilt simulator does not reuse old results."""
    digest = hashlib.sha256()
    with open(_stepsim.__file__, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def technology_id():
    """The SHA-256 of the default technology table's file (the task's energy and area are priced
    with it): an edited table does not reuse old results."""
    path = os.path.join(_stepsim.source_dir, "hw", "presets", "tech", _stepsim.default_technology() + ".yaml")
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@functools.lru_cache(maxsize=64)
def hardware(preset, sets):
    """The hardware parameters of a run: the preset's, with the settings (a tuple of pairs)."""
    params = dict(_stepsim.preset(preset))
    params.update(dict(sets))
    return tuple(sorted(params.items()))


def task_key(task, routing_digest):
    """The content address of a task (module doc)."""
    params = dict(task["params"])
    if "moe_trace" in params:
        params["moe_trace"] = "sha256:" + routing_digest
    what = {"format": CACHE_FORMAT, "engine": engine_id(), "technology": technology_id(), "layer": task["layer"],
            "params": params,
            "hardware": hardware(task["preset"], tuple(sorted(task["set"].items()))), "mode": task["mode"]}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


class Cache:
    """Task results by key, in a folder (module doc)."""

    def __init__(self, folder):
        self.folder = os.path.abspath(folder)
        try:
            os.makedirs(os.path.join(self.folder, "routing"), exist_ok=True)
        except OSError as e:
            raise _stepsim.Error("cache %s: cannot create it: %s" % (self.folder, e.strerror)) from None
        if not os.access(self.folder, os.W_OK):
            raise _stepsim.Error("cache %s: not writable" % self.folder)

    def path(self, key):
        return os.path.join(self.folder, key[:2], key + ".json")

    def get(self, key):
        try:
            with open(self.path(key)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None  # not there (a half-written file cannot exist: see put)

    def put(self, key, result):
        write_whole(self.path(key), json.dumps(result, sort_keys=True))

    def routing_file(self, text):
        """The routing table `text` as a file named by its content: (path, SHA-256)."""
        digest = hashlib.sha256(text.encode()).hexdigest()
        path = os.path.join(self.folder, "routing", digest + ".csv")
        if not os.path.exists(path):
            write_whole(path, text)
        return path, digest


def write_whole(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def simulate(task):
    """Runs a task: its cycles, off-chip bytes, FLOPs, energy (pJ: its actions and the leakage of its
    allocated fabric while it runs) and that fabric's area (mm2), whether its units fit the fabric,
    and the per-phase split."""
    start = time.perf_counter()
    graph = Graph.from_layer(task["layer"], **task["params"])
    r = graph.run(preset=task["preset"], mode=task["mode"], set=task["set"])
    out = {"cycles": int(r.cycles), "read_bytes": int(r.report["offchip"]["read_bytes"]),
           "write_bytes": int(r.report["offchip"]["write_bytes"]), "flops": int(r.report["compute"]["flops"]),
           "energy_pj": float(r.report["energy"]["total_pj"]), "area_mm2": float(r.report["area"]["total_mm2"]),
           "fits": bool(r.report["fabric"]["fits"]), "phases": phase_split(task["layer"], r),
           "wall_seconds": time.perf_counter() - start}
    return out


def phase_split(layer, result):
    """{phase: {"cycles", "read_bytes", "write_bytes"}}: a phase's cycles run from the end of the
    one before to its own last node's finish (the phases are sequenced by acknowledgements); its
    bytes are the tiles its off-chip loads and stores moved."""
    if layer == "lm_head":
        read, write = result.tile_traffic()
        return {"lm_head": {"cycles": int(result.cycles), "read_bytes": read, "write_bytes": write}}
    ends = {p: 0 for p in PHASES}
    for n in result.report["nodes"]:
        phase = n["name"].split("_", 1)[0]
        if phase in ends:
            ends[phase] = max(ends[phase], int(n["finish_cycle"]))
    split, before = {}, 0
    for p in PHASES:
        end = max(ends[p], before)
        read, write = result.tile_traffic(p + "_")
        split[p] = {"cycles": end - before, "read_bytes": read, "write_bytes": write}
        before = end
    return split


def run_task(job, point):
    """The pool's task (stepsim.pool.workers): simulates the task `point` unless the cache has it,
    and puts the result in the cache before it returns (so a coordinator killed meanwhile loses
    nothing). A task that fails returns {"error": message}, which is not cached."""
    cache = Cache(job["cache"])
    found = cache.get(point["key"])
    if found is not None:
        return found
    try:
        result = simulate(point["task"])
    except (_stepsim.Error, ValueError, OSError) as e:
        return {"error": "%s %s: %s" % (point["task"]["layer"], _brief(point["task"]["params"]), str(e).strip())}
    cache.put(point["key"], result)
    return result


def _brief(params):
    keys = ("batch", "tokens", "offset")
    return " ".join("%s=%s" % (k, params[k]) for k in keys if k in params)
