"""A grid of runs as a DataFrame: ``stepsim.sweep(graph, {"hbm_channels": [8, 16], ...})``."""
import itertools
import time

import numpy as np
import pandas as pd

from . import _stepsim
from .core import _checks as check
from .core.graph import Graph
from .pool.workers import Pool


def sweep(graph, grid, preset="step-artifact", mode="timing", set=None, impl=None, tech=None):
    """Runs `graph` (a Graph, or a callable taking the point's program parameters and returning a
    Graph) at every point of `grid` {key: [values]} (the product, in key order). A key that names
    a hardware parameter (stepsim.presets), tech.SECTION.KEY or NODE.PARAM is a setting of the run
    (tech: the technology table of the energy and area, None: the default); with a callable,
    the other keys are its arguments. Returns one row per point: the point's values, every metric
    of the metric table (stepsim.core.metrics, docs/metrics.md: cycles, time_us, off-chip bytes,
    FLOPs, units, on-chip bytes, utilisations) and the wall time; a failed point keeps its row, with
    its error in `error`."""
    if not isinstance(graph, Graph) and not callable(graph):
        raise TypeError("sweep: graph must be a stepsim.Graph or a function returning one, got %s" % check.shown(graph))
    grid = _grid(grid)
    check.path("sweep: preset", preset)
    check.text("sweep: mode", mode)
    check.text("sweep: impl", impl, none=True)
    fixed = check.mapping("sweep: set", set)
    keys = list(grid)
    rows = []
    for values in itertools.product(*(grid[k] for k in keys)):
        point = dict(zip(keys, values))
        row = dict(point)
        start = time.perf_counter()
        try:
            if isinstance(graph, Graph):
                g, settings = graph, dict(point)
            else:
                program = {k: v for k, v in point.items() if not _is_setting(k)}
                settings = {k: v for k, v in point.items() if _is_setting(k)}
                g = graph(**program)
                if not isinstance(g, Graph):  # a mistake in the caller's code: not a failed point
                    raise _NotAGraph("sweep: the function %s returned %s, not a stepsim.Graph"
                                     % (getattr(graph, "__name__", "graph"), check.shown(g)))
            settings.update(fixed)
            r = g.run(preset=preset, mode=mode, set=settings, impl=impl, tech=tech)
            row.update(r.metrics(), error="")
        except _NotAGraph as e:
            raise TypeError(str(e)) from None
        except (_stepsim.Error, TypeError) as e:
            row["error"] = str(e)
        row["wall_seconds"] = time.perf_counter() - start
        rows.append(row)
    return pd.DataFrame(rows)


class _NotAGraph(TypeError):
    pass


def _grid(grid):
    """{key: list of values}: each a list, tuple, range or 1-D NumPy array with at least one value
    (a string would sweep its characters, a dict its keys)."""
    grid = check.mapping("sweep: grid", grid)
    if not grid:
        raise _stepsim.Error("sweep: grid is empty: give {key: [values]}")
    for k, values in grid.items():
        if isinstance(values, np.ndarray) and values.ndim == 1:
            values = values.tolist()
        if not isinstance(values, (list, tuple, range)):
            raise TypeError("sweep: grid[%r] must be a list of values, got %s (%s)"
                            % (k, check.shown(values), type(values).__name__))
        if len(values) == 0:
            raise _stepsim.Error("sweep: grid[%r] has no values: give at least one" % k)
        grid[k] = list(values)
    return grid


def _is_setting(key):
    return "." in key or key in _hardware_keys()


_HW = None


def _hardware_keys():
    global _HW
    if _HW is None:
        _HW = set(_stepsim.preset("step-artifact"))
    return _HW


# --- `stepsim sweep --workers local:N | --slurm N`: the command line's sweep, spread over workers ---

def _spec_args(job):
    return (job["graph_file"], job["layer"], job["preset"], job["params"], job["sets"])


def evaluate_sweep_point(job, point):
    """The pool's task (stepsim.pool.workers): one row of the command line's sweep. What it raises
    is a bug (a point's errors are in its row): inline it is raised, in a worker it is the log's."""
    return _stepsim.sweep_point(*_spec_args(job), point["index"], tech=job.get("tech", _stepsim.default_technology()))


def distributed_sweep(job, workers, folder, sbatch_options=(), progress=None, keep=False):
    """Runs every point of the sweep `job` (graph_file, layer, preset, params, sets as
    [key, [values]]) on the workers; returns (rows in point order, the points retried because
    their worker died). A point whose worker died twice keeps an error row."""
    n = _stepsim.sweep_size(*_spec_args(job), tech=job.get("tech", _stepsim.default_technology()))
    points = {"p%08d" % i: {"index": i} for i in range(n)}
    with Pool(workers, folder, evaluate_sweep_point, job, sbatch_options, keep) as pool:
        results = pool.map(points, progress)
        retried = sorted(pool.retried)
    return [_row(results[k], job, points[k]["index"]) for k in sorted(points)], retried


def _row(result, job, index):
    if "status" in result:
        return {k: v for k, v in result.items() if k != "worker"}
    # The pool gave the point up (its worker died twice): an error row with the point's values.
    values = _point_values(job, index)
    return {"values": values, "ok": False, "ran": False, "status": "error: " + result["error"], "wall_s": 0.0}


def _point_values(job, index):
    axes = list(job["params"]) + list(job["sets"])
    values = []
    for _, vs in reversed(axes):
        values.append(vs[index % len(vs)])
        index //= len(vs)
    return values[::-1]
