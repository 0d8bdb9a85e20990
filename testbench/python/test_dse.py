"""Design-space exploration (stepsim.dse, `stepsim dse`) and the distributed sweep on local
workers: results equal to direct runs, the front by brute force, the same trials for any number of
workers and after a resume, failed and infeasible points kept, clear errors for bad spaces."""
import csv
import itertools
import os
import re

import pytest

import stepsim
from stepsim.design import explore
from stepsim.design import space as space_module

from conftest import SQUARE_BUILDER as BUILDER, cli

SWIGLU = {
    "name": "swiglu-test",
    "program": {"layer": "swiglu", "params": {"batch": 32}},
    "parameters": {"tile_f": [32, 64, 128], "hbm.channels": {"low": 4, "high": 8, "step": 4}},
    "objectives": {"cycles": "min", "onchip_bytes": "min"},
    "search": {"method": "grid"},
}


def space(**changes):
    s = {k: (dict(v) if isinstance(v, dict) else v) for k, v in SWIGLU.items()}
    s.update(changes)
    return s


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_grid_trials_are_the_direct_runs_and_the_front_is_the_non_dominated_set(tmp_path):
    df = stepsim.dse(space(), str(tmp_path / "o"), progress=False)
    assert len(df) == 6 and list(df["state"]) == ["ok"] * 6
    # Grid order: the last parameter fastest.
    assert list(zip(df["tile_f"], df["hbm.channels"])) == list(itertools.product([32, 64, 128], [4, 8]))
    for _, row in df.iterrows():
        g = stepsim.layers.swiglu(batch=32, tile_f=int(row["tile_f"]))
        r = g.run(set={"hbm.channels": int(row["hbm.channels"])})
        assert row["cycles"] == r.cycles
        assert row["onchip_bytes"] == r.report["onchip"]["requirement_bytes"]
    points = [(r["cycles"], r["onchip_bytes"]) for _, r in df.iterrows()]
    front = {p for p in points if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in points)}
    written = read_csv(tmp_path / "o" / "pareto.csv")
    assert {(int(r["cycles"]), int(r["onchip_bytes"])) for r in written} == front
    for name in ("trials.csv", "pareto.png", "sensitivity_tile_f.png", "sensitivity_hbm_channels.png", "study.db"):
        assert (tmp_path / "o" / name).stat().st_size > 0
    assert not (tmp_path / "o" / "work").exists()


# The parameters out of name order: a resumed study reads them back by name (a bug found here).
NSGA = space(search={"method": "nsga2", "trials": 16, "seed": 7, "batch": 4},
             parameters={"tile_f": [32, 64, 128], "hbm.channels": {"low": 2, "high": 32}, "onchip_bw": [32, 64]})


def key_columns(path):
    return [{k: v for k, v in r.items() if k not in ("wall_seconds", "worker")} for r in read_csv(path)]


def test_the_same_trials_inline_on_two_workers_and_after_a_resume(tmp_path):
    stepsim.dse(NSGA, str(tmp_path / "inline"), progress=False)
    stepsim.dse(NSGA, str(tmp_path / "local"), workers="local:2", progress=False)
    stepsim.dse(NSGA, str(tmp_path / "resumed"), trials=8, progress=False)  # stopped after two batches
    interrupted_in_the_third_batch(str(tmp_path / "resumed"))
    stepsim.dse(NSGA, str(tmp_path / "resumed"), progress=False)  # and resumed to 16
    inline = key_columns(tmp_path / "inline" / "trials.csv")
    assert len(inline) == 16
    assert key_columns(tmp_path / "local" / "trials.csv") == inline
    assert key_columns(tmp_path / "resumed" / "trials.csv") == inline
    workers = {r["worker"] for r in read_csv(tmp_path / "local" / "trials.csv")}
    assert workers <= {"l0", "l1", "cache"} and workers & {"l0", "l1"}


def interrupted_in_the_third_batch(out):
    """What a coordinator killed while batch 3 ran leaves: its trials asked, none told."""
    s = space_module.load(NSGA)
    study = explore.open_study(s, out)
    distributions = {p.name: p.distribution() for p in sorted(s.parameters, key=lambda p: p.name)}
    assert len(explore.ask_batch(s, study, 8, distributions)) == 4


def test_a_resumed_study_must_be_the_same_space(tmp_path):
    stepsim.dse(space(), str(tmp_path / "o"), progress=False)
    with pytest.raises(stepsim.Error, match="another space"):
        stepsim.dse(space(name="other"), str(tmp_path / "o"), progress=False)


def test_failed_and_infeasible_points_are_kept(tmp_path):
    # tile_f 96 does not divide inter 512: the layer refuses it. memory_units <= 8 is never met (9).
    s = space(parameters={"tile_f": [64, 96]}, constraints={"memory_units": {"max": 8}})
    df = stepsim.dse(s, str(tmp_path / "o"), progress=False)
    by_tile = {int(r["tile_f"]): r for _, r in df.iterrows()}
    assert by_tile[96]["state"] == "failed" and "96" in by_tile[96]["error"]
    assert by_tile[64]["state"] == "infeasible" and by_tile[64]["memory_units"] == 9
    assert len(read_csv(tmp_path / "o" / "pareto.csv")) == 0
    assert [r["state"] for r in read_csv(tmp_path / "o" / "trials.csv")] == ["infeasible", "failed"]


def test_a_point_that_does_not_fit_the_fabric_is_infeasible(tmp_path):
    # swiglu batch 32 allocates 5 memory units before its run and holds 9 during it: 4 PMUs are
    # refused before the run (failed, with the reason), 6 run but do not fit (infeasible).
    df = stepsim.dse(space(parameters={"num_pmus": [4, 6, 9]}), str(tmp_path / "o"), progress=False)
    assert list(df["state"]) == ["failed", "infeasible", "ok"]
    assert "needs 5 memory units" in df.loc[0, "error"] and "(num_pmus)" in df.loc[0, "error"]
    assert list(df["fits"][1:]) == [False, True]


@pytest.mark.parametrize("changes, message", [
    ({"bogus": 1}, "unknown key 'bogus'"),
    ({"program": {"layer": "nope"}}, "unknown layer 'nope'"),
    ({"program": {"layer": "swiglu", "params": {"tile_q": 1}}}, "'tile_q' is not a parameter of swiglu"),
    ({"parameters": {"tile_q": [1, 2]}}, "'tile_q' is neither"),
    ({"parameters": {"tile_f": []}}, "empty list"),
    ({"parameters": {"tile_f": [64, 64]}}, "twice"),
    ({"parameters": {"tile_f": {"low": 9, "high": 2}}}, "low 9 > high 2"),
    ({"parameters": {"clock_ghz": {"low": 0.5, "high": 2.0}}}, "a grid needs a list or a range with a step"),
    ({"parameters": {"tile_f": {"low": 0, "high": 2, "log": True}}}, "log range needs low > 0"),
    ({"objectives": {"speed": "min"}}, "unknown objective 'speed'"),
    ({"objectives": {"cycles": "lowest"}}, "min or max"),
    ({"constraints": {"cycles": 5}}, "give {max: V}"),
    ({"search": {"method": "tpe"}}, "TPE searches one objective"),
    ({"search": {"method": "grid", "trials": 0}}, "search.trials must be an integer"),
    ({"search": {"method": "anneal"}}, "search.method must be one of"),
    ({"preset": "fastest"}, "unknown preset 'fastest'"),
    # Mistakes that failed every trial, then exited 0 (issue 33): refused before any trial.
    ({"set": {"bogus_param": 1}}, "set.bogus_param: 'bogus_param' is neither a parameter of the program"),
    ({"set": {"hbm.channel": 4}}, "'hbm.channel' is not a hardware parameter (did you mean hbm.channels?), and "
                                  "the program has no node 'hbm'"),
    ({"parameters": {"tile_f": [64], "hbm.channel": [4, 8]}}, "'hbm.channel' is not a hardware parameter"),
    ({"parameters": {"tile_f": [64], "hbm.channels": [4, "eight"]}}, "parameters.hbm.channels: 'eight' is not an "
                                                                    "integer"),
    ({"parameters": {"tile_f": [64, "x"]}}, "parameters.tile_f: 'x' is not an integer"),
    ({"parameters": {"tile_f": {"low": 32.5, "high": 64}}}, "parameters.tile_f: 32.5 is not an integer"),
    ({"program": {"layer": "swiglu", "params": {"batch": [32, 64]}}}, "program.params.batch: [32, 64] is not an "
                                                                      "integer"),
    ({"set": {"onchip_requirement_model": 3, "hbm.channels": "x"}}, "set.hbm.channels: 'x' is not an integer"),
    ({"constraints": {"cycles": {"max": float("nan")}}}, "constraint 'cycles': max must be a finite number, not nan"),
    ({"constraints": {"cycles": {"min": float("inf")}}}, "constraint 'cycles': min must be a finite number, not inf"),
    ({"parameters": {"tile_f": [32, float("nan")]}}, "value nan is not a finite number"),
    # Found by scripts/dse/fuzz_space.py (seed 3): a name of 10,000 characters crashed matplotlib
    # (the plots' title) after every trial had run.
    ({"name": "x" * 10000}, "name must be 1..100 printable characters, not 'xxxxxxxx"),
    ({"name": "two\nlines"}, "name must be 1..100 printable characters"),
    # Found by scripts/dse/fuzz_space.py (seed 2): a float range for an integer hardware parameter.
    ({"parameters": {"tile_f": [64], "hbm.channels": {"low": 1.5, "high": 8, "step": 4}}},
     "parameters.hbm.channels: 1.5 is not an integer"),
    # Grids counted, not listed: 10^12 points, and three ranges of 1,000.
    ({"parameters": {"hbm.channels": {"low": 1, "high": 10**12}}}, "the grid has more than 1000000 points "
                                                                   "(1000000000000); the limit is 1000000"),
    ({"parameters": {"hbm.channels": {"low": 1, "high": 1000}, "num_pmus": {"low": 1, "high": 1000},
                     "num_pcus": {"low": 1, "high": 1000}}}, "(1000 x 1000 x 1000); the limit is 1000000"),
    ({"parameters": {"clock_ghz": {"low": 0.0, "high": 1e300, "step": 1e-300}}}, "(more than 1000000)"),
])
def test_bad_spaces_are_refused_with_the_key_named(tmp_path, changes, message):
    with pytest.raises(stepsim.Error, match=re.escape(message)):
        stepsim.dse(space(**changes), str(tmp_path / "o"), progress=False)
    assert not (tmp_path / "o").exists()


def test_duplicate_yaml_keys_are_refused(tmp_path):
    f = tmp_path / "space.yaml"
    f.write_text("program: {layer: swiglu}\nparameters:\n  tile_f: [32]\n  tile_f: [64]\nobjectives: {cycles: min}\n")
    with pytest.raises(stepsim.Error, match="%s: duplicate key 'tile_f' \\(line 4\\)" % f):
        space_module.load(str(f))


def test_node_params_and_program_params_in_set_are_checked_and_used(tmp_path):
    # NODE.PARAM names a node of the graph and a parameter of its operator; a program parameter
    # in set: is fixed as in program.params (before, it failed every trial).
    g = stepsim.layers.swiglu(batch=32)
    node = next(n for n in g.nodes if n["op"] == "LinearOffChipLoad")
    message = "node '%s' \\(LinearOffChipLoad\\) has no parameter 'tilee'" % node["name"]
    with pytest.raises(stepsim.Error, match=message):
        space_module.load(space(set={node["name"] + ".tilee": 1}))
    df = stepsim.dse(space(program={"layer": "swiglu"}, set={"batch": 32}, parameters={"tile_f": [64]}),
                     str(tmp_path / "o"), progress=False)
    assert list(df["state"]) == ["ok"]
    assert df.loc[0, "cycles"] == stepsim.layers.swiglu(batch=32, tile_f=64).run().cycles


def test_a_huge_grid_with_a_budget_is_enumerated_lazily(tmp_path):
    # 10^6 points (the limit), 3 trials: the first three points in product order, none listed.
    import resource

    s = space(parameters={"tile_f": [32, 64, 128], "hbm.channels": {"low": 1, "high": 333333}},
              search={"method": "grid", "trials": 3})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    df = stepsim.dse(s, str(tmp_path / "o"), progress=False)
    assert list(zip(df["tile_f"], df["hbm.channels"])) == [(32, 1), (32, 2), (32, 3)]
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB


def test_a_constraint_on_a_metric_the_run_does_not_measure_fails_the_trial_not_the_study(tmp_path, monkeypatch):
    # Optuna refuses NaN constraint values after the batch ("Constraint values cannot be NaN").
    from stepsim.design import evaluate

    real = evaluate.run_metrics
    monkeypatch.setattr(evaluate, "run_metrics", lambda result: dict(real(result), onchip_static_bytes=float("nan")))
    s = space(parameters={"tile_f": [32, 64]}, constraints={"onchip_static_bytes": {"max": 10**12}},
              search={"method": "nsga2", "trials": 4, "batch": 2})
    df = stepsim.dse(s, str(tmp_path / "o"), progress=False)
    assert set(df["state"]) == {"failed"}
    assert "measured no value of onchip_static_bytes" in df.loc[0, "error"]


def test_the_command_line(tmp_path):
    f = tmp_path / "space.yaml"
    f.write_text("program: {layer: swiglu, params: {batch: 32}}\nparameters:\n  tile_f: [32, 64]\n"
                 "objectives: {cycles: min}\nsearch: {method: grid}\n")
    p = cli("dse", str(f), "--out", str(tmp_path / "o"), "--workers", "local:2")
    assert "2 trials (2 ok, 0 infeasible, 0 failed), grid search" in p.stdout
    assert "cycles [cycles]" in p.stdout and "wrote " in p.stdout
    assert "dse: 2/2 trials" in p.stderr  # the progress line (one per batch when stderr is no terminal)
    bad = cli("dse", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "o2"), check=False)
    assert bad.returncode == 1 and "error: space: cannot read" in bad.stderr
    bad = cli("dse", str(f), "--out", str(tmp_path / "o3"), "--workers", "many", check=False)
    assert bad.returncode == 1 and "--workers: give inline, local:N or slurm:N" in bad.stderr
    assert not (tmp_path / "o3").exists()
    blocked = tmp_path / "file"
    blocked.write_text("")
    bad = cli("dse", str(f), "--out", str(blocked / "o"), check=False)
    assert bad.returncode == 1 and "cannot create" in bad.stderr


def test_a_sweep_on_local_workers_prints_the_serial_sweeps_table(tmp_path):
    args = ["sweep", "--layer", "swiglu", "-p", "batch=32", "-p", "tile_f=32,64,96", "--set", "hbm.channels=4,8"]
    serial = cli(*args, "--csv", str(tmp_path / "a.csv"), check=False)
    spread = cli(*args, "--csv", str(tmp_path / "b.csv"), "--workers", "local:2", check=False)
    assert serial.returncode == spread.returncode == 1  # tile_f 96 fails: the sweep says so

    def without_wall(path):
        return [{k: v for k, v in r.items() if k != "wall [s]"} for r in read_csv(path)]

    assert without_wall(tmp_path / "b.csv") == without_wall(tmp_path / "a.csv")
    assert "error: 2 of 6 points failed" in spread.stderr
    assert len(spread.stdout.splitlines()) == len(serial.stdout.splitlines())
    assert not any(n.startswith(".stepsim-sweep") for n in os.listdir("."))


def test_workers_that_die_are_replaced_and_their_points_reported(tmp_path, monkeypatch):
    # A worker killed in the middle of a point: the point runs again on a new worker.
    from stepsim.design.evaluate import evaluate_point
    from stepsim.pool import workers

    pool = workers.Pool("local:1", str(tmp_path / "w"), evaluate_point, {})
    pool.start()
    try:
        os.kill(pool.procs["l0"].pid, 9)
        pool.procs["l0"].wait()
        workers.write_json(pool.path("claimed", "p00000001@l0.json"), {"key": "p00000001", "point": {}, "attempt": 2})
        given_up = pool._recover_dead_workers()
        assert "died" in given_up["p00000001"]["error"] and pool.procs["l0"].poll() is None
    finally:
        pool.close()


def test_the_pool_runs_any_task_its_worker_imports_by_name(tmp_path):
    # The pool imports none of its users: job.json names the task and the worker imports it.
    import operator

    from stepsim.pool import workers

    with workers.Pool("local:1", str(tmp_path / "w"), operator.or_, {"a": 1}) as pool:
        assert workers.read_json(pool.path("job.json")) == {"task": "_operator:or_", "job": {"a": 1}}
        results = pool.map({"k0": {"b": 2}, "k1": {"a": 3}})
    assert results == {"k0": {"a": 1, "b": 2, "worker": "l0"}, "k1": {"a": 3, "worker": "l0"}}
    assert not os.path.exists(str(tmp_path / "w"))
    with pytest.raises(stepsim.Error, match=r"pool: the task test_dse:.*<lambda> is not a module-level function"):
        workers.Pool("inline", str(tmp_path / "x"), lambda job, point: {}, {})


def test_a_python_builder_runs_on_local_workers(tmp_path):
    (tmp_path / "mine.py").write_text(BUILDER)
    s = {"program": {"builder": str(tmp_path / "mine.py") + ":build"},
         "parameters": {"compute_bw": [256, 1024], "hbm.channels": [2, 8]},
         "objectives": {"cycles": "min"}, "search": {"method": "grid", "batch": 4}}
    df = stepsim.dse(s, str(tmp_path / "o"), workers="local:2", progress=False)
    assert list(df["state"]) == ["ok"] * 4
    import importlib.util

    spec = importlib.util.spec_from_file_location("mine", str(tmp_path / "mine.py"))
    mine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mine)
    for _, row in df.iterrows():
        r = mine.build(compute_bw=int(row["compute_bw"])).run(set={"hbm.channels": int(row["hbm.channels"])})
        assert row["cycles"] == r.cycles
    with pytest.raises(stepsim.Error, match="has no function nope"):
        stepsim.dse(dict(s, program={"builder": str(tmp_path / "mine.py") + ":nope"}), str(tmp_path / "o2"))


def test_a_graph_files_params_are_searched_as_the_command_lines_set(tmp_path):
    from conftest import ROOT, cli_report

    graph = os.path.join(ROOT, "graphs", "examples", "graph_features.yaml")
    s = {"program": {"graph": graph}, "parameters": {"tokens": [8, 16], "hbm.channels": [4]},
         "objectives": {"cycles": "min"}, "search": {"method": "grid"}}
    df = stepsim.dse(s, str(tmp_path / "o"), progress=False)
    assert list(df["state"]) == ["ok", "ok"]
    for _, row in df.iterrows():
        report = cli_report(graph, tmp_path, "--set", "tokens=%d" % row["tokens"], "--set", "hbm.channels=4")
        assert row["cycles"] == report["cycles"]
    assert df.loc[0, "cycles"] != df.loc[1, "cycles"]
    with pytest.raises(stepsim.Error, match="'tokenz' is neither a parameter of the program \\(tokens\\)"):
        stepsim.dse(dict(s, parameters={"tokenz": [1]}), str(tmp_path / "o2"))


def test_a_searched_parameter_can_be_an_objective_and_a_constraint(tmp_path):
    # The hardware's cost: fewer HBM channels is better, and at most 6 are allowed.
    s = space(objectives={"cycles": "min", "hbm.channels": "min"}, constraints={"hbm.channels": {"max": 6}},
              parameters={"tile_f": [64], "hbm.channels": [2, 4, 8]})
    df = stepsim.dse(s, str(tmp_path / "o"), progress=False)
    assert list(df["state"]) == ["ok", "ok", "infeasible"]
    front = read_csv(tmp_path / "o" / "pareto.csv")
    assert [int(r["hbm.channels"]) for r in front] == [2, 4]  # 4 channels are faster than 2
    assert int(front[0]["cycles"]) > int(front[1]["cycles"])
    with pytest.raises(stepsim.Error, match="unknown objective 'tile_q'"):
        stepsim.dse(space(objectives={"tile_q": "min"}), str(tmp_path / "o2"))


@pytest.mark.parametrize("method", ["tpe", "random"])
def test_tpe_and_random_searches_are_seeded(tmp_path, method):
    s = space(objectives={"cycles": "min"}, search={"method": method, "trials": 12, "seed": 3, "batch": 4},
              parameters={"tile_f": [32, 64, 128], "hbm.channels": {"low": 2, "high": 32}})
    a = stepsim.dse(s, str(tmp_path / "a"), progress=False)
    stepsim.dse(s, str(tmp_path / "b"), workers="local:2", progress=False)
    assert len(a) == 12 and set(a["state"]) == {"ok"}
    assert key_columns(tmp_path / "a" / "trials.csv") == key_columns(tmp_path / "b" / "trials.csv")
    front = read_csv(tmp_path / "a" / "pareto.csv")  # one objective: the best trials
    assert {int(r["cycles"]) for r in front} == {int(a["cycles"].min())}


def test_mutated_spaces_give_a_space_or_a_clear_error():
    """A fuzz of the space parser: 2000 spaces with one part replaced by a value of another shape
    or type (seeded). Each loads, or raises stepsim.Error; nothing else may escape."""
    import copy
    import random

    rng = random.Random(22)
    junk = [None, 0, -1, 1.5, float("nan"), float("inf"), True, "", "x", [], [None], [[1]], {}, {"low": "a"},
            {"low": 1}, {"low": 5, "high": 1}, {"max": "a"}, {"min": 1, "max": 2}, "min", "max", 10**30, [1, 1]]
    paths = [("name",), ("program",), ("program", "layer"), ("program", "params"), ("program", "params", "batch"),
             ("preset",), ("mode",), ("set",), ("parameters",), ("parameters", "tile_f"),
             ("parameters", "hbm.channels"), ("parameters", "hbm.channels", "low"),
             ("parameters", "hbm.channels", "step"),
             ("objectives",), ("objectives", "cycles"), ("objectives", "hbm.channels"), ("constraints",),
             ("constraints", "cycles"), ("search",), ("search", "method"), ("search", "trials"), ("search", "batch"),
             ("search", "seed")]
    loaded = refused = 0
    for _ in range(2000):
        s = copy.deepcopy(SWIGLU)
        s["constraints"] = {"cycles": {"max": 10**9}}
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(paths)
            node = s
            for k in path[:-1]:
                if not isinstance(node.get(k) if isinstance(node, dict) else None, dict):
                    break
                node = node[k]
            else:
                node[path[-1]] = copy.deepcopy(rng.choice(junk))
        try:
            space_module.load(s)
            loaded += 1
        except stepsim.Error:
            refused += 1
    assert loaded + refused == 2000 and loaded > 0 and refused > 1000


RAISES = BUILDER + '''

def build_raises(compute_bw=1024):
    if compute_bw == 256:
        raise RuntimeError("no such compute_bw here")
    return build(compute_bw)


def build_dies(compute_bw=1024):
    import os
    import sys

    if compute_bw == 256:
        print("about to die at", compute_bw, file=sys.stderr, flush=True)
        os._exit(3)
    return build(compute_bw)
'''


def builder_space(tmp_path, function, method="grid"):
    (tmp_path / "mine.py").write_text(RAISES)
    return {"program": {"builder": str(tmp_path / "mine.py") + ":" + function},
            "parameters": {"compute_bw": [256, 1024]}, "objectives": {"cycles": "min"},
            "search": {"method": method, "batch": 2}}


@pytest.mark.parametrize("workers", ["inline", "local:2"])
def test_a_builder_that_raises_is_the_trials_error(tmp_path, workers):
    # Before: inline, a traceback with the batch left RUNNING; on workers, the worker died and the
    # point was "worker l0 died (exit status 1)" with worker inline, its log deleted.
    df = stepsim.dse(builder_space(tmp_path, "build_raises"), str(tmp_path / "o"), workers=workers, progress=False)
    assert list(df["state"]) == ["failed", "ok"]
    assert df.loc[0, "error"] == "builder %s:build_raises raised RuntimeError: no such compute_bw here" % (
        tmp_path / "mine.py")
    assert df.loc[0, "worker"] in ({"inline"} if workers == "inline" else {"l0", "l1"})
    import optuna

    study = optuna.load_study(study_name="dse", storage="sqlite:///%s" % (tmp_path / "o" / "study.db"))
    assert all(t.state.is_finished() for t in study.trials)


def test_a_worker_that_dies_is_named_and_its_log_kept(tmp_path):
    s = builder_space(tmp_path, "build_dies")
    df = stepsim.dse(s, str(tmp_path / "o"), workers="local:1", progress=False)
    assert list(df["state"]) == ["failed", "ok"]
    error = df.loc[0, "error"]
    assert error.startswith("worker l0 died (exit status 3) running this point, 2 times") and "about to die" in error
    assert df.loc[0, "worker"] == "l0"
    log = tmp_path / "o" / "work" / "logs" / "worker_l0.log"
    assert "about to die at 256" in log.read_text()


def test_builder_mistakes_through_the_command_line(tmp_path):
    (tmp_path / "broken.py").write_text("def build(:\n    pass\n")
    f = tmp_path / "space.yaml"
    f.write_text("program: {builder: %s}\nparameters: {hbm.channels: [2]}\nobjectives: {cycles: min}\n"
                 % (str(tmp_path / "broken.py") + ":build"))
    p = cli("dse", str(f), "--out", str(tmp_path / "o"), check=False)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.startswith("error: space: program.builder '%s:build': cannot load it: SyntaxError: "
                               % (tmp_path / "broken.py"))
    assert "line 1" in p.stderr
    # Every trial failing is an error (exit 1) after the outputs; some failing, a warning.
    import yaml

    for function, code, said in (("build_raises", 0, "warning: 1 of 2 trials failed"),):
        f.write_text(yaml.safe_dump(builder_space(tmp_path, function)))
        p = cli("dse", str(f), "--out", str(tmp_path / function), "--quiet", check=False)
        assert p.returncode == code and said in p.stderr, p.stderr
    f.write_text(yaml.safe_dump(dict(builder_space(tmp_path, "build_raises"), parameters={"compute_bw": [256]})))
    p = cli("dse", str(f), "--out", str(tmp_path / "all"), "--quiet", check=False)
    assert p.returncode == 1 and "error: every trial failed: 1 of 1 trials failed" in p.stderr, p.stderr
    assert (tmp_path / "all" / "trials.csv").exists()
