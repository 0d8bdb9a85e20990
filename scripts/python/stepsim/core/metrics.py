"""The metric table as the package reads it: every figure a run report gives a sweep, a search's
objectives and constraints and the plots, one name each (sim/report/metrics.h, docs/metrics.md,
`stepsim metrics`). The table and every formula are C++'s; nothing here extracts a figure."""
from .. import _stepsim

TABLE = tuple(_stepsim.metric_table())
UNITS = {m["name"]: m["unit"] for m in TABLE}  # name -> unit
DOCS = {m["name"]: m["doc"] for m in TABLE}    # name -> one-line doc


def values(report, clock_ghz=None):
    """{name: value} of every metric of a run's report (a dict), in the table's order; NaN where the
    report cannot give one (time_us without the run's clock_ghz, a symbolic figure with no value)."""
    return dict(_stepsim.metric_values(report, clock_ghz))


def header(name):
    """'name [unit]' for a metric, the name alone for anything else (a parameter of the space)."""
    return "%s [%s]" % (name, UNITS[name]) if name in UNITS else name
