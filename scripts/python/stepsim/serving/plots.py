"""The pictures of a serving run (matplotlib, PNG without a display): latency over the run and the
latency CDFs. Every axis says its unit."""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

LATENCIES = (("ttft_s", "time to first token"), ("tpot_s", "time per output token"), ("e2e_s", "end-to-end latency"))


def _save(fig, path):
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)


def _title(summary):
    return "%s, %d requests, %s (%s)" % (summary["model"], summary["requests"], summary["preset"],
                                         ", ".join("%s=%s" % kv for kv in summary["schedule"].items()))


def latency_over_time(requests, path, summary):
    """Each request's TTFT and end-to-end latency at its arrival time."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    ax.plot(requests["arrival_s"], requests["e2e_s"], "o", ms=4, c="tab:blue", label="end-to-end latency")
    ax.plot(requests["arrival_s"], requests["ttft_s"], "s", ms=4, c="tab:orange", label="time to first token")
    ax.set_xlabel("arrival time [s]")
    ax.set_ylabel("latency [s]")
    ax.set_title(_title(summary), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)


def latency_cdf(requests, path, summary):
    """The CDF over requests of TTFT, TPOT and end-to-end latency, with p50 and p99 marked."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, (column, what) in zip(axes, LATENCIES):
        values = np.sort(requests[column].dropna().to_numpy()) * 1e3
        if len(values):
            ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post", c="tab:blue")
            for q, style in ((50, ":"), (99, "--")):
                v = np.percentile(values, q)
                ax.axvline(v, ls=style, c="0.4", lw=1, label="p%d = %.3g ms" % (q, v))
            ax.legend(fontsize=8, loc="lower right")
        ax.set_xlabel("%s [ms]" % what)
        ax.set_ylabel("fraction of requests")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    fig.suptitle(_title(summary), fontsize=9)
    fig.tight_layout()
    _save(fig, path)
