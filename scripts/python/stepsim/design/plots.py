"""The pictures of a search (matplotlib, written as PNG without a display): the Pareto front and
one sensitivity plot per parameter. Every axis names its metric and unit."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .evaluate import header  # noqa: E402  (every axis: "name [unit]")


def _save(fig, path):
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    import os

    os.replace(tmp, path)


def pareto(s, rows, front, path, reference=None):
    """Every objective pair: all feasible trials (grey), infeasible ones (red x), the front (blue)
    and labelled reference points."""
    names = list(s.objectives)
    pairs = [(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))] or [(names[0], None)]
    fig, axes = plt.subplots(1, len(pairs), figsize=(6.4 * len(pairs), 4.8), squeeze=False)
    for ax, (x, y) in zip(axes[0], pairs):
        if y is None:  # one objective: its value per trial, the best so far as a line
            _one_objective(ax, s, rows, x)
            continue
        for state, style in (("ok", dict(c="0.6", s=14, label="feasible trials")),
                             ("infeasible", dict(c="tab:red", marker="x", s=18, label="infeasible (constraints)"))):
            pts = [r for r in rows if r["state"] == state]
            if pts:
                ax.scatter([r[x] for r in pts], [r[y] for r in pts], **style)
        f = sorted(front, key=lambda r: (r[x], r[y]))
        # Two objectives: the front is a staircase, joined. More: a pair shows a projection, in
        # which front points need not be monotone, so they are drawn unjoined.
        style = "o-" if len(names) == 2 else "o"
        ax.plot([r[x] for r in f], [r[y] for r in f], style, c="tab:blue", ms=5, label="Pareto front (%d)" % len(front))
        for label, point in (reference or {}).items():
            ax.scatter([point[x]], [point[y]], marker="*", s=120, zorder=3)
            ax.annotate(label, (point[x], point[y]), textcoords="offset points", xytext=(5, 5), fontsize=8)
        ax.set_xlabel(header(x, s.metrics))
        ax.set_ylabel(header(y, s.metrics))
        ax.legend(fontsize=8)
    failed = sum(r["state"] == "failed" for r in rows)
    fig.suptitle("%s: %d trials (%d failed)" % (s.name, len(rows), failed))
    fig.tight_layout()
    _save(fig, path)


def _one_objective(ax, s, rows, name):
    ok = [r for r in rows if r["state"] == "ok"]
    ax.scatter([r["trial"] for r in ok], [r[name] for r in ok], c="0.6", s=14, label="feasible trials")
    best, line = None, []
    for r in ok:
        v = r[name]
        if best is None or (v < best if s.objectives[name] == "min" else v > best):
            best = v
        line.append((r["trial"], best))
    if line:
        ax.step([t for t, _ in line], [v for _, v in line], where="post", c="tab:blue", label="best so far")
    ax.set_xlabel("trial")
    ax.set_ylabel(header(name, s.metrics))
    ax.legend(fontsize=8)


def sensitivity(s, rows, param, path):
    """Each objective against one parameter over the feasible trials, with the best value seen at
    each parameter value (the parameter's effect when the others are chosen well)."""
    ok = [r for r in rows if r["state"] == "ok" and r[param] is not None]
    names = list(s.objectives)
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.8), squeeze=False)
    categorical = any(isinstance(r[param], str) for r in ok)
    values = sorted({r[param] for r in ok}, key=lambda v: (str(type(v)), v))
    where = {v: i for i, v in enumerate(values)}
    for ax, name in zip(axes[0], names):
        xs = [where[r[param]] if categorical else r[param] for r in ok]
        ax.scatter(xs, [r[name] for r in ok], c="0.6", s=12, label="trials")
        pick = min if s.objectives[name] == "min" else max
        best = [(where[v] if categorical else v, pick(r[name] for r in ok if r[param] == v)) for v in values]
        ax.plot([b[0] for b in best], [b[1] for b in best], "o-", c="tab:blue", ms=4, label="best at each value")
        if categorical:
            ax.set_xticks(range(len(values)))
            ax.set_xticklabels([str(v) for v in values], rotation=30)
        ax.set_xlabel(param)
        ax.set_ylabel(header(name, s.metrics))
        ax.legend(fontsize=8)
    fig.suptitle("%s: sensitivity to %s (%d feasible trials)" % (s.name, param, len(ok)))
    fig.tight_layout()
    _save(fig, path)
