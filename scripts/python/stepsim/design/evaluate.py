"""One point of a design space: build its program, run it, and read the figures a search compares.

Shared by stepsim.dse and its workers (evaluate_point is the pool's task), so that a metric means
the same everywhere. A program is one of
    {"layer": NAME, "params": {...}}        a layer of the library (stepsim layers)
    {"graph": PATH}                         a graph file (its params: may be searched)
    {"builder": "FILE.py:FUNCTION"}          a Python function returning a stepsim.Graph
    {"torch": "FILE.py:FACTORY"}             a PyTorch module from a factory, lowered by stepsim.torch
                                            (stepsim.design.torch_program)
    {"serve": MODEL, "params": {...}}       a serving run of a model over a request trace
                                            (stepsim.serving; its metrics: SERVING_METRICS)
"""
import functools
import importlib.util
import os
import time

from .. import _stepsim
from ..core import metrics
from ..core._checks import argument_kinds
from ..core.graph import Graph
from ..serving import policy as serving_policy
from ..serving.report import SERVING_METRICS
from ..serving.run import serve
from . import torch_program

# Every metric a search can minimise, maximise or bound: the metric table's (docs/metrics.md).
METRICS = metrics.UNITS       # name -> unit
METRIC_DOCS = metrics.DOCS    # name -> one-line doc
# A serving program's own parameters (stepsim.serving.serve's) with their kinds; its metrics.
SERVE_PARAMS = {"requests": "string", "first_row": "int", "count": "int", "time_scale": "number",
                "routing": "string", "seed": "int", **{k: "int" for k in serving_policy.DEFAULTS}}
SERVE_METRICS = {name: unit for name, (unit, _) in SERVING_METRICS.items()}


def program_metrics(program):
    """{name: unit} of the metrics a program's runs measure."""
    return SERVE_METRICS if "serve" in program else METRICS


def header(name, units):
    """'name [unit]' for a metric of `units`, the name alone for anything else."""
    return "%s [%s]" % (name, units[name]) if name in units else name


def run_metrics(result):
    """The metrics of a run (a stepsim Result), and `fits` (the units it used fit the fabric)."""
    return {**result.metrics(), "fits": bool(result.report["fabric"]["fits"])}


def program_keys(program):
    """The names a point gives the program itself: a layer's parameters, a builder's arguments,
    a graph file's `params:`, a torch factory's arguments and the lowering's schedule keys. Every
    other name is a setting of the run (hardware, NODE.PARAM)."""
    if "layer" in program:
        layer = [d for d in _stepsim.layers() if d["name"] == program["layer"]]
        if not layer:
            raise _stepsim.Error("unknown layer '%s' (stepsim layers: %s)"
                                 % (program["layer"], ", ".join(sorted(d["name"] for d in _stepsim.layers()))))
        return {p["name"] for p in layer[0]["params"]}
    if "builder" in program:
        return set(argument_kinds(load_builder(program["builder"])))
    if "torch" in program:
        return set(torch_program.program_kinds(program["torch"]))
    if "serve" in program:
        return set(SERVE_PARAMS)
    return graph_params(program["graph"])


def graph_params(path):
    """The names of a graph file's `params:` section."""
    import yaml

    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except OSError as e:
        raise _stepsim.Error("cannot open graph file '%s': %s" % (path, e.strerror)) from None
    except yaml.YAMLError as e:
        raise _stepsim.Error("graph file '%s' is not valid YAML: %s" % (path, e)) from None
    params = data.get("params") if isinstance(data, dict) else None
    return set(params) if isinstance(params, dict) else set()


@functools.lru_cache(maxsize=16)
def load_builder(spec):
    """"FILE.py:FUNCTION" -> the function (imported from the file, so that a worker process finds it too)."""
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise _stepsim.Error("builder '%s': give FILE.py:FUNCTION" % spec)
    if not os.path.isfile(path):
        raise _stepsim.Error("builder '%s': no file %s" % (spec, path))
    module_spec = importlib.util.spec_from_file_location("stepsim_builder_" + str(abs(hash(path))), path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise _stepsim.Error("builder '%s': %s has no function %s" % (spec, path, name))
    return fn


def split_point(program, point):
    """(the program's arguments: its fixed params with the point's own; the run's settings)."""
    own = program_keys(program)
    args = {**program.get("params", {}), **{k: v for k, v in point.items() if k in own}}
    return args, {k: v for k, v in point.items() if k not in own}


def build(program, point):
    """The point's Graph and the settings of its run ({key: value} for Graph.run's set=)."""
    args, settings = split_point(program, point)
    if "torch" in program:  # the lowered graph, at the FIFO depth the lowering asks for
        lowered = torch_program.lower(program["torch"], args)
        return lowered.graph, {"fifo_depth": lowered.fifo_depth, **settings}
    if "layer" in program:
        return Graph.from_layer(program["layer"], **args), settings
    if "builder" in program:
        g = load_builder(program["builder"])(**args)
        if not isinstance(g, Graph):
            raise TypeError("builder '%s' returned %r, not a stepsim.Graph" % (program["builder"], g))
        return g, settings
    return Graph.from_yaml(program["graph"], params=args), settings


def evaluate(job, point):
    """Runs one point of `job` ({"program", "preset", "tech", "set", "mode"}) -> {"metrics": {...}} or
    {"error": message}, with the point's wall time in seconds. Never raises for a bad point: a
    search keeps failed points with their error."""
    start = time.perf_counter()
    preset, mode, tech = job.get("preset", "step-artifact"), job.get("mode", "timing"), job.get("tech")
    try:
        if "serve" in job["program"]:
            out = {"metrics": serve_metrics(job, point)}
            out["wall_seconds"] = time.perf_counter() - start
            return out
        if "torch" in job["program"]:  # lowered, then run as stepsim.torch runs it
            args, settings = split_point(job["program"], point)
            lowered = torch_program.lower(job["program"]["torch"], args)
            r = lowered.run(mode=mode, preset=preset, set={**job.get("set", {}), **settings}, tech=tech).result
        else:
            graph, settings = build(job["program"], point)
            settings = {**job.get("set", {}), **settings}
            r = graph.run(preset=preset, mode=mode, set=settings, tech=tech)
        out = {"metrics": run_metrics(r)}
    except (_stepsim.Error, TypeError, ValueError, OSError) as e:
        out = {"error": str(e).strip() or type(e).__name__}
    out["wall_seconds"] = time.perf_counter() - start
    return out


def serve_metrics(job, point):
    """A serving program's point: the run (inline: the trials are what runs in parallel) with its
    tasks in the shared task cache, so that trials reuse each other's simulations."""
    args, settings = split_point(job["program"], point)
    args = {k: (int(v) if SERVE_PARAMS[k] == "int" else float(v) if SERVE_PARAMS[k] == "number" else v)
            for k, v in args.items()}
    if "requests" not in args:
        raise _stepsim.Error("a serving program needs its requests (program.params.requests: a trace file)")
    schedule = {k: args.pop(k) for k in list(args) if k in serving_policy.DEFAULTS}
    r = serve(job["program"]["serve"], args.pop("requests"), preset=job.get("preset", "step-artifact"),
              set={**job.get("set", {}), **settings}, schedule=schedule, cache=job.get("cache"), **args)
    return {**r.metrics(), "fits": r.summary["fits"]}


def evaluate_point(job, point):
    """The pool's task (stepsim.pool.workers): evaluate(), and whatever else the point raises (a
    user's builder may raise anything) as its error: it must neither end the search (inline) nor
    kill the worker and be reported as the worker's death."""
    start = time.perf_counter()
    try:
        return evaluate(job, point)
    except Exception as e:
        where = job.get("program", {}).get("builder")
        return {"error": "%s%s: %s" % ("builder %s raised " % where if where else "", type(e).__name__, e),
                "wall_seconds": time.perf_counter() - start}
