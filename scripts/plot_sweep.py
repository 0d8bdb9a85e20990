#!/usr/bin/python3
"""Plots a `stepsim sweep --csv` table: one line per value of --group, --y against --x.

  /usr/bin/python3 scripts/plot_sweep.py sweep.csv --x tile_n --y cycles [--group hbm.channels] -o sweep.png

Column names are the CSV header's: the swept keys, and the metrics with their units (the metric
table, docs/metrics.md: "cycles [cycles]", "time_us [us]", "onchip_bytes [B]"); a metric may be
named without its unit (--y time_us). Failed points (status not "ok") are left out
and listed on stderr. Uses Debian's python3-matplotlib.
"""
import argparse
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def number(text):
    try:
        return float(text)
    except ValueError:
        return text


def column(header, name, path):
    """The CSV column `name` names: itself, or the metric column "name [unit]"."""
    if name in header:
        return name
    metric = [c for c in header if c.startswith(name + " [")]
    if len(metric) == 1:
        return metric[0]
    sys.exit("error: no column '%s' in %s; columns: %s" % (name, path, ", ".join(header)))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv")
    p.add_argument("--x", required=True)
    p.add_argument("--y", required=True)
    p.add_argument("--group", default="")
    p.add_argument("-o", "--out", required=True, help="PNG file")
    a = p.parse_args()
    with open(a.csv) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit("error: %s has no rows" % a.csv)
    a.x, a.y, a.group = (column(rows[0], c, a.csv) if c else c for c in (a.x, a.y, a.group))
    good = [r for r in rows if r["status"] == "ok"]
    for r in rows:
        if r["status"] != "ok":
            print("left out: %s" % ", ".join("%s=%s" % kv for kv in r.items()), file=sys.stderr)
    groups = {}
    for r in good:
        groups.setdefault(r[a.group] if a.group else "", []).append((number(r[a.x]), number(r[a.y])))
    fig, ax = plt.subplots(figsize=(6, 4))
    for g, pts in groups.items():
        xs = [x for x, _ in pts]
        ax.plot(range(len(xs)) if any(isinstance(x, str) for x in xs) else xs, [y for _, y in pts], "o-",
                label="%s = %s" % (a.group, g) if a.group else None)
        if any(isinstance(x, str) for x in xs):
            ax.set_xticks(range(len(xs)), [str(x) for x in xs])
    ax.set_xlabel(a.x)
    ax.set_ylabel(a.y)
    if a.group:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print("wrote %s" % a.out)


if __name__ == "__main__":
    main()
