"""A grid of runs as a DataFrame: ``stepsim.sweep(graph, {"hbm_channels": [8, 16], ...})``."""
import itertools
import time

import pandas as pd

from . import _stepsim


def sweep(graph, grid, preset="step-artifact", mode="timing", set=None, impl=None):
    """Runs `graph` (a Graph, or a callable taking the point's program parameters and returning a
    Graph) at every point of `grid` {key: [values]} (the product, in key order). A key that names
    a hardware parameter (stepsim.presets) or NODE.PARAM is a setting of the run; with a callable,
    the other keys are its arguments. Returns one row per point: the point's values, cycles,
    off-chip bytes read and written, FLOPs, allocated compute and memory units, the on-chip
    requirement and the wall time; a failed point keeps its row, with its error in `error`."""
    from .graph import Graph

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
            settings.update(set or {})
            r = g.run(preset=preset, mode=mode, set=settings, impl=impl)
            rep = r.report
            row.update(cycles=r.cycles, offchip_read_bytes=rep["offchip"]["read_bytes"],
                       offchip_write_bytes=rep["offchip"]["write_bytes"], flops=rep["compute"]["flops"],
                       compute_units=rep["fabric"]["compute_units"], memory_units=rep["fabric"]["memory_units"],
                       onchip_requirement_bytes=rep["onchip"]["requirement_bytes"], error="")
        except (_stepsim.Error, TypeError) as e:
            row["error"] = str(e)
        row["wall_seconds"] = time.perf_counter() - start
        rows.append(row)
    return pd.DataFrame(rows)


def _is_setting(key):
    return "." in key or key in _hardware_keys()


_HW = None


def _hardware_keys():
    global _HW
    if _HW is None:
        _HW = set(_stepsim.preset("step-artifact"))
    return _HW
