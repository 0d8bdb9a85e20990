"""What a run and an analysis give back: the CLI's report as a dict, tables as pandas DataFrames,
symbolic metrics as SymPy expressions beside the measured values, stored tensors as NumPy."""
import json

import pandas as pd

from . import metrics
from ._symbolic import to_sympy

# The report's "symbolic" section: metric -> the measured value it is compared with.
SYMBOLIC_METRICS = ("read_bytes", "write_bytes", "flops", "onchip_requirement_bytes")


class Result:
    """One run.

    cycles      the run's cycles (the largest final local time over the operators)
    report      the full JSON report of `stepsim run --report`, as a dict (docs/user-guide.md)
    summary     the summary `stepsim run` prints
    outputs     functional mode: every stored tensor (written by the run, or declared as output),
                as a NumPy array [rows, cols] (float32 holding bf16 values for bf16 tensors)
    clock_ghz   the run's clock (GHz), which the report does not carry: metrics() converts with it
    nodes       per-node statistics (DataFrame, one row per node, the report's node fields)
    channels    per-channel statistics (DataFrame)
    symbolic    the symbolic prediction beside the measured value (DataFrame: metric, expr,
                predicted, measured), or None when shape inference could not type the graph
    cosim       co-simulation: the comparison report `stepsim run --impl` prints (else None)
    equivalent  co-simulation: the verdict (else None)
    cosim_figures  co-simulation: the report's totals as numbers (approx_cycles, cosim_cycles,
                their wall seconds, nodes, nodes_on_units, unit_clocks; down-tiled and functional:
                logical_cycles, logical_wall_seconds of the graph before down-tiling), else None
    downtile    a run with downtile= and impl: the account of the graph's nodes (DataFrame: node,
                op, fn, conversion, down_tiled, nodes, on_units, units, why, reason; else None)
    downtile_tile  the side T of the blocks the run down-tiled to (else None)
    logical_identical  down-tiled, co-simulated and functional: whether the stored tensors equal
                the graph's own (run all-approximate before down-tiling) bit for bit (else None)
    """

    def __init__(self, raw):
        self.report = json.loads(raw["report"])
        self.summary = raw["summary"]
        self.outputs = dict(raw["stored"])
        self.cosim = raw.get("cosim")
        self.equivalent = raw.get("equivalent")
        self.cosim_figures = dict(raw["cosim_figures"]) if "cosim_figures" in raw else None
        self.downtile = pd.DataFrame(list(raw["downtile"])) if "downtile" in raw else None
        self.downtile_tile = raw.get("downtile_tile")
        self.downtile_text = raw.get("downtile_text")
        self.logical_identical = raw.get("logical_identical")
        self.clock_ghz = raw.get("clock_ghz")  # the run's clock (for time_us)
        self.cycles = self.report["cycles"]
        self.nodes = pd.DataFrame(self.report["nodes"])
        self.channels = pd.DataFrame(self.report["channels"])
        self.symbolic = _symbolic_table(self.report["symbolic"])

    def metrics(self):
        """Every metric of the run (stepsim.core.metrics, docs/metrics.md) as {name: value}."""
        return metrics.values(self.report, self.clock_ghz)

    def tile_traffic(self, prefix=""):
        """Off-chip bytes as the paper's traffic formula counts them (tiles moved x tile bytes): the
        bytes on the channels out of the off-chip loads and into the stores (of the loads and
        stores whose names start with `prefix`: a phase's, say). `report["offchip"]` counts HBM
        requests instead (x request_bytes: a tile narrower than a request costs a whole one).
        Returns (read bytes, write bytes)."""
        ops = dict(zip(self.nodes["name"], self.nodes["op"]))
        read = write = 0
        for name, nbytes in zip(self.channels["name"], self.channels["bytes"]):
            producer, consumer = (end.rsplit(".", 1)[0] for end in name.split("->"))
            if producer.startswith(prefix) and ops.get(producer, "").endswith("OffChipLoad"):
                read += nbytes
            if consumer.startswith(prefix) and ops.get(consumer, "").endswith("OffChipStore"):
                write += nbytes
        return int(read), int(write)

    def __repr__(self):
        return "<Result %s: %d cycles>" % (self.report["graph"], self.cycles)


def _symbolic_table(section):
    if not section.get("available"):
        return None
    rows = []
    for metric in SYMBOLIC_METRICS:
        item = section[metric]
        rows.append({"metric": metric, "expr": to_sympy(item["expr"]), "predicted": _known(item),
                     "measured": item["measured"]})
    return pd.DataFrame(rows)


class Analysis:
    """`stepsim analyze` of a graph: stream types, symbols and the symbolic metrics.

    streams   {"node.port": type text}
    symbols   {name: known value (SymPy) or None}
    metrics   the graph's totals {metric: SymPy expression}: read_bytes, write_bytes, flops,
              onchip_bytes; `values` the same with the known symbols substituted
    nodes     per-node metrics (DataFrame: name, op, and each metric as a SymPy expression)
    json      the analysis as `stepsim analyze --json` writes it
    """

    METRICS = ("read_bytes", "write_bytes", "flops", "onchip_bytes")

    def __init__(self, text):
        self.json = json.loads(text)
        self.streams = self.json.get("streams", {})
        self.symbols = {k: (to_sympy(v) if v is not None else None) for k, v in self.json.get("symbols", {}).items()}
        self.metrics = {m: to_sympy(self.json[m]["expr"]) for m in self.METRICS}
        self.values = {m: _known(self.json[m]) for m in self.METRICS}
        rows = []
        for n in self.json.get("nodes", []):
            row = {"name": n["name"], "op": n["op"]}
            row.update({m: to_sympy(n[m]["expr"]) for m in self.METRICS})
            rows.append(row)
        self.nodes = pd.DataFrame(rows)


def _known(item):
    """A metric's value with the known symbols substituted: an int, or a SymPy expression."""
    if item.get("value") is not None:
        return item["value"]
    return to_sympy(item.get("evaluated", item["expr"]))
