"""What a serving run gives back (docs/serving.md, "Outputs"): per request, per iteration, where
the cycles went, and the run's summary; the files of `--out DIR` and the two plots.

Definitions (cycles at the preset's clock; seconds = cycles / clock):
    ttft    time to first token: arrival -> the end of the iteration that finishes its prompt
    tpot    time per output token after the first: (finish - first token) / (output - 1); none
            for a request of one output token
    e2e     end-to-end latency: arrival -> its last token
    queue   arrival -> the start of the iteration that first schedules it
    throughput  output tokens of all requests / the run's makespan (first arrival -> last token)
"""
import json
import math
import os
import shutil

import numpy as np
import pandas as pd

from .. import _stepsim
from .tasks import CATEGORY

FILES = ("requests.csv", "iterations.csv", "breakdown.csv", "summary.json", "summary.txt",
         "latency_over_time.png", "latency_cdf.png")
PERCENTILES = (50, 90, 99)
# The serving metrics a design-space search can use as objectives or constraints: name -> (unit, doc).
SERVING_METRICS = {
    "ttft_p50_s": ("s", "median time to first token"),
    "ttft_p99_s": ("s", "99th-percentile time to first token"),
    "tpot_p50_s": ("s", "median time per output token (after the first)"),
    "tpot_p99_s": ("s", "99th-percentile time per output token"),
    "e2e_p50_s": ("s", "median end-to-end request latency"),
    "e2e_p99_s": ("s", "99th-percentile end-to-end request latency"),
    "tokens_per_s": ("tokens/s", "output tokens per second over the run's makespan"),
    "makespan_s": ("s", "first arrival to last token"),
    "offchip_bytes_per_token": ("B/token", "off-chip bytes (HBM reads + writes) per output token"),
    "energy_per_token_pj": ("pJ/token", "energy of the layer runs (their actions, and the leakage of the fabric each "
                                        "allocates while it runs; idle time not charged) per output token"),
    "area_mm2": ("mm2", "the largest fabric any layer run of the model allocated"),
}


def check_out(out):
    """Refuses an output folder that cannot be written, before anything runs."""
    try:
        os.makedirs(out, exist_ok=True)
        probe = os.path.join(out, ".stepsim-write-test")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        raise _stepsim.Error("--out %s: cannot write there: %s" % (out, e.strerror)) from None


class ServeResult:
    """A serving run.

    requests    DataFrame, one row per request (the columns of requests.csv)
    iterations  DataFrame, one row per iteration of the model
    breakdown   DataFrame: cycles and off-chip bytes by stage (prefill, decode, lm_head), decoder
                layer and phase (qkv, attn, oproj, moe, lm_head) with its category
    summary     dict: the aggregates (summary.json), serving metrics (SERVING_METRICS) included
    """

    def __init__(self, serving, sched, coordinator, config, workers, wall_seconds):
        self.clock_ghz = serving.clock_ghz
        hz = serving.clock_ghz * 1e9
        self.requests = _request_table(sched, hz)
        self.iterations = _iteration_table(coordinator.iterations, serving, hz)
        self.breakdown = _breakdown(coordinator, serving)
        self.summary = _summary(self, serving, sched, coordinator, config, workers, wall_seconds)

    def metrics(self):
        return {k: self.summary["metrics"][k] for k in SERVING_METRICS}

    def text(self):
        return summary_text(self.summary, self.breakdown)


def _request_table(sched, hz):
    rows = []
    for st in sched.states:
        r = st.request
        ttft = st.first_token - st.arrival
        tpot = (st.finish - st.first_token) / (r.output - 1) if r.output > 1 else float("nan")
        e2e = st.finish - st.arrival
        rows.append({"request": r.index, "trace_row": r.row, "arrival_s": st.arrival / hz,
                     "prompt_tokens": r.prompt, "output_tokens": r.output,
                     "queue_cycles": st.scheduled - st.arrival, "ttft_cycles": ttft, "tpot_cycles": tpot,
                     "e2e_cycles": e2e, "queue_s": (st.scheduled - st.arrival) / hz, "ttft_s": ttft / hz,
                     "tpot_s": tpot / hz, "e2e_s": e2e / hz, "first_token_s": st.first_token / hz,
                     "finish_s": st.finish / hz})
    return pd.DataFrame(rows)


def _iteration_table(iterations, serving, hz):
    rows = []
    for it, parts, cycles in iterations:
        rows.append({"iteration": it.index, "start_cycles": it.start, "start_s": it.start / hz, "kind": it.kind(),
                     "decode_batch": len(it.decode),
                     "decode_padded": next((p.tokens for p in parts if p.stage == "decode"), 0),
                     "prefill_tokens": sum(n for _, n, _ in it.prefill), "prefill_requests": len(it.prefill),
                     "lm_head_tokens": it.heads, "cycles": cycles, "seconds": cycles / hz})
    return pd.DataFrame(rows)


def _breakdown(coordinator, serving):
    """Cycles and bytes by (stage, layer, phase), summed over the iterations."""
    acc = {}
    for _, parts, _ in coordinator.iterations:
        for p in parts:
            phases = coordinator.known[p.key]["phases"]
            layers = [p.layer] if p.layer is not None else (range(serving.model.layers) if p.stage != "lm_head"
                                                            else [None])
            for layer in layers:
                for phase, v in phases.items():
                    row = acc.setdefault((p.stage, -1 if layer is None else layer, phase), [0, 0, 0])
                    row[0] += v["cycles"]
                    row[1] += v["read_bytes"]
                    row[2] += v["write_bytes"]
    rows = [{"stage": stage, "layer": "" if layer < 0 else layer, "phase": phase, "category": CATEGORY[phase],
             "cycles": v[0], "read_bytes": v[1], "write_bytes": v[2]}
            for (stage, layer, phase), v in sorted(acc.items())]
    return pd.DataFrame(rows, columns=["stage", "layer", "phase", "category", "cycles", "read_bytes", "write_bytes"])


def _summary(result, serving, sched, c, config, workers, wall_seconds):
    req, hz = result.requests, serving.clock_ghz * 1e9
    first_arrival = min(st.arrival for st in sched.states)
    makespan = (sched.time - first_arrival) / hz
    out_tokens = int(req["output_tokens"].sum())
    runs = [c.known[p.key] for _, parts, _ in c.iterations for p in parts for _ in range(serving.layer_count(p))]
    traffic = sum(t["read_bytes"] + t["write_bytes"] for t in runs)
    energy = math.fsum(t["energy_pj"] for t in runs)
    metrics = {"tokens_per_s": out_tokens / makespan if makespan > 0 else float("nan"), "makespan_s": makespan,
               "offchip_bytes_per_token": traffic / out_tokens, "energy_per_token_pj": energy / out_tokens,
               "area_mm2": max(c.known[k]["area_mm2"] for k in c.needed)}
    for name in ("ttft", "tpot", "e2e"):
        for q in PERCENTILES:
            metrics["%s_p%d_s" % (name, q)] = percentile(req[name + "_s"].tolist(), q)
        metrics["%s_mean_s" % name] = float(req[name + "_s"].mean())
    by_category = result.breakdown.groupby(["stage", "category"])["cycles"].sum()
    simulated_needed = len(c.needed & c.simulated)
    return {
        "model": serving.model.name, "model_file": serving.model.path, "layers": serving.model.layers,
        "preset": serving.preset, "set": serving.sets, "clock_ghz": serving.clock_ghz, "mode": serving.mode,
        "routing": serving.routing, "seed": serving.seed, "schedule": config, "workers": workers,
        "requests": len(req), "prompt_tokens": int(req["prompt_tokens"].sum()), "output_tokens": out_tokens,
        "iterations": len(c.iterations), "total_cycles": int(sched.time), "offchip_bytes": int(traffic),
        "energy_pj": energy, "technology": _stepsim.default_technology(),
        "fits": all(c.known[k]["fits"] for k in c.needed),
        "metrics": metrics,
        "cycles_by_stage_and_category": {"%s/%s" % k: int(v) for k, v in by_category.items()},
        "tasks": {"layer_tasks": c.instances, "distinct": len(c.needed), "simulated": simulated_needed,
                  "from_cache": len(c.needed) - simulated_needed, "looked_ahead_unused": len(c.simulated - c.needed),
                  "reuse_rate": 1.0 - simulated_needed / c.instances if c.instances else float("nan"),
                  "cache": serving.cache.folder},
        "wall_seconds": wall_seconds,
    }


def summary_text(s, breakdown):
    m = s["metrics"]
    lines = ["serving run: %s (%d layers), %d requests (%d prompt, %d output tokens), preset %s at %.3f GHz, "
             "routing %s" % (s["model"], s["layers"], s["requests"], s["prompt_tokens"], s["output_tokens"],
                             s["preset"], s["clock_ghz"], s["routing"]),
             "  schedule           %s" % ", ".join("%s=%s" % kv for kv in s["schedule"].items()),
             "  makespan           %.6f s (%d cycles, %d iterations)" % (m["makespan_s"], s["total_cycles"],
                                                                         s["iterations"]),
             "  throughput         %.2f output tokens/s" % m["tokens_per_s"]]
    for name, what in (("ttft", "time to first token"), ("tpot", "time per output token"),
                       ("e2e", "end-to-end latency")):
        lines.append("  %-18s mean %s, p50 %s, p90 %s, p99 %s" % (
            what, _ms(m[name + "_mean_s"]), _ms(m[name + "_p50_s"]), _ms(m[name + "_p90_s"]), _ms(m[name + "_p99_s"])))
    lines.append("  off-chip traffic   %.3f MB per output token (%.3f GB in all)" % (
        m["offchip_bytes_per_token"] / 1e6, s["offchip_bytes"] / 1e9))
    lines.append("  energy             %.3f mJ per output token (%.3f J in all, the layer runs' actions and their "
                 "fabric's leakage while they run; technology %s); largest layer fabric %.1f mm2" % (
                     m["energy_per_token_pj"] / 1e9, s["energy_pj"] / 1e12, s["technology"], m["area_mm2"]))
    total = max(1, int(breakdown["cycles"].sum()))
    parts = breakdown.groupby(["stage", "category"])["cycles"].sum()
    lines.append("  where the cycles go  " + ", ".join("%s %s %.1f %%" % (stage, cat, 100.0 * v / total)
                                                      for (stage, cat), v in parts.items()))
    t = s["tasks"]
    lines.append("  tasks              %d layer tasks, %d distinct: %d simulated, %d from the cache (reuse %.1f %%); "
                 "%d looked ahead and not needed" % (t["layer_tasks"], t["distinct"], t["simulated"], t["from_cache"],
                                                     100.0 * t["reuse_rate"], t["looked_ahead_unused"]))
    lines.append("  wall time          %.1f s on %s" % (s["wall_seconds"], s["workers"]))
    return "\n".join(lines)


def _ms(seconds):
    return "n/a" if seconds != seconds else "%.3f ms" % (seconds * 1e3)


def write_outputs(out, result):
    """Writes the files of FILES into `out`: each under a temporary name first, all renamed at the
    end, so that a run that fails leaves no file that looks complete."""
    staged = os.path.join(out, ".staging-%d" % os.getpid())
    os.makedirs(staged, exist_ok=True)
    try:
        result.requests.to_csv(os.path.join(staged, "requests.csv"), index=False, float_format="%.9g")
        result.iterations.to_csv(os.path.join(staged, "iterations.csv"), index=False, float_format="%.9g")
        result.breakdown.to_csv(os.path.join(staged, "breakdown.csv"), index=False)
        with open(os.path.join(staged, "summary.json"), "w") as f:
            json.dump(_json_safe(result.summary), f, indent=1, sort_keys=True)
        with open(os.path.join(staged, "summary.txt"), "w") as f:
            f.write(result.text() + "\n")
        from .plots import latency_cdf, latency_over_time

        latency_over_time(result.requests, os.path.join(staged, "latency_over_time.png"), result.summary)
        latency_cdf(result.requests, os.path.join(staged, "latency_cdf.png"), result.summary)
        for name in FILES:
            os.replace(os.path.join(staged, name), os.path.join(out, name))
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _json_safe(value):
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def percentile(values, q):
    """The q-th percentile (0..100) of the values that are numbers (NumPy's linear interpolation);
    NaN when there are none (TPOT of one-token requests only)."""
    values = np.asarray([v for v in values if v is not None], dtype=np.float64)
    values = values[~np.isnan(values)]
    return float(np.percentile(values, q)) if len(values) else float("nan")
