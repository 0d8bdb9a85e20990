"""The metric table as the package reads it (stepsim.core.metrics, docs/metrics.md): a run's
metrics, a sweep's columns and a search's metrics are the C++ table's rows, under one name each."""
import math

import stepsim
from stepsim import _stepsim
from stepsim.core import metrics
from stepsim.design import evaluate

TABLE_NAMES = [m["name"] for m in _stepsim.metric_table()]


def test_a_run_gives_every_row_of_the_table_from_its_report(small_graph):
    r = small_graph.run()
    m = r.metrics()
    assert list(m) == TABLE_NAMES
    rep = r.report
    assert m["cycles"] == r.cycles
    assert m["offchip_read_bytes"] == rep["offchip"]["read_bytes"]
    assert m["offchip_bytes"] == rep["offchip"]["read_bytes"] + rep["offchip"]["write_bytes"]
    assert m["onchip_bytes"] == rep["onchip"]["requirement_bytes"]
    assert m["compute_units"] == rep["fabric"]["compute_units"]


def test_time_is_converted_at_the_runs_own_clock(small_graph):
    slow, fast = small_graph.run(), small_graph.run(set={"clock_ghz": 2.5})
    assert slow.clock_ghz == 1.0 and fast.clock_ghz == 2.5
    assert fast.cycles == slow.cycles  # the clock converts; it does not time
    assert slow.metrics()["time_us"] == slow.cycles / 1000.0
    assert fast.metrics()["time_us"] == fast.cycles / 2500.0
    assert math.isnan(metrics.values(slow.report)["time_us"])  # no clock given: no time


def test_a_sweep_has_one_column_per_metric_under_the_tables_name(small_graph):
    df = stepsim.sweep(small_graph, {"clock_ghz": [1.0, 2.0]})
    assert [c for c in df.columns if c in TABLE_NAMES] == TABLE_NAMES
    assert "onchip_requirement_bytes" not in df.columns  # the old name of onchip_bytes
    assert list(df["time_us"]) == [df["cycles"][0] / 1000.0, df["cycles"][1] / 2000.0]


def test_the_search_reads_the_same_table():
    assert evaluate.METRICS == {m["name"]: m["unit"] for m in _stepsim.metric_table()}
    assert evaluate.METRIC_DOCS == {m["name"]: m["doc"] for m in _stepsim.metric_table()}
    assert metrics.header("onchip_bytes") == "onchip_bytes [B]"
    assert metrics.header("tile_n") == "tile_n"  # a parameter of a space: no unit
