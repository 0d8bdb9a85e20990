"""Co-simulation of a lowered PyTorch module on the cycle-accurate units (docs/cosim.md, "Co-simulating
a lowered PyTorch module").

    lowered = stepsim.torch.lower(module, (x,))
    res = lowered.run(impl="rtl")      # or "hls"; mode="functional" by default
    res.outputs                        # the module's outputs, from the co-simulated run
    res.cosim                          # the per-node account (a pandas DataFrame)
    res.equivalent                     # the verdict
    print(res.summary)                 # the run's summary, the account, the verdict and the figures

A lowered graph streams logical tiles (tile_rows rows of a Linear's columns); the compute units take
[r x 4] and [r x 16] bf16 tiles. Lowered.run(impl=...) therefore runs Graph.run(impl=...,
downtile="auto"): the graph is down-tiled to the units' tile first (sim/transform/downtile.h, partial: a node
the down-tiler cannot rewrite, such as a row sum, keeps its logical tiles and retiling nodes convert
its streams), the side T = 16 or 4 that puts the most nodes on the units; then the run is the
project's co-simulation (sim/cosim/cosim.h): the down-tiled graph all-approximate and with every node that
has a unit on it, every channel's payloads compared beat by beat, the stored tensors bit for bit, and
the lowered graph itself run all-approximate, its outputs compared with the co-simulation's bit for
bit.

The account has one row per node of the lowered graph (then one per conversion between blocks and
logical tiles):
  node, op, fn    the node of the lowered graph
  down_tiled      rewritten onto blocks (else kept at its logical tiles: `why` is "not down-tiled")
  nodes, on_units its nodes in the down-tiled graph, and how many ran on hls/rtl units
  placement       the impl when all did, "approx" when none did, "partly <impl>" else
  units           the operators of those on units ("Accum, 2 Bufferize, 2 Streamify")
  why, reason     for a node (partly) approximate: the kind of reason (not down-tiled, function
                  without a unit, operator without a unit, tile shape, unit capacity, memory unit
                  pairing, parameters) and the reason in full
"""
from .. import _stepsim

__all__ = ["CosimResult", "run"]


def run(lowered, mode, preset, settings, impl, downtile):
    """The co-simulation behind Lowered.run(impl=...): a CosimResult."""
    if impl not in ("hls", "rtl"):
        raise _stepsim.Error("run: impl must be approx, hls or rtl, not %r" % (impl,))
    if downtile is None:
        raise _stepsim.Error("run: a lowered module is co-simulated down-tiled to the units' tile: downtile 'auto' "
                             "or a tile side, not None")
    result = lowered.graph.run(preset=preset, mode=mode, set=settings, impl=impl, downtile=downtile)
    return CosimResult(result, lowered.outputs_of(result, mode), impl)


def account(result, impl):
    """The per-node account of a down-tiled co-simulation's Result (a DataFrame; see the module)."""
    table = result.downtile.copy()

    def placement(row):
        if row["nodes"] and row["on_units"] == row["nodes"]:
            return impl
        return "approx" if row["on_units"] == 0 else "partly " + impl

    table["placement"] = table.apply(placement, axis=1) if len(table) else []
    columns = ["node", "op", "fn", "conversion", "down_tiled", "nodes", "on_units", "placement", "units", "why",
               "reason"]
    return table[columns]


class CosimResult:
    """A co-simulated run of a lowered module.

    outputs           the module's outputs (NumPy, float32 holding bf16 values) from the co-simulated run
    cycles            the co-simulated run's cycles (the units' cycle-accurate timing where they ran)
    cycles_approx     the down-tiled graph's cycles all-approximate
    cycles_logical    the lowered graph's cycles all-approximate (functional mode; else None)
    tile              the side T of the blocks the graph was down-tiled to
    cosim             the per-node account (DataFrame, see the module's docstring)
    equivalent        the verdict: the co-simulation's payloads equal the approximate run's on every
                      channel and its stored tensors bit for bit (sim/cosim/cosim.h), and (functional mode)
                      its outputs equal the lowered graph's approximate outputs bit for bit
    units_equivalent  the first part alone; logical_identical the second (None in timing mode)
    wall_seconds      the co-simulated run's wall time; wall_seconds_approx the approximate one's
    summary           the run's summary, the account, the verdict and the figures (also str(result))
    report            the co-simulation report (docs/cosim.md: per node and per channel)
    result            the stepsim.Result of the co-simulated run
    """

    def __init__(self, result, outputs, impl):
        self.result = result
        self.outputs = outputs
        self.impl = impl
        self.cycles = result.cycles
        figures = result.cosim_figures or {}
        self.cycles_approx = figures.get("approx_cycles")
        self.cycles_logical = figures.get("logical_cycles")
        self.wall_seconds = figures.get("cosim_wall_seconds")
        self.wall_seconds_approx = figures.get("approx_wall_seconds")
        self.tile = result.downtile_tile
        self.cosim = account(result, impl)
        self.units_equivalent = bool(result.equivalent)
        self.logical_identical = result.logical_identical
        self.equivalent = self.units_equivalent and self.logical_identical is not False
        self.report = result.cosim
        self.summary = self._summary(figures)

    def nodes(self, placement=None):
        """Names of the lowered graph's nodes (no conversions) with that placement (impl, "approx",
        "partly <impl>"), or all."""
        t = self.cosim[~self.cosim["conversion"]]
        if placement is not None:
            t = t[t["placement"] == placement]
        return list(t["node"])

    def _summary(self, f):
        t = self.cosim[~self.cosim["conversion"]]
        on = int((t["placement"] == self.impl).sum())
        lines = [self.result.summary.rstrip(), "",
                 "Co-simulated on %s units, down-tiled to [%d x %d] blocks: %d of %d nodes of the lowered graph "
                 "entirely on units, %d of %d nodes of the down-tiled graph (%d unit clock edges)."
                 % (self.impl, self.tile, self.tile, on, len(t), f.get("nodes_on_units", 0), f.get("nodes", 0),
                    f.get("unit_clocks", 0))]
        verdict = "equivalent" if self.equivalent else "NOT equivalent"
        parts = ["payloads and stored tensors %s the approximate run of the down-tiled graph"
                 % ("equal to" if self.units_equivalent else "DIFFERENT from")]
        if self.logical_identical is not None:
            parts.append("outputs %s the lowered graph's (approximate) bit for bit"
                         % ("equal to" if self.logical_identical else "DIFFERENT from"))
        lines.append("Verdict: %s (%s)." % (verdict, "; ".join(parts)))
        cyc = "Cycles: %s %d, approximate %d" % (self.impl, self.cycles, self.cycles_approx or 0)
        if self.cycles_logical is not None:
            cyc += " (the lowered graph before down-tiling: %d)" % self.cycles_logical
        lines.append(cyc + ". Wall: %.3f s co-simulated, %.3f s approximate."
                     % (self.wall_seconds or 0.0, self.wall_seconds_approx or 0.0))
        lines += ["", (self.result.downtile_text or "").rstrip()]
        return "\n".join(lines) + "\n"

    def __str__(self):
        return self.summary

    def __repr__(self):
        return "<CosimResult %s, T = %d: %d cycles (approximate %d), %s>" % (
            self.impl, self.tile, self.cycles, self.cycles_approx or 0,
            "equivalent" if self.equivalent else "NOT equivalent")
