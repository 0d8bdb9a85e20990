"""The commands of the stepsim tool that run in Python (`stepsim dse`, and `stepsim sweep` with
--workers or --slurm): the C++ command line hands them to `python3 -m stepsim`. Errors are one
line on stderr and exit status 1, as in the rest of the tool."""
import argparse
import sys

from . import _stepsim
from .design.explore import run, summary
from .serving import policy
from .serving.models import model_names
from .serving.run import serve
from .sweep import distributed_sweep


def dse_command(argv):
    ap = argparse.ArgumentParser(prog="stepsim dse", description="Design-space exploration over SPACE.yaml "
                                 "(docs/dse.md): every trial in OUT/trials.csv, the Pareto front in OUT/pareto.csv "
                                 "and OUT/pareto.png, a sensitivity plot per parameter. Run again with the same OUT "
                                 "to resume an interrupted study.")
    ap.add_argument("space", help="the design space (YAML)")
    ap.add_argument("--out", "-o", required=True, help="output folder (holds the study; on a cluster, shared)")
    ap.add_argument("--workers", default="inline", help="inline (default), local:N processes or slurm:N array tasks")
    ap.add_argument("--trials", type=int, help="total trials (overrides search.trials)")
    ap.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                    help="an extra sbatch option for --workers slurm:N (e.g. --sbatch=--partition=cpu); repeatable")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    a = ap.parse_args(argv)
    if a.trials is not None and not 1 <= a.trials <= 1_000_000:
        raise _stepsim.Error("--trials must be in 1..1000000")
    s, rows = run(a.space, a.out, workers=a.workers, trials=a.trials, progress=not a.quiet, sbatch_options=a.sbatch)
    print(summary(s, rows, a.out))
    return failures(rows, a.out)


def failures(rows, out):
    """A study with failed trials says so on stderr, with the most common error; one where every
    trial failed measured nothing and exits 1 (as `stepsim sweep` does when a point fails; a
    search keeps going past failed points, which are often the layer refusing a tile size)."""
    failed = [r for r in rows if r["state"] == "failed"]
    if not failed:
        return 0
    errors = {}
    for r in failed:
        errors[r["error"]] = errors.get(r["error"], 0) + 1
    error, count = max(errors.items(), key=lambda e: e[1])
    what = "%d of %d trials failed (the most common error, %d of them: %s); see %s/trials.csv" % (
        len(failed), len(rows), count, error, out)
    if len(failed) == len(rows):
        print("error: every trial failed: " + what, file=sys.stderr)
        return 1
    print("warning: " + what, file=sys.stderr)
    return 0


def sweep_command(argv):
    ap = argparse.ArgumentParser(prog="stepsim sweep", description="`stepsim sweep` with its points spread over "
                                 "workers: local processes or a Slurm array job. The table is printed when every "
                                 "point is done, in the order of the sweep; a point whose worker died is run "
                                 "again once.")
    ap.add_argument("graph", nargs="?", default="", help="the graph file (or --layer)")
    ap.add_argument("--layer", default="")
    ap.add_argument("--param", "-p", action="append", default=[], metavar="KEY=V1,V2..")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=V1,V2..")
    ap.add_argument("--preset", default="step-artifact")
    ap.add_argument("--tech", default=_stepsim.default_technology(), help="technology table (stepsim techs)")
    ap.add_argument("--csv", help="also write the table as CSV")
    ap.add_argument("--workers", help="local:N or slurm:N")
    ap.add_argument("--slurm", type=int, metavar="N", help="the same as --workers slurm:N")
    ap.add_argument("--work-dir", help="the folder the workers share (default: .stepsim-sweep-PID here, removed "
                    "at the end; on a cluster it must be on a shared filesystem)")
    ap.add_argument("--sbatch", action="append", default=[], metavar="OPTION", help="an extra sbatch option")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    a = ap.parse_args(argv)
    import os
    import shutil

    if a.slurm is not None and a.workers:
        raise _stepsim.Error("sweep: give --slurm N or --workers, not both")
    workers = "slurm:%d" % a.slurm if a.slurm is not None else a.workers
    job = {"graph_file": a.graph, "layer": a.layer, "preset": a.preset, "tech": a.tech,
           "params": [_axis(kv, "--param") for kv in a.param], "sets": [_axis(kv, "--set") for kv in a.set]}
    total = _stepsim.sweep_size(job["graph_file"], job["layer"], job["preset"], job["params"], job["sets"],
                                tech=a.tech)
    csv = _OutputFile(a.csv) if a.csv else None
    folder = os.path.abspath(a.work_dir or ".stepsim-sweep-%d" % os.getpid())
    meter = _SweepProgress(total, not a.quiet)
    try:
        rows, retried = distributed_sweep(job, workers, folder, a.sbatch, meter.ran, keep=bool(a.work_dir))
    finally:
        meter.finish()
        if not a.work_dir and not _logs_with_errors(folder):
            shutil.rmtree(folder, ignore_errors=True)
    table, csv_text = _stepsim.sweep_format(job["graph_file"], job["layer"], job["preset"], job["params"],
                                            job["sets"], rows, tech=a.tech)
    print(table, end="")
    if csv:
        csv.commit(csv_text)
        print("wrote " + a.csv)
    if retried:
        print("%d point(s) ran again after their worker died: %s" % (len(retried), ", ".join(retried)), file=sys.stderr)
    failed = sum(not r["ok"] for r in rows)
    if failed:
        print("error: %d of %d points failed (status column)" % (failed, len(rows)), file=sys.stderr)
        return 1
    return 0


def _logs_with_errors(folder):
    """The workers' logs that hold anything (a worker writes nothing when all is well)."""
    import os

    logs = os.path.join(folder, "logs")
    names = os.listdir(logs) if os.path.isdir(logs) else []
    return [n for n in names if os.path.getsize(os.path.join(logs, n))]


def _axis(text, option):
    key, eq, values = text.partition("=")
    if not eq or not key:
        raise _stepsim.Error("sweep: %s %s: give KEY=V1,V2.." % (option, text))
    return [key, _stepsim.split_values(values)]


class _OutputFile:
    """Checked before the first point runs; written whole at the end (nothing partial)."""

    def __init__(self, path):
        import os

        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK) or \
                (os.path.exists(path) and not os.access(path, os.W_OK)):
            raise _stepsim.Error("cannot write %s" % path)

    def commit(self, text):
        import os

        tmp = self.path + ".tmp%d" % os.getpid()
        try:
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, self.path)
        except OSError as e:
            raise _stepsim.Error("cannot write %s: %s" % (self.path, e.strerror)) from None


class _SweepProgress:
    def __init__(self, total, enabled):
        import time

        self.total, self.enabled, self.done, self.failed, self.t0 = total, enabled, 0, 0, time.time()
        self.tty = enabled and sys.stderr.isatty()

    def ran(self, key, result):
        import time

        self.done += 1
        self.failed += not result.get("ok", False)
        if self.enabled and (self.tty or self.done == self.total or self.done % 10 == 0):
            elapsed = time.time() - self.t0
            print("%ssweep: %d/%d points, %d failed, %.2f points/s, %.0f s%s" % (
                "\r" if self.tty else "", self.done, self.total, self.failed, self.done / max(elapsed, 1e-9), elapsed,
                "\x1b[K" if self.tty else ""), end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def finish(self):
        if self.tty:
            print(file=sys.stderr)


def serve_command(argv):
    ap = argparse.ArgumentParser(prog="stepsim serve", description="A whole model over the requests of a trace "
                                 "(docs/serving.md): continuous batching, time to first token and per output "
                                 "token per request in OUT/requests.csv, the iterations, where the cycles go, "
                                 "a summary and two plots. Tasks are cached: run the same command again to "
                                 "resume, or to get the results at once.")
    ap.add_argument("model", help="a model name (graphs/models: %s) or a model YAML file"
                    % ", ".join(_model_names()))
    ap.add_argument("--requests", "-r", required=True, help="the request trace (CSV: the Azure LLM inference "
                    "trace's columns, or arrival_s,prompt_tokens,output_tokens); shared:PATH is in ../shared")
    ap.add_argument("--first-row", type=int, default=1, help="first data row of the trace (1-based; default 1)")
    ap.add_argument("--count", "-n", type=int, help="requests to take from there (default: to the end)")
    ap.add_argument("--time-scale", type=float, default=1.0,
                    help="arrival times multiplied by this (0.5 = twice the request rate; default 1)")
    ap.add_argument("--out", "-o", required=True, help="output folder")
    ap.add_argument("--workers", default="inline", help="inline (default), local:N processes or slurm:N array tasks")
    ap.add_argument("--preset", default="step-artifact", help="hardware preset (name or YAML file)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=V", help="a hardware parameter; repeatable")
    for key, doc in policy.DOCS.items():
        ap.add_argument("--" + key.replace("_", "-"), type=int, dest=key,
                        help="%s (default %d)" % (doc, policy.DEFAULTS[key]))
    ap.add_argument("--routing", default="trace", choices=["trace", "synthetic"],
                    help="MoE routing: the model's routing trace in every layer (default) or a seeded draw per "
                    "layer with its expert frequencies")
    ap.add_argument("--seed", type=int, default=1, help="seed of the synthetic routing (default 1)")
    ap.add_argument("--cache", help="task cache folder (default $STEPSIM_CACHE or ~/.cache/stepsim/tasks)")
    ap.add_argument("--sbatch", action="append", default=[], metavar="OPTION", help="an extra sbatch option")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    a = ap.parse_args(argv)
    sets = {}
    for kv in a.set:
        key, eq, value = kv.partition("=")
        if not eq or not key:
            raise _stepsim.Error("serve: --set %s: give KEY=VALUE" % kv)
        if key in sets:
            raise _stepsim.Error("serve: --set %s is given twice" % key)
        sets[key] = value
    schedule = {k: getattr(a, k) for k in policy.DEFAULTS if getattr(a, k) is not None}
    result = serve(a.model, a.requests, out=a.out, workers=a.workers, preset=a.preset, set=sets, schedule=schedule,
                   routing=a.routing, seed=a.seed, cache=a.cache, first_row=a.first_row, count=a.count,
                   time_scale=a.time_scale, progress=not a.quiet, sbatch_options=a.sbatch)
    print(result.text())
    print("wrote %s/requests.csv, iterations.csv, breakdown.csv, summary.json, summary.txt, latency_over_time.png, "
          "latency_cdf.png" % a.out)
    return 0


def _model_names():
    try:
        return model_names()
    except OSError:
        return []


COMMANDS = {"dse": dse_command, "sweep": sweep_command, "serve": serve_command}


def _stop_on_signal(signum, frame):
    # SIGTERM (scancel, a closing login session): unwind like Ctrl-C, so that the workers are
    # stopped, the Slurm job cancelled and the study left resumable.
    raise KeyboardInterrupt


def main(argv=None):
    import signal

    signal.signal(signal.SIGTERM, _stop_on_signal)
    signal.signal(signal.SIGHUP, _stop_on_signal)
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = "usage: python3 -m stepsim {%s} ... (python3 -m stepsim COMMAND --help)" % ",".join(COMMANDS)
    if argv in (["-h"], ["--help"]):
        print(usage)
        return 0
    if not argv or argv[0] not in COMMANDS:
        print(usage, file=sys.stderr)
        return 2
    try:
        return COMMANDS[argv[0]](argv[1:])
    except _stepsim.Error as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted: run the same command again to resume", file=sys.stderr)
        return 130
