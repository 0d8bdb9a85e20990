"""Design-space exploration: ``stepsim.dse("space.yaml", out="dse/", workers="local:2")`` and
`stepsim dse SPACE.yaml`. docs/dse.md describes the space file and the outputs.

The search asks Optuna for a batch of points (NSGA-II: one generation; TPE and random: `batch`
points), runs them on the workers (stepsim.pool), and tells Optuna the results in trial
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
import signal
import sys
import time

import yaml

from .. import _stepsim
from ..pool.workers import FolderLock, Pool, parse_workers
from . import space as space_module
from .evaluate import evaluate_point, header

# Optuna, pandas and the plots (matplotlib) are imported in the functions that use them, not
# here: they are slow to import, and `import stepsim` imports this module.

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
        s.trials = min(trials, s.grid_size()) if s.method == "grid" else trials
    steps = Steps()
    meter = Progress(s, progress)
    make_folder(out)
    # The lock before the study is opened: opening may take back an interrupted batch, which
    # must not happen under a coordinator that is still running.
    with FolderLock(out, "stepsim dse"), _StorageErrors(out):
        study = open_study(s, out, steps)
        with Pool(workers, os.path.join(out, "work"), evaluate_point, s.job(), sbatch_options) as pool:
            try:
                run_batches(s, study, pool, meter, steps)
            finally:
                meter.finish()
        rows = trial_rows(s, study)
        write_outputs(s, rows, out, reference, steps)
    steps.finish()
    return s, rows


class _StorageErrors:
    """A study that cannot be written (a full disk, a folder turned read-only) is an error naming
    the folder; what was told before stays, and the same command resumes once it can write."""

    def __init__(self, out):
        self.out = out

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        if kind is None or isinstance(e, (_stepsim.Error, KeyboardInterrupt)):
            return False
        import optuna

        if isinstance(e, OSError):
            raise _stepsim.Error("dse: cannot write in %s: %s%s" % (
                self.out, e.strerror or e, " (%s)" % e.filename if e.filename else "")) from None
        if isinstance(e, optuna.exceptions.StorageInternalError) or type(e).__module__.startswith("sqlalchemy"):
            raise _stepsim.Error("dse: cannot keep the study in %s: %s" % (self.out, _first_line(e))) from None
        return False


def _first_line(e):
    cause = e.__cause__ or e.__context__
    text = str(cause if cause is not None and str(cause) else e)
    return text.splitlines()[0] if text else type(e).__name__


class Steps:
    """The coordinator's steps, counted: every write to the study, every point's result, every
    output file. STEPSIM_DSE_FAULT=N:MODE stops the coordinator at step N, as a test of what a
    fault there leaves: MODE kill (SIGKILL), term (SIGTERM: Ctrl-C, scancel, a closed session)
    or readonly (step N and every write after it fail, as in a folder that turned read-only).
    STEPSIM_DSE_FAULT=count prints the number of steps at the end."""

    def __init__(self):
        spec = os.environ.get("STEPSIM_DSE_FAULT", "")
        self.count, self.at, self.mode = 0, None, None
        self.report = spec == "count"
        if spec and not self.report:
            at, _, mode = spec.partition(":")
            if not at.isdigit() or mode not in ("kill", "term", "readonly"):
                raise _stepsim.Error("STEPSIM_DSE_FAULT: give N:kill, N:term, N:readonly or count, not '%s'" % spec)
            self.at, self.mode = int(at), mode

    def __call__(self, what):
        self.count += 1
        if self.at is None or self.count < self.at:
            return
        if self.mode == "readonly":
            import errno

            raise OSError(errno.EROFS, "Read-only file system (STEPSIM_DSE_FAULT at step %d: %s)" % (self.count, what))
        if self.count == self.at:
            os.kill(os.getpid(), signal.SIGKILL if self.mode == "kill" else signal.SIGTERM)

    def watch(self, storage):
        """Counts every write to the study's storage as a step: the instants between two writes
        are those a kill can leave (each write is one SQLite transaction)."""
        for name in ("create_new_trial", "set_trial_param", "set_trial_state_values", "set_trial_user_attr",
                     "set_trial_system_attr", "set_study_user_attr", "set_study_system_attr"):
            method = getattr(storage, name)

            def counted(*args, _method=method, _name=name, **kwargs):
                self(_name)
                return _method(*args, **kwargs)

            setattr(storage, name, counted)

    def finish(self):
        if self.report:
            print("dse: %d steps" % self.count, file=sys.stderr)


def summary(s, rows, out):
    """The readable end of `stepsim dse`: what ran, the front, the files."""
    count = {state: sum(r["state"] == state for r in rows) for state in STATES}
    front = pareto_front(s, rows)
    wall = sum(r["wall_seconds"] for r in rows)
    lines = ["%s: %d trials (%d ok, %d infeasible, %d failed), %s search, seed %d; %.1f s of runs"
             % (s.name, len(rows), count["ok"], count["infeasible"], count["failed"], s.method, s.seed, wall),
             "Pareto front: %d trials, %d distinct objective values (the first trial of each):" % (len(front), len(set(
                 tuple(r[n] for n in s.objectives) for r in front)))]
    cols = ["trial"] + [p.name for p in s.parameters] + [header(n, s.metrics) for n in s.objectives if n in s.metrics]
    shown = {}  # one line per distinct objective vector: the first trial that reached it
    for r in front:
        shown.setdefault(tuple(r[n] for n in s.objectives), r)
    cells = [[str(r["trial"])] + [str(r[p.name]) for p in s.parameters] + [_fmt(r[n]) for n in s.objectives
                                                                          if n in s.metrics]
             for _, r in sorted(shown.items())]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    lines.append("  " + "  ".join(c.rjust(w) for c, w in zip(cols, widths)))
    lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    names = ["trials.csv", "pareto.csv", "pareto.png"] + \
        ["sensitivity_%s.png" % _file_safe(p.name) for p in s.parameters]
    lines.append("wrote " + ", ".join(os.path.join(out, n) for n in names))
    return "\n".join(lines)


ASKED = "stepsim:asked"  # study user attribute: every trial before it was asked whole


def open_study(s, out, steps=None):
    """The study in OUT/study.db: created, or loaded when OUT holds one of the same space. A
    batch whose asking was interrupted is taken back (drop_unasked)."""
    import optuna

    import warnings

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # constraints_func is marked experimental in Optuna 3.1; the warning is for us, not the user.
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    # A stepped range ends at its last step (as the grid does): Optuna's warning says no more.
    warnings.filterwarnings("ignore", message="The distribution is specified by", module="optuna")
    make_folder(out)
    saved = os.path.join(out, "space.yaml")
    if os.path.exists(saved):
        try:
            with open(saved) as f:
                same = yaml.safe_load(f) == s.data
        except yaml.YAMLError:  # not written by stepsim (it writes the file whole or not at all)
            same = False
        if not same:
            raise _stepsim.Error("dse: %s holds a study of another space (%s); give another output folder"
                                     % (out, saved))
    else:
        with open(saved + ".tmp", "w") as f:
            yaml.safe_dump(s.data, f, sort_keys=False)
        os.replace(saved + ".tmp", saved)
    study = drop_unasked(s, _load(s, out), out, steps)
    if steps is not None:
        steps.watch(study._storage)
    return study


def make_folder(out):
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise _stepsim.Error("dse: cannot create %s: %s" % (out, e.strerror)) from None


def _load(s, out, db="study.db"):
    import optuna

    directions = ["minimize" if d == "min" else "maximize" for d in s.objectives.values()]
    try:
        return optuna.create_study(study_name=s.name, directions=directions, load_if_exists=True,
                                   storage="sqlite:///" + os.path.abspath(os.path.join(out, db)))
    except (optuna.exceptions.OptunaError, ImportError) as e:
        raise _stepsim.Error("dse: cannot keep the study in %s: %s" % (out, e)) from None


def drop_unasked(s, study, out, steps=None):
    """Takes back the trials of a batch whose asking was cut short (a kill, Ctrl-C, a folder
    turned read-only). Asking is many writes: a trial is created before its parameters are
    stored, a grid point is queued (WAITING) before it is asked. A batch counts once all of it
    is asked (the study attribute ASKED); the trials after it are dropped, and the batch is asked
    again, whole, by the sampler seeded as before, so that every trial gets the number and the
    parameters of the uninterrupted study. The study is copied without them into a new file
    that replaces study.db (a replace is atomic: a kill during the copy leaves the old study)."""
    trials = study.get_trials(deepcopy=False)
    if ASKED not in study.user_attrs:
        if not trials:  # a new study: from now on, every batch is marked once asked
            study.set_user_attr(ASKED, 0)
        return study  # a study of an older stepsim: as it was
    asked = study.user_attrs[ASKED]
    if len(trials) <= asked:
        return study
    db = os.path.join(out, "study.db")
    for leftover in (db + ".new", db + ".new-journal"):  # of a copy that was itself interrupted
        if os.path.exists(leftover):
            os.remove(leftover)
    copy = _load(s, out, "study.db.new")
    if steps is not None:
        steps.watch(copy._storage)
    for key, value in study._storage.get_study_system_attrs(study._study_id).items():
        copy._storage.set_study_system_attr(copy._study_id, key, value)
    for key, value in study.user_attrs.items():
        copy.set_user_attr(key, value)
    copy.add_trials([t for t in trials if t.number < asked])
    _close(copy)
    _close(study)
    if steps is not None:
        steps("replace study.db")
    os.replace(db + ".new", db)
    return _load(s, out)


def _close(study):
    """Closes the study's database connections (before its file is replaced)."""
    storage = getattr(study._storage, "_backend", study._storage)
    engine = getattr(storage, "engine", None)
    if engine is not None:
        engine.dispose()


def make_sampler(s, first_trial):
    """The batch's sampler: seeded from the search seed and the batch's first trial number, so a
    resumed or redistributed search draws what an uninterrupted one would."""
    import optuna

    seed = (s.seed * 1_000_003 + first_trial) % (2**31)
    constraints = _constraint_values
    if s.method == "nsga2":
        return optuna.samplers.NSGAIISampler(population_size=s.batch, seed=seed, constraints_func=constraints)
    if s.method == "tpe":
        # n_startup_trials 10, not min(10, trials): the same sampler for any --trials
        return optuna.samplers.TPESampler(seed=seed, constraints_func=constraints, n_startup_trials=10)
    return optuna.samplers.RandomSampler(seed=seed)


def _constraint_values(trial):
    return trial.user_attrs.get("constraints", [0.0])


def run_batches(s, study, pool, meter, steps=None):
    import optuna

    steps = steps or (lambda what: None)
    # In name order: a trial loaded from study.db lists its parameters by name, and NSGA-II's
    # crossover draws in the order of the search space, so a resumed study must see the same order.
    distributions = {p.name: p.distribution() for p in sorted(s.parameters, key=lambda p: p.name)}
    meter.start(study)
    seen = {_point_key(t.params): _result_of(t) for t in study.get_trials(deepcopy=False) if t.state.is_finished()}
    while True:
        # A batch cut short after it was asked is run again first (its trials are RUNNING).
        batch = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))]
        if batch:
            # The sampler tells too (its after_trial records the constraints NSGA-II ranks by):
            # the batch's own, as when it was asked.
            study.sampler = make_sampler(s, min(t.number for t in batch))
        else:
            first = len(study.trials)
            if first >= s.trials:
                break
            batch = ask_batch(s, study, first, distributions)
        for t in batch:  # never a point with the program's defaults in place of its parameters
            if set(t.params) != set(distributions):
                raise _stepsim.Error("dse: trial %d of the study in study.db has parameters %s, not %s"
                                     % (t.number, sorted(t.params), sorted(distributions)))
        results, points = {}, {}
        for t in batch:
            known = seen.get(_point_key(t.params))
            if known is not None:  # the simulator is deterministic: a point seen before is not run again
                results["t%06d" % t.number] = dict(known, worker="cache", wall_seconds=0.0)
                meter.ran(known, t.params)
            else:
                points["t%06d" % t.number] = dict(t.params)

        def arrived(key, result):
            steps("result of " + key)
            meter.ran(result, points[key])

        results.update(pool.map(points, arrived))
        for t in sorted(batch, key=lambda t: t.number):
            result = results["t%06d" % t.number]
            with SignalsDeferred():
                tell(s, study, t, result)
            seen.setdefault(_point_key(t.params), result)
        meter.batch_done(study)


def ask_batch(s, study, first, distributions):
    """Asks trials first.. of a batch (a grid: its next points, queued then asked), then marks
    the batch asked: drop_unasked takes back a batch interrupted before that mark."""
    study.sampler = make_sampler(s, first)
    batch = []
    for i in range(first, min(s.trials, first + s.batch)):
        if s.method == "grid":
            study.enqueue_trial(s.grid_point(i))
        batch.append(study.ask(distributions))
    study.set_user_attr(ASKED, first + len(batch))
    return batch


class SignalsDeferred:
    """Ctrl-C, SIGTERM and SIGHUP wait until the block is done. Telling a trial is several
    writes, and Optuna writes the trial's state in a `finally` even when its sampler was
    interrupted: a trial stopped between the two would be COMPLETE without the constraint values
    NSGA-II ranks by, and the resumed study would rank it otherwise. (SIGKILL cannot be deferred,
    and needs not be: it stops the writes too, and the trial stays RUNNING, to be told again.)"""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __enter__(self):
        import threading

        self.got, self.old = None, {}
        if threading.current_thread() is threading.main_thread():  # only there can handlers change
            for sig in self.SIGNALS:
                self.old[sig] = signal.signal(sig, self._record)
        return self

    def _record(self, signum, frame):
        if self.got is None:
            self.got = signum

    def __exit__(self, *exc):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        if self.got is not None:
            handler = self.old[self.got]
            if callable(handler):
                handler(self.got, None)  # Python's SIGINT handler, the command line's SIGTERM one: raise
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), self.got)  # the default action, now
        return False


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
    if "error" not in result:
        m = result["metrics"]
        values = [float(s.value(name, m, trial.params)) for name in s.objectives]
        violations = s.violations(m, trial.params)
        unknown = [n for n, v in zip(s.objectives, values) if not math.isfinite(v)]
        unknown += [n for n in s.constraints if not math.isfinite(float(s.value(n, m, trial.params)))]
        if not unknown:
            storage.set_trial_user_attr(trial_id, "metrics", m)
            storage.set_trial_user_attr(trial_id, "constraints", violations)
            study.tell(number, values)
            return
        # Optuna refuses NaN: the point is failed, with the reason (not a crash after the batch).
        result = {"error": "the run measured no value of %s (%s)" % (", ".join(dict.fromkeys(unknown)), ", ".join(
            "%s = %s" % (n, m.get(n)) for n in dict.fromkeys(unknown)))}
    storage.set_trial_user_attr(trial_id, "error", result["error"])
    study.tell(number, state=optuna.trial.TrialState.FAIL)


def trial_rows(s, study):
    """One dict per trial, in trial order: number, state, parameters, metrics, error, wall time."""
    rows = []
    for t in study.trials:
        m = t.user_attrs.get("metrics")
        state = "failed" if m is None else ("ok" if max(t.user_attrs["constraints"]) <= 0 else "infeasible")
        row = {"trial": t.number, "state": state}
        row.update({p.name: t.params.get(p.name) for p in s.parameters})
        row.update({name: (m or {}).get(name) for name in s.metrics})
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


def write_outputs(s, rows, out, reference=None, steps=None):
    """Each file whole or not at all (written beside, then renamed): an interrupted run leaves the
    previous file or the new one."""
    from . import plots  # matplotlib: slow to import, only when a search writes its pictures

    steps = steps or (lambda what: None)
    steps("trials.csv")
    write_csv(os.path.join(out, "trials.csv"), rows)
    front = pareto_front(s, rows)
    steps("pareto.csv")
    write_csv(os.path.join(out, "pareto.csv"), front, fields=list(rows[0]) if rows else None)
    steps("pareto.png")
    _atomic(os.path.join(out, "pareto.png"), lambda path: plots.pareto(s, rows, front, path, reference))
    for p in s.parameters:
        name = "sensitivity_%s.png" % _file_safe(p.name)
        steps(name)
        _atomic(os.path.join(out, name), lambda path: plots.sensitivity(s, rows, p.name, path))


def _atomic(path, write):
    """write(a temporary path with the same extension), then renamed to path."""
    stem, ext = os.path.splitext(path)
    tmp = "%s.tmp%d%s" % (stem, os.getpid(), ext)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


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
