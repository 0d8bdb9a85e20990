"""Design-space exploration: ``stepsim.dse("space.yaml", out="dse/", workers="local:2")`` and
`stepsim dse SPACE.yaml`. docs/dse.md describes the space file and the outputs.

The search asks Optuna for a batch of points (NSGA-II: one generation; TPE and random: `batch`
points), runs them on the workers (stepsim.workers), and tells Optuna the results in trial
order. The sampler of each batch is seeded from the search seed and the batch's first trial, so
the same space and seed give the same trials whatever the number or kind of workers, and a study
resumed after an interruption goes on as if it had not stopped (the study lives in OUT/study.db).

Outputs in OUT: trials.csv (every trial, failed ones with their error), pareto.csv and
pareto.png (the feasible non-dominated trials), sensitivity_PARAM.png (each objective against
each parameter), space.yaml (the space, to check a resumed study against).
"""
import csv
import math
import os
import sys
import time

import yaml

from . import _stepsim
from . import space as space_module
from .evaluate import METRICS
from .workers import Pool, parse_workers

STATES = ("ok", "infeasible", "failed")


def dse(space, out, workers="inline", trials=None, progress=True, sbatch_options=(), reference=None):
    """Runs (or resumes) the search of `space` (a path, YAML text or a dict) into folder `out`.
    `trials` overrides search.trials. Returns a pandas DataFrame of every trial; its `state` is
    ok, infeasible (ran, but breaks a constraint) or failed (with `error`). `reference`: extra
    labelled points {label: {objective: value}} drawn on pareto.png (e.g. a baseline design)."""
    import pandas as pd

    _, rows = run(space, out, workers, trials, progress, sbatch_options, reference)
    return pd.DataFrame(rows)


def run(space, out, workers="inline", trials=None, progress=True, sbatch_options=(), reference=None):
    """dse() without pandas: (the Space, the trial rows)."""
    s = space_module.load(space)
    parse_workers(workers)  # a bad --workers before anything is written
    if trials is not None:
        if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= space_module.MAX_TRIALS:
            raise _stepsim.Error("dse: trials must be an integer in 1..%d, not %r" % (space_module.MAX_TRIALS, trials))
        s.trials = min(trials, len(s.grid())) if s.method == "grid" else trials
    study = open_study(s, out)
    meter = Progress(s, progress)
    with _exclusive(out), Pool(workers, os.path.join(out, "work"), s.job(), sbatch_options) as pool:
        try:
            run_batches(s, study, pool, meter)
        finally:
            meter.finish()
        rows = trial_rows(s, study)
        write_outputs(s, rows, out, reference)
    return s, rows


class _exclusive:
    """One coordinator per study folder: a second one would hand out the same trials."""

    def __init__(self, out):
        self.path = os.path.join(out, "lock")

    def __enter__(self):
        import fcntl

        self.f = open(self.path, "a+")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.f.seek(0)
            owner = self.f.read().strip() or "?"
            self.f.close()
            raise _stepsim.Error("dse: %s is in use by another stepsim dse (pid %s)" % (os.path.dirname(self.path), owner)) from None
        self.f.seek(0)
        self.f.truncate()
        self.f.write("%d\n" % os.getpid())
        self.f.flush()
        return self

    def __exit__(self, *exc):
        self.f.close()


def summary(s, rows, out):
    """The readable end of `stepsim dse`: what ran, the front, the files."""
    count = {state: sum(r["state"] == state for r in rows) for state in STATES}
    front = pareto_front(s, rows)
    wall = sum(r["wall_seconds"] for r in rows)
    lines = ["%s: %d trials (%d ok, %d infeasible, %d failed), %s search, seed %d; %.1f s of runs"
             % (s.name, len(rows), count["ok"], count["infeasible"], count["failed"], s.method, s.seed, wall),
             "Pareto front: %d trials, %d distinct objective values (the first trial of each):" % (len(front), len(set(
                 tuple(r[n] for n in s.objectives) for r in front)))]
    cols = ["trial"] + [p.name for p in s.parameters] + ["%s [%s]" % (n, METRICS[n]) for n in s.objectives
                                                          if n in METRICS]
    shown = {}  # one line per distinct objective vector: the first trial that reached it
    for r in front:
        shown.setdefault(tuple(r[n] for n in s.objectives), r)
    cells = [[str(r["trial"])] + [str(r[p.name]) for p in s.parameters] + [_fmt(r[n]) for n in s.objectives
                                                                          if n in METRICS]
             for _, r in sorted(shown.items())]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    lines.append("  " + "  ".join(c.rjust(w) for c, w in zip(cols, widths)))
    lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    names = ["trials.csv", "pareto.csv", "pareto.png"] + ["sensitivity_%s.png" % _file_safe(p.name) for p in s.parameters]
    lines.append("wrote " + ", ".join(os.path.join(out, n) for n in names))
    return "\n".join(lines)


def open_study(s, out):
    """The study in OUT/study.db: created, or loaded when OUT holds one of the same space."""
    import optuna

    import warnings

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # constraints_func is marked experimental in Optuna 3.1; the warning is for us, not the user.
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise _stepsim.Error("dse: cannot create %s: %s" % (out, e.strerror)) from None
    saved = os.path.join(out, "space.yaml")
    if os.path.exists(saved):
        with open(saved) as f:
            if yaml.safe_load(f) != s.data:
                raise _stepsim.Error("dse: %s holds a study of another space (%s); give another output folder"
                                     % (out, saved))
    directions = ["minimize" if d == "min" else "maximize" for d in s.objectives.values()]
    try:
        if not os.path.exists(saved):
            with open(saved + ".tmp", "w") as f:
                yaml.safe_dump(s.data, f, sort_keys=False)
            os.replace(saved + ".tmp", saved)
        return optuna.create_study(study_name=s.name, directions=directions, load_if_exists=True,
                                   storage="sqlite:///" + os.path.abspath(os.path.join(out, "study.db")))
    except (OSError, optuna.exceptions.OptunaError, ImportError) as e:
        raise _stepsim.Error("dse: cannot keep the study in %s: %s" % (out, e)) from None
    except Exception as e:  # SQLAlchemy's errors (a folder that cannot hold a database)
        if type(e).__module__.startswith("sqlalchemy"):
            raise _stepsim.Error("dse: cannot keep the study in %s: %s" % (out, str(e).splitlines()[0])) from None
        raise


def make_sampler(s, first_trial):
    """The batch's sampler: seeded from the search seed and the batch's first trial number, so a
    resumed or redistributed search draws what an uninterrupted one would."""
    import optuna

    seed = (s.seed * 1_000_003 + first_trial) % (2**31)
    constraints = _constraint_values
    if s.method == "nsga2":
        return optuna.samplers.NSGAIISampler(population_size=s.batch, seed=seed, constraints_func=constraints)
    if s.method == "tpe":
        return optuna.samplers.TPESampler(seed=seed, constraints_func=constraints, n_startup_trials=min(10, s.trials))
    return optuna.samplers.RandomSampler(seed=seed)


def _constraint_values(trial):
    return trial.user_attrs.get("constraints", [0.0])


def run_batches(s, study, pool, meter):
    import optuna

    # In name order: a trial loaded from study.db lists its parameters by name, and NSGA-II's
    # crossover draws in the order of the search space, so a resumed study must see the same order.
    distributions = {p.name: p.distribution() for p in sorted(s.parameters, key=lambda p: p.name)}
    grid = s.grid() if s.method == "grid" else None
    meter.start(study)
    seen = {_point_key(t.params): _result_of(t) for t in study.get_trials(deepcopy=False) if t.state.is_finished()}
    while True:
        # A batch cut short by an interruption is run again first (its trials are RUNNING).
        batch = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))]
        if batch:
            # The sampler tells too (its after_trial records the constraints NSGA-II ranks by):
            # the batch's own, as when it was asked.
            study.sampler = make_sampler(s, min(t.number for t in batch))
        else:
            first = len(study.trials)
            if first >= s.trials:
                break
            study.sampler = make_sampler(s, first)
            for i in range(first, min(s.trials, first + s.batch)):
                if grid is not None:
                    study.enqueue_trial(grid[i])
                batch.append(study.ask(distributions))
        results, points = {}, {}
        for t in batch:
            known = seen.get(_point_key(t.params))
            if known is not None:  # the simulator is deterministic: a point seen before is not run again
                results["t%06d" % t.number] = dict(known, worker="cache", wall_seconds=0.0)
                meter.ran(known, t.params)
            else:
                points["t%06d" % t.number] = dict(t.params)
        results.update(pool.map(points, lambda key, r: meter.ran(r, points[key])))
        for t in sorted(batch, key=lambda t: t.number):
            result = results["t%06d" % t.number]
            tell(s, study, t, result)
            seen.setdefault(_point_key(t.params), result)
        meter.batch_done(study)


def _point_key(params):
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


def _result_of(trial):
    """A finished trial's result as a worker returned it."""
    a = trial.user_attrs
    if "metrics" in a:
        return {"metrics": a["metrics"], "wall_seconds": a.get("wall_seconds", 0.0)}
    return {"error": a.get("error", "failed"), "wall_seconds": a.get("wall_seconds", 0.0)}


def tell(s, study, trial, result):
    """Records a point's result on its trial: the objectives, every metric, the constraints."""
    import optuna

    # The attributes go in before tell(): the sampler's constraints_func reads them there.
    storage, trial_id, number = study._storage, trial._trial_id, trial.number
    storage.set_trial_user_attr(trial_id, "wall_seconds", result.get("wall_seconds", 0.0))
    storage.set_trial_user_attr(trial_id, "worker", result.get("worker", "inline"))
    if "error" in result:
        storage.set_trial_user_attr(trial_id, "error", result["error"])
        study.tell(number, state=optuna.trial.TrialState.FAIL)
        return
    m = result["metrics"]
    storage.set_trial_user_attr(trial_id, "metrics", m)
    storage.set_trial_user_attr(trial_id, "constraints", s.violations(m, trial.params))
    study.tell(number, [float(s.value(name, m, trial.params)) for name in s.objectives])


def trial_rows(s, study):
    """One dict per trial, in trial order: number, state, parameters, metrics, error, wall time."""
    rows = []
    for t in study.trials:
        m = t.user_attrs.get("metrics")
        state = "failed" if m is None else ("ok" if max(t.user_attrs["constraints"]) <= 0 else "infeasible")
        row = {"trial": t.number, "state": state}
        row.update({p.name: t.params.get(p.name) for p in s.parameters})
        row.update({name: (m or {}).get(name) for name in METRICS})
        row["fits"] = (m or {}).get("fits")
        row["error"] = t.user_attrs.get("error", "")
        row["wall_seconds"] = round(t.user_attrs.get("wall_seconds", 0.0), 4)
        row["worker"] = t.user_attrs.get("worker", "")
        rows.append(row)
    return rows


def pareto_front(s, rows):
    """The feasible rows no other feasible row dominates (on every objective as good, on one
    better), in trial order."""
    ok = [r for r in rows if r["state"] == "ok"]
    sign = {name: (1 if d == "min" else -1) for name, d in s.objectives.items()}

    def key(r):
        return [sign[n] * r[n] for n in s.objectives]

    def dominates(a, b):
        return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))

    keys = [key(r) for r in ok]
    return [r for r, k in zip(ok, keys) if not any(dominates(o, k) for o in keys if o is not k)]


def write_outputs(s, rows, out, reference=None):
    from . import plots

    write_csv(os.path.join(out, "trials.csv"), rows)
    front = pareto_front(s, rows)
    write_csv(os.path.join(out, "pareto.csv"), front, fields=list(rows[0]) if rows else None)
    plots.pareto(s, rows, front, os.path.join(out, "pareto.png"), reference)
    for p in s.parameters:
        plots.sensitivity(s, rows, p.name, os.path.join(out, "sensitivity_%s.png" % _file_safe(p.name)))


def _file_safe(name):
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def write_csv(path, rows, fields=None):
    fields = fields or (list(rows[0]) if rows else ["trial", "state"])
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in fields})
    os.replace(tmp, path)


class Progress:
    """The live line on stderr: trials done, failures, the best value of each objective, the rate."""

    def __init__(self, s, enabled):
        self.s, self.enabled = s, enabled
        self.tty = enabled and sys.stderr.isatty()
        self.t0, self.ran_here, self.done, self.failed, self.best = time.time(), 0, 0, 0, {}

    def start(self, study):
        self.done = len([t for t in study.trials if t.state.is_finished()])
        self.resumed = self.done
        if self.enabled and self.done:
            print("dse: resuming %s at trial %d of %d" % (self.s.name, self.done, self.s.trials), file=sys.stderr)

    def ran(self, result, params):
        self.ran_here += 1
        self.done += 1
        if "error" in result:
            self.failed += 1
        elif max(self.s.violations(result["metrics"], params)) <= 0:
            for name, d in self.s.objectives.items():
                v = self.s.value(name, result["metrics"], params)
                if name not in self.best or (v < self.best[name] if d == "min" else v > self.best[name]):
                    self.best[name] = v
        if self.tty:
            self._print("\r")

    def batch_done(self, study):
        if self.enabled and not self.tty:
            self._print("")

    def _print(self, lead):
        elapsed = time.time() - self.t0
        best = ", ".join("%s %s %s" % ("min" if self.s.objectives[n] == "min" else "max", n, _fmt(v))
                         for n, v in self.best.items())
        line = "dse: %d/%d trials, %d failed, best: %s, %.2f trials/s, %.0f s" % (
            self.done, self.s.trials, self.failed, best or "none feasible yet",
            self.ran_here / elapsed if elapsed > 0 else 0.0, elapsed)
        print(lead + line + ("\x1b[K" if self.tty else ""), end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def finish(self):
        if self.tty:
            print(file=sys.stderr)


def _fmt(v):
    if isinstance(v, float) and not v.is_integer():
        return "%.4g" % v
    return "{:,}".format(int(v)) if not (isinstance(v, float) and math.isnan(v)) else "nan"
