"""What the validation scripts (swiglu_units.py, moe_units.py) share: the rows' CSV, Pearson's
correlation, and the closing summary of a table of model-vs-units points (rows with
approx_cycles, units_cycles, error_pct and cosim_wall_s)."""
import csv
import math


def pearson(xs, ys):
    n = len(xs)
    if n < 2:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in fields})


def point_cells(r):
    """A point's model and unit cycles, error and traffic, as table cells (empty where it failed)."""
    return [r.get("approx_cycles", ""), r.get("units_cycles", ""),
            ("%+.2f %%" % r["error_pct"]) if "error_pct" in r else "",
            "%s / %s" % (r.get("approx_read_B", ""), r.get("units_read_B", "")),
            "%s / %s" % (r.get("approx_written_B", ""), r.get("units_written_B", ""))]


POINT_HEADERS = ["approx [cycles]", "units [cycles]", "error", "read approx / units [B]", "written approx / units [B]"]


def status_cell(r):
    return r["status"] + ((" (approximate: " + r["nodes_approx"] + ")") if r.get("nodes_approx") else "")


def summary_md(rows, total_wall_s):
    """Max and mean |error|, Pearson, co-simulation speed and the total wall time, as Markdown."""
    ok = [r for r in rows if "units_cycles" in r]
    md = ""
    if ok:
        errs = [abs(r["error_pct"]) for r in ok]
        md += "\nMax |error| %.2f %%, mean |error| %.2f %% over %d points; Pearson correlation %.4f.\n" % (
            max(errs), sum(errs) / len(errs), len(ok), pearson([r["approx_cycles"] for r in ok],
                                                               [r["units_cycles"] for r in ok]))
        sim = sum(r["units_cycles"] for r in ok)
        wall = sum(r["cosim_wall_s"] for r in ok)
        md += "Co-simulation: %d model cycles in %.1f s wall (with its all-approximate twin run), %.0f cycles/s.\n" % (
            sim, wall, sim / wall if wall else 0)
    md += "\nTotal wall time: %.1f s for %d points.\n" % (total_wall_s, len(rows))
    return md
