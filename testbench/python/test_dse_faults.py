"""The DSE after faults (issue 33, item 7): a coordinator killed (SIGKILL), stopped (SIGTERM, as
Ctrl-C or scancel) or cut off from its folder (read-only) at ANY of its steps -- every write to
the study (asking, telling), every point's result, every output file -- resumes to exactly the
trials of the uninterrupted study: the same numbers, parameters and results, never a trial
without parameters, never a grid point lost. The coordinator counts its steps and stops itself
at step N (STEPSIM_DSE_FAULT=N:MODE); each test loops N over the steps: every STRIDE-th step in
the default tests (each mode from its own first step, so that together they cover every residue),
every step with STEPSIM_DSE_FAULT_STRIDE=1 (a few minutes):

    STEPSIM_DSE_FAULT_STRIDE=1 ctest --test-dir build -R python.test_dse_faults
"""
import csv
import os
import signal

import pytest

import stepsim
from stepsim import cli as cli_module
from stepsim.design import explore

from conftest import SQUARE_BUILDER as BUILDER  # the builder file the fixture writes


@pytest.fixture
def folder(tmp_path):
    """On tmpfs where there is one: the loops write the study a few thousand times, and SQLite
    syncs each write to disk."""
    import shutil
    import tempfile

    base = tempfile.mkdtemp(prefix="dse_faults_", dir="/dev/shm" if os.path.isdir("/dev/shm") else str(tmp_path))
    with open(os.path.join(base, "mine.py"), "w") as f:
        f.write(BUILDER)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def nsga(folder):
    """Two batches of two (NSGA-II: two generations), parameters out of name order."""
    return {"name": "faults", "program": {"builder": os.path.join(folder, "mine.py") + ":build"},
            "parameters": {"compute_bw": [256, 512, 1024], "hbm.channels": {"low": 2, "high": 32}},
            "objectives": {"cycles": "min", "onchip_bytes": "min"}, "constraints": {"cycles": {"max": 10**9}},
            "search": {"method": "nsga2", "trials": 4, "seed": 5, "batch": 2}}


def grid(folder):
    """A grid of 4 in batches of 3: the second batch is short; a point may be queued, not asked."""
    return dict(nsga(folder), search={"method": "grid", "batch": 3},
                parameters={"compute_bw": [256, 1024], "hbm.channels": [4, 8]})


def key_columns(out):
    with open(os.path.join(out, "trials.csv")) as f:
        return [{k: v for k, v in r.items() if k not in ("wall_seconds", "worker")} for r in csv.DictReader(f)]


@pytest.fixture
def no_plots(monkeypatch):
    """The loops compare trials.csv: the plots (a second each) are left out, not their steps."""
    from stepsim.design import plots

    monkeypatch.setattr(plots, "pareto", lambda *a, **k: open(a[3], "w").close())
    monkeypatch.setattr(plots, "sensitivity", lambda *a, **k: open(a[3], "w").close())


def faulted(space, out, step, mode):
    """Runs the study in a child process that stops itself at `step`; returns how it ended:
    'done' (the study has fewer steps), 'killed', 'interrupted' or 'error'."""
    pid = os.fork()
    if pid == 0:  # the child: a coordinator as the command line runs it
        code = 3
        try:
            os.environ["STEPSIM_DSE_FAULT"] = "%d:%s" % (step, mode)
            signal.signal(signal.SIGTERM, cli_module._stop_on_signal)
            explore.run(space, out, progress=False)
            code = 0
        except KeyboardInterrupt:
            code = 130
        except stepsim.Error:
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "killed"
    return {0: "done", 130: "interrupted", 1: "error"}.get(os.WEXITSTATUS(status), "crash")


STRIDE = int(os.environ.get("STEPSIM_DSE_FAULT_STRIDE", "5"))


def steps_from(first):
    """first, first + STRIDE, ... (every step when STRIDE is 1)."""
    step = 1 + (first - 1) % STRIDE
    while True:
        yield step
        step += STRIDE


def every_step(space, folder, mode, expected_end, first=1):
    reference = os.path.join(folder, "reference")
    explore.run(space, reference, progress=False)
    want = key_columns(reference)
    assert len(want) == 4 and all(r["compute_bw"] and r["hbm.channels"] for r in want)
    for step in steps_from(first):
        out = os.path.join(folder, "%s%03d" % (mode, step))
        end = faulted(space, out, step, mode)
        if end == "done":
            break
        assert end == expected_end, "step %d" % step
        explore.run(space, out, progress=False)  # the same command again: resumes
        assert key_columns(out) == want, "after a %s at step %d" % (mode, step)
    assert step > 40  # every write of asking and telling was a step


@pytest.mark.parametrize("space, first", [(nsga, 1), (grid, 2)], ids=["nsga2", "grid"])
def test_a_kill_at_any_step_resumes_to_the_uninterrupted_trials(folder, no_plots, space, first):
    every_step(space(folder), folder, "kill", "killed", first)


def test_a_batch_asked_in_part_is_asked_again_whole(folder):
    """The issue's case: a coordinator killed while it asked batch 2 leaves trial 2 with its
    parameters and trial 3 with none; before, trial 3 ran with the program's defaults (ok, blank
    parameters) and the short batch shifted every later trial."""
    import optuna

    from stepsim.design import space as space_module

    space = nsga(folder)
    explore.run(space, os.path.join(folder, "ref"), progress=False)
    out = os.path.join(folder, "o")
    explore.run(space, out, trials=2, progress=False)  # batch 1 told
    s = space_module.load(space)
    study = explore.open_study(s, out)
    study.sampler = explore.make_sampler(s, 2)
    study.ask({p.name: p.distribution() for p in sorted(s.parameters, key=lambda p: p.name)})
    study._storage.create_new_trial(study._study_id)  # created, no parameters yet
    assert [len(t.params) for t in study.trials] == [2, 2, 2, 0]
    assert [t.state for t in study.trials][2:] == [optuna.trial.TrialState.RUNNING] * 2
    df = stepsim.dse(space, out, progress=False)
    assert df["compute_bw"].notna().all() and df["hbm.channels"].notna().all()
    assert key_columns(out) == key_columns(os.path.join(folder, "ref"))


def test_a_grid_point_queued_but_not_asked_still_runs(folder):
    """The issue's case: killed between queueing a grid point and asking it, the study kept a
    WAITING trial; after the resume the last grid point never ran and was written as failed
    with no parameters and no error, exit 0."""
    from stepsim.design import space as space_module

    space = grid(folder)
    explore.run(space, os.path.join(folder, "ref"), progress=False)
    out = os.path.join(folder, "o")
    explore.run(space, out, trials=3, progress=False)
    s = space_module.load(space)
    study = explore.open_study(s, out)
    study.enqueue_trial(s.grid_point(3))  # WAITING
    df = stepsim.dse(space, out, progress=False)
    assert list(df["state"]) == ["ok"] * 4
    assert key_columns(out) == key_columns(os.path.join(folder, "ref"))
