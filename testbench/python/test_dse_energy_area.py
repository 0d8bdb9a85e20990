"""The DSE with what a design costs (issue 37): area as an objective, a power budget as a
constraint, the technology table named by the space (`tech:`) and its entries searched
(`tech.SECTION.KEY`). Areas are checked against the sum worked out here from each trial's unit
counts and the table's entries (docs/energy.md, "Area of the allocated fabric")."""
import csv
import os
import re

import pytest
import yaml

import stepsim
from stepsim.core.graph import OPS
from stepsim.design import space as space_module

from conftest import ROOT

TECH_FILE = os.path.join(ROOT, "hw", "presets", "tech", "tech-7nm-literature.yaml")
PRESET_FILE = os.path.join(ROOT, "hw", "presets", "step-artifact.yaml")

# A grid of 6 SwiGLU points: the intermediate tile and the HBM channels.
SPACE = {
    "name": "swiglu-area",
    "program": {"layer": "swiglu", "params": {"batch": 32}},
    "parameters": {"tile_f": [32, 64, 128], "hbm.channels": [4, 8]},
    "objectives": {"cycles": "min", "area_mm2": "min"},
    "search": {"method": "grid"},
}


def space(**changes):
    return dict(SPACE, **changes)


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def entries(path=TECH_FILE):
    """{section.key: value} of a technology file, read as YAML (not through the simulator)."""
    with open(path) as f:
        data = yaml.safe_load(f)
    return {"%s.%s" % (section, key): e["value"] for section in ("energy_pj", "area_mm2", "leakage_mw")
            for key, e in data[section].items()}


def address_generators(tile_f):
    """One per off-chip load or store node of the program's graph."""
    g = stepsim.layers.swiglu(batch=32, tile_f=tile_f)
    return sum(OPS[n["op"]].category == "off-chip memory" for n in g.nodes)


def area_by_hand(row, t, ags):
    """mm2: compute units, memory units with their SRAM, a router per unit, the address
    generators, an HBM PHY per channel."""
    with open(PRESET_FILE) as f:
        kib = yaml.safe_load(f)["pmu_capacity"] / 1024
    cu, mu, channels = int(row["compute_units"]), int(row["memory_units"]), int(row["hbm.channels"])
    return (cu * t["area_mm2.pcu"] + mu * (t["area_mm2.pmu_logic"] + kib * t["area_mm2.sram_per_kib"])
            + (cu + mu) * t["area_mm2.router"] + ags * t["area_mm2.address_generator"]
            + channels * t["area_mm2.hbm_phy_channel"])


def power_budget():
    """A budget between the powers of the grid's points (W): some are over it, some under."""
    powers = sorted(stepsim.layers.swiglu(batch=32, tile_f=f).run(set={"hbm.channels": c})
                    .report["energy"]["average_power_w"] for f in (32, 64, 128) for c in (4, 8))
    assert powers[2] < powers[3]
    return (powers[2] + powers[3]) / 2


def test_area_objective_power_budget_and_the_front(tmp_path):
    budget = power_budget()
    df = stepsim.dse(space(constraints={"average_power_w": {"max": budget}}), str(tmp_path / "o"), progress=False)
    rows = read_csv(tmp_path / "o" / "trials.csv")
    assert len(rows) == 6
    t = entries()
    for r in rows:
        assert float(r["area_mm2"]) == pytest.approx(area_by_hand(r, t, address_generators(int(r["tile_f"]))),
                                                     rel=1e-12)
        assert r["state"] == ("infeasible" if float(r["average_power_w"]) > budget else "ok")
    assert sorted(r["state"] for r in rows) == ["infeasible"] * 3 + ["ok"] * 3
    # 4 more channels: 4 more PHYs, and nothing else of the fabric changes.
    by_point = {(int(r["tile_f"]), int(r["hbm.channels"])): float(r["area_mm2"]) for r in rows}
    for f in (32, 64, 128):
        assert by_point[f, 8] - by_point[f, 4] == pytest.approx(4 * t["area_mm2.hbm_phy_channel"], rel=1e-12)
    # The front: the feasible trials no feasible trial dominates in (cycles, area).
    ok = [(int(r["cycles"]), float(r["area_mm2"])) for r in rows if r["state"] == "ok"]
    front = {p for p in ok if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in ok)}
    written = {(int(r["cycles"]), float(r["area_mm2"])) for r in read_csv(tmp_path / "o" / "pareto.csv")}
    assert written == front and front
    assert list(df["state"]) == [r["state"] for r in rows]


def test_a_tech_file_and_a_searched_tech_entry_change_the_area(tmp_path):
    # The literature table with a compute unit of 1.0 mm2 (0.7016 in the table).
    t = entries()
    text = open(TECH_FILE).read()
    assert text.count("value: 0.7016\n") == 1
    mine = tmp_path / "my-tech.yaml"
    mine.write_text(text.replace("value: 0.7016\n", "value: 1.0\n"))
    fixed = {"set": {"hbm.channels": 4}}
    base = stepsim.dse(space(parameters={"tile_f": [64]}, **fixed), str(tmp_path / "base"), progress=False)
    searched = space(tech=str(mine), parameters={"tile_f": [64], "tech.area_mm2.hbm_phy_channel": [1.5, 3.0]}, **fixed)
    df = stepsim.dse(searched, str(tmp_path / "o"), progress=False)
    assert list(df["state"]) == ["ok", "ok"] and list(df["tech.area_mm2.hbm_phy_channel"]) == [1.5, 3.0]
    cu = int(base.loc[0, "compute_units"])
    assert cu > 0 and list(df["compute_units"]) == [cu, cu] and list(df["cycles"]) == [base.loc[0, "cycles"]] * 2
    assert df.loc[0, "area_mm2"] - base.loc[0, "area_mm2"] == pytest.approx(cu * (1.0 - t["area_mm2.pcu"]), rel=1e-9)
    assert df.loc[1, "area_mm2"] - df.loc[0, "area_mm2"] == pytest.approx(4 * (3.0 - 1.5), rel=1e-9)
    # Leakage follows the table's leakage entries, not its areas: the static energy is unchanged.
    assert list(df["energy_static_pj"]) == [base.loc[0, "energy_static_pj"]] * 2


@pytest.mark.parametrize("changes, message", [
    ({"tech": "tech-3nm-nowhere"}, "space: unknown tech 'tech-3nm-nowhere' (a technology file, or one of: "),
    ({"parameters": {"tile_f": [64], "tech.area_mm2.hbm_phy": [1.0, 2.0]}},
     "'tech.area_mm2.hbm_phy' is not a hardware parameter (did you mean tech.area_mm2.hbm_phy_channel?)"),
    ({"set": {"tech.area.pcu": 1.0}}, "set.tech.area.pcu: unknown technology entry 'area.pcu' (known: "
                                      "area_mm2.address_generator, area_mm2.hbm_phy_channel, area_mm2.pcu,"),
])
def test_an_unknown_tech_or_tech_entry_is_refused_before_anything_runs(tmp_path, changes, message):
    with pytest.raises(stepsim.Error, match=re.escape(message)):
        stepsim.dse(space(**changes), str(tmp_path / "o"), progress=False)
    assert not (tmp_path / "o").exists()
    with pytest.raises(stepsim.Error, match=re.escape(message)):
        space_module.load(space(**changes))
