#!/usr/bin/python3
"""The Qwen3 MoE search with what the designs cost (graphs/dse/qwen3_moe_area.yaml: cycles, area and
energy as objectives under a power budget), beside the same search without them
(graphs/dse/qwen3_moe.yaml: cycles, on-chip bytes and allocated FLOPs/cycle, whose front sits at
the most HBM channels the space allows).

Both searches run (or resume) into OUT/area and OUT/plain; every trial of either has every metric,
area and energy included. Writes OUT/area.md (the commands, wall times, the front of the area
search per HBM channel count, the plain search's front at the same prices) and OUT/area.png (cycles
against area of every trial, coloured by HBM channels, the front marked); --docs copies both to
docs/figures/dse_qwen3_moe_area.{md,png}.

    PYTHONPATH=build/python /usr/bin/python3 scripts/dse/qwen3_moe_area.py --out /tmp/dse-area --workers local:2
"""
import argparse
import os
import shutil
import sys
import time

from stepsim.design import explore
from stepsim.design.evaluate import header

from qwen3_moe import run_line  # the same line per search as the plain Qwen3 script's

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AREA_SPACE = os.path.join(ROOT, "graphs", "dse", "qwen3_moe_area.yaml")
PLAIN_SPACE = os.path.join(ROOT, "graphs", "dse", "qwen3_moe.yaml")
DOCS = os.path.join(ROOT, "docs", "figures", "dse_qwen3_moe_area")
PARAMS = ("tile_n", "tile_f", "compute_bw", "hbm.channels", "onchip_bw")
MiB = 1024 * 1024


def timed_run(space, out, workers, trials):
    t0 = time.time()
    s, rows = explore.run(space, out, workers=workers, trials=trials)
    return s, rows, time.time() - t0


def phy_mm2(s, r):
    """The HBM PHYs' area: channels x the table's area_mm2.hbm_phy_channel."""
    return r["hbm.channels"] * phy_channel_mm2(s)


def phy_channel_mm2(s):
    import yaml
    from stepsim import _stepsim

    path = s.tech if os.path.isfile(s.tech) else os.path.join(_stepsim.source_dir, "hw", "presets", "tech",
                                                              s.tech + ".yaml")
    with open(path) as f:
        return yaml.safe_load(f)["area_mm2"]["hbm_phy_channel"]["value"]


def point_cells(s, r):
    """A trial as a table row: cycles, area (the PHYs' share), energy, per token, power, parameters."""
    return ["#%d" % r["trial"], "{:,}".format(r["cycles"]),
            "%.1f (%.1f %%)" % (r["area_mm2"], 100 * phy_mm2(s, r) / r["area_mm2"]),
            "%.2f" % (r["energy_pj"] / 1e9), "%.1f" % (r["energy_per_token_pj"] / 1e6), "%.1f" % r["average_power_w"],
            "%.1f" % (r["onchip_bytes"] / MiB)] + [str(r[p]) for p in PARAMS]


COLUMNS = ["trial", "cycles", "area [mm2] (HBM PHYs' share)", "energy [mJ]", "energy/token [uJ]", "power [W]",
           "on-chip [MiB]"] + list(PARAMS)


def head(columns):
    return "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"


def table(s, rows):
    return head(COLUMNS) + "\n".join("| " + " | ".join(point_cells(s, r)) + " |" for r in rows) + "\n"


def by_channels(front):
    """{channels: (front trials there, the fastest of them)}, fewest channels first."""
    out = {}
    for c in sorted({r["hbm.channels"] for r in front}):
        here = [r for r in front if r["hbm.channels"] == c]
        out[c] = (len(here), min(here, key=lambda r: (r["cycles"], r["area_mm2"], r["trial"])))
    return out


def front_summary(s, front):
    per = by_channels(front)
    lines = ["| %d | %d | " % (c, n) + " | ".join(point_cells(s, r)) + " |" for c, (n, r) in per.items()]
    return head(["HBM channels", "front trials"] + COLUMNS) + "\n".join(lines) + "\n"


def budget_line(s, rows):
    bound = s.constraints["average_power_w"]["max"]
    over = [r for r in rows if r["state"] == "infeasible"]
    chans = sorted({r["hbm.channels"] for r in over})
    return ("Power budget %g W: %d of %d trials over it (infeasible), at %s HBM channels; the most power of a "
            "feasible trial %.1f W, of any trial %.1f W.\n"
            % (bound, len(over), len(rows), ", ".join(map(str, chans)) or "no",
               max(r["average_power_w"] for r in rows if r["state"] == "ok"),
               max(r["average_power_w"] for r in rows if r["average_power_w"] is not None)))


def plot(s, rows, front, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.4, 5.6))
    norm = matplotlib.colors.Normalize(min(r["hbm.channels"] for r in rows), max(r["hbm.channels"] for r in rows))
    ok = [r for r in rows if r["state"] == "ok"]
    over = [r for r in rows if r["state"] == "infeasible"]
    sc = ax.scatter([r["area_mm2"] for r in ok], [r["cycles"] for r in ok], c=[r["hbm.channels"] for r in ok],
                    cmap="viridis", norm=norm, s=16, label="feasible trials")
    if over:
        ax.scatter([r["area_mm2"] for r in over], [r["cycles"] for r in over], c=[r["hbm.channels"] for r in over],
                   cmap="viridis", norm=norm, marker="x", s=22, label="over the power budget")
    ax.scatter([r["area_mm2"] for r in front], [r["cycles"] for r in front], facecolors="none", edgecolors="red",
               s=70, linewidths=1.2, label="front (cycles, area, energy): %d trials" % len(front))
    fig.colorbar(sc, ax=ax, label="hbm.channels")
    ax.set_xlabel(header("area_mm2", s.metrics))
    ax.set_ylabel(header("cycles", s.metrics))
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.set_title("%s: %d trials, coloured by HBM channels" % (s.name, len(rows)))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def distinct(rows):
    """The first trial of each distinct point, fastest first (a repeated point is a repeat run)."""
    seen, out = set(), []
    for r in sorted(rows, key=lambda r: (r["cycles"], r["trial"])):
        key = tuple(r[p] for p in PARAMS)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def channel_counts(front):
    return ", ".join("%d: %d" % (c, n) for c, (n, _) in by_channels(front).items())


def comparison(s, front, unbounded, pfront):
    """The area search's fastest design against the plain search's fastest of the least area."""
    a = min(front, key=lambda r: (r["cycles"], r["trial"]))
    least = min(r["area_mm2"] for r in pfront)
    p = min((r for r in pfront if r["area_mm2"] == least), key=lambda r: (r["cycles"], r["trial"]))
    return ("Front trials per HBM channel count (channels: trials): the plain search %s; the area search %s; the "
            "area search's trials counted without the power budget (the same trials, those over it included) %s.\n\n"
            "The plain search's fastest design of the least area, #%d (%d channels), against the area search's "
            "fastest, #%d (%d channels): cycles %.2fx, area %.3fx (%+.1f mm2), energy %.3fx, power %.1f W against "
            "%.1f W.\n"
            % (channel_counts(pfront), channel_counts(front), channel_counts(unbounded), p["trial"],
               p["hbm.channels"], a["trial"], a["hbm.channels"], a["cycles"] / p["cycles"],
               a["area_mm2"] / p["area_mm2"], a["area_mm2"] - p["area_mm2"], a["energy_pj"] / p["energy_pj"],
               p["average_power_w"], a["average_power_w"]))


def report(command, workers, area, plain):
    (s, rows, wall), (ps, prows, pwall) = area, plain
    front, pfront = explore.pareto_front(s, rows), explore.pareto_front(ps, prows)
    unbounded = explore.pareto_front(s, [dict(r, state="ok") for r in rows if r["state"] != "failed"])
    text = "# Qwen3 MoE design-space exploration with area, energy and a power budget\n\n"
    text += "`%s`, on %s:\n\n" % (command, time.strftime("%Y-%m-%d", time.gmtime()))
    text += "- " + run_line("area search (graphs/dse/qwen3_moe_area.yaml: cycles, area_mm2, energy_pj; "
                            "power budget)", s, rows, wall, workers)
    text += "- " + run_line("plain search (graphs/dse/qwen3_moe.yaml: cycles, onchip_bytes, "
                            "allocated_flops_per_cycle)", ps, prows, pwall, workers)
    text += "\n" + budget_line(s, rows)
    text += "\n## The area search's front, per HBM channel count\n\n"
    text += "The fastest front trial at each channel count on the front (area: the allocated fabric with its HBM "
    text += "PHYs, %g mm2 per channel, table %s):\n\n" % (phy_channel_mm2(s), s.tech)
    text += front_summary(s, front)
    text += "\n" + comparison(s, front, unbounded, pfront)
    text += "\n## The plain search's front at the same prices\n\n"
    text += ("Its %d front trials, distinct points (its objectives do not include area, energy or power; "
             "they are measured all the same):\n\n" % len(pfront))
    text += table(ps, distinct(pfront))
    text += "\n## The area search's whole front\n\n%d trials, distinct points:\n\n" % len(front)
    return text + table(s, distinct(front))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workers", default="local:2")
    ap.add_argument("--trials", type=int)
    ap.add_argument("--docs", action="store_true", help="also write docs/figures/dse_qwen3_moe_area.{md,png}")
    a = ap.parse_args()
    area = timed_run(AREA_SPACE, os.path.join(a.out, "area"), a.workers, a.trials)
    plain = timed_run(PLAIN_SPACE, os.path.join(a.out, "plain"), a.workers, a.trials)
    command = " ".join(["scripts/dse/qwen3_moe_area.py"] + sys.argv[1:])
    md = report(command, a.workers, area, plain)
    s, rows, _ = area
    with open(os.path.join(a.out, "area.md"), "w") as f:
        f.write(md)
    plot(s, rows, explore.pareto_front(s, rows), os.path.join(a.out, "area.png"))
    if a.docs:
        shutil.copyfile(os.path.join(a.out, "area.md"), DOCS + ".md")
        shutil.copyfile(os.path.join(a.out, "area.png"), DOCS + ".png")
    print(md)


if __name__ == "__main__":
    main()
