"""Design-space exploration of a PyTorch module (program: {torch: FILE.py:FACTORY}, docs/dse.md):
every trial is the factory's module lowered by stepsim.torch at the point's schedule and run, with
the cycles of a direct lower + run; a schedule the lowering refuses is a failed trial with its
message; the same trials on local workers, from the cache and after a resume; clear errors for bad
program entries, before anything runs."""
import csv
import os
import re

import pytest
import yaml

import stepsim
import stepsim.torch
from stepsim.design import space as space_module

from conftest import ROOT, cli

# A factory of a module that lowers today: one Linear over [batch x 32 x 64] inputs.
LINEAR = """import torch


def make(batch=1):
    return torch.nn.Linear(64, 64), (torch.randn(batch, 32, 64),)


def with_kwargs(batch=1):
    return torch.nn.Linear(64, 64), (), {"input": torch.randn(batch, 32, 64)}
"""


def write_space(folder, **changes):
    """A space file in `folder` whose program is lin.py:make beside it (a relative path)."""
    (folder / "lin.py").write_text(LINEAR)
    s = {"name": "torch-linear", "program": {"torch": "lin.py:make"},
         "parameters": {"tile_rows": [8, 16], "batch": [1, 2]},
         "objectives": {"cycles": "min"}, "search": {"method": "grid"}}
    s.update(changes)
    path = folder / "space.yaml"
    path.write_text(yaml.safe_dump(s, sort_keys=False))
    return str(path)


def direct(batch, settings=None, **schedule):
    """The point lowered and run by hand, as a user of stepsim.torch would."""
    import torch

    torch.manual_seed(0)
    lowered = stepsim.torch.lower(torch.nn.Linear(64, 64), (torch.randn(batch, 32, 64),), schedule=schedule)
    return lowered.run(mode="timing", preset="step-artifact", set=settings or {})


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def key_columns(path):
    return [{k: v for k, v in r.items() if k not in ("wall_seconds", "worker")} for r in read_csv(path)]


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """The current directory is not the space file's: its program's path is relative to the file."""
    os.makedirs(tmp_path / "cwd")
    monkeypatch.chdir(tmp_path / "cwd")
    os.makedirs(tmp_path / "spaces")
    return tmp_path / "spaces"


def test_every_trial_is_a_direct_lower_and_run_and_the_best_has_the_fewest_cycles(tmp_path, elsewhere):
    df = stepsim.dse(write_space(elsewhere), str(tmp_path / "o"), progress=False)
    assert list(df["state"]) == ["ok"] * 4
    assert list(zip(df["tile_rows"], df["batch"])) == [(8, 1), (8, 2), (16, 1), (16, 2)]
    for _, row in df.iterrows():
        r = direct(int(row["batch"]), tile_rows=int(row["tile_rows"]))
        assert row["cycles"] == r.cycles
        assert row["onchip_bytes"] == r.result.report["onchip"]["requirement_bytes"]
    assert len(set(df["cycles"])) == 4  # the schedule and the batch both matter
    front = read_csv(tmp_path / "o" / "pareto.csv")
    assert len(front) == 1
    best = front[0]
    assert int(best["cycles"]) == df["cycles"].min()
    assert (int(best["tile_rows"]), int(best["batch"])) == (16, 1)
    assert int(best["cycles"]) == direct(1, tile_rows=16).cycles


def test_the_same_trials_on_local_workers_from_the_cache_and_after_a_resume(tmp_path, elsewhere):
    # Random sampling of 8 trials over 4 points: some points come again, and are taken from the study.
    f = write_space(elsewhere, parameters={"tile_rows": [8, 16], "batch": [1, 2], "hbm.channels": [4]},
                    search={"method": "random", "trials": 8, "batch": 4, "seed": 3})
    stepsim.dse(f, str(tmp_path / "inline"), progress=False)
    stepsim.dse(f, str(tmp_path / "local"), workers="local:2", progress=False)
    stepsim.dse(f, str(tmp_path / "resumed"), trials=4, progress=False)
    stepsim.dse(f, str(tmp_path / "resumed"), progress=False)
    inline = key_columns(tmp_path / "inline" / "trials.csv")
    assert len(inline) == 8 and {r["state"] for r in inline} == {"ok"}
    assert key_columns(tmp_path / "local" / "trials.csv") == inline
    assert key_columns(tmp_path / "resumed" / "trials.csv") == inline
    workers = [r["worker"] for r in read_csv(tmp_path / "local" / "trials.csv")]
    assert set(workers) <= {"l0", "l1", "cache"} and "cache" in workers and set(workers) & {"l0", "l1"}
    for r in inline:
        assert int(r["cycles"]) == direct(int(r["batch"]), {"hbm.channels": 4}, tile_rows=int(r["tile_rows"])).cycles


def test_a_schedule_the_lowering_refuses_is_a_failed_trial_with_its_message(tmp_path, elsewhere):
    df = stepsim.dse(write_space(elsewhere, parameters={"tile_rows": [12, 16]}), str(tmp_path / "o"),
                     progress=False)
    assert list(df["state"]) == ["failed", "ok"]
    error = df.loc[0, "error"]
    assert error.startswith("stepsim.torch.lower: ") and "tile_rows 12 does not divide the 32 rows" in error
    assert df.loc[1, "cycles"] == direct(1, tile_rows=16).cycles
    # Through the command line: some failed, a warning (exit 0); every one failed, an error (exit 1).
    p = cli("dse", write_space(elsewhere, parameters={"tile_rows": [12, 16]}), "--out", str(tmp_path / "c"),
            "--quiet", check=False)
    assert p.returncode == 0 and "warning: 1 of 2 trials failed" in p.stderr and "tile_rows 12" in p.stderr, p.stderr
    p = cli("dse", write_space(elsewhere, parameters={"tile_rows": [12, 24]}), "--out", str(tmp_path / "all"),
            "--quiet", check=False)
    assert p.returncode == 1 and "error: every trial failed: 2 of 2 trials failed" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_fixed_schedule_keys_kwargs_and_a_fifo_depth_the_space_sets(tmp_path, elsewhere):
    # tile_rows fixed in program.params, fifo_depth in set: (a schedule key: the lowering takes it),
    # a factory that returns example kwargs, hardware searched beside them.
    f = write_space(elsewhere, program={"torch": "lin.py:with_kwargs", "params": {"tile_rows": 8}},
                    set={"fifo_depth": 3}, parameters={"batch": [2], "hbm.channels": [2, 8]})
    df = stepsim.dse(f, str(tmp_path / "o"), progress=False)
    assert list(df["state"]) == ["ok", "ok"]
    for _, row in df.iterrows():
        r = direct(2, {"hbm.channels": int(row["hbm.channels"])}, tile_rows=8, fifo_depth=3)
        assert row["cycles"] == r.cycles
    # Without it, the depth the lowering asks for (not the preset's 2).
    df = stepsim.dse(write_space(elsewhere, parameters={"batch": [2], "tile_rows": [8]}), str(tmp_path / "d"),
                     progress=False)
    assert df.loc[0, "cycles"] == direct(2, tile_rows=8).cycles


def test_the_schedule_keys_are_the_lowerings_own(tmp_path, elsewhere, monkeypatch):
    # Read from stepsim.torch when the space is loaded: a key added there is searchable at once.
    f = write_space(elsewhere, parameters={"tile_rows": [8], "tile_depth": [2]})
    with pytest.raises(stepsim.Error, match="'tile_depth' is neither a parameter of the program"):
        space_module.load(f)
    monkeypatch.setattr(stepsim.torch, "SCHEDULE_KEYS", tuple(stepsim.torch.SCHEDULE_KEYS) + ("tile_depth",))
    s = space_module.load(f)
    assert s.job()["program"]["torch"] == str(elsewhere / "lin.py") + ":make"
    assert {"tile_rows", "tile_cols", "compute_bw", "fifo_depth", "tile_depth", "batch"} <= s._program_keys


BROKEN = {
    "syntax.py": "def make(:\n    pass\n",
    "notpy.txt": LINEAR,
    "calls.py": "make = 3\n",
    "raises.py": "def make(batch=1):\n    raise RuntimeError('no batch %d here' % batch)\n",
    "returns.py": "def make(batch=1):\n    return 3\n",
    "notmodule.py": "import torch\n\n\ndef make(batch=1):\n    return 'lin', (torch.randn(batch, 32, 64),)\n",
    "clash.py": "def make(tile_rows=8):\n    pass\n",
}


@pytest.mark.parametrize("program, message", [
    ("nope.py:make", "space: program.torch '{d}/nope.py:make': no file {d}/nope.py"),
    ("notpy.txt:make", "space: program.torch '{d}/notpy.txt:make': {d}/notpy.txt is not a Python file (.py)"),
    (".:make", "space: program.torch '{d}:make': {d} is not a regular file"),
    ("lin.py:nope", "space: program.torch '{d}/lin.py:nope': {d}/lin.py has no factory nope (it defines make, "
                    "with_kwargs)"),
    ("calls.py:make", "space: program.torch '{d}/calls.py:make': make in {d}/calls.py is not callable (a int)"),
    ("syntax.py:make", "space: program.torch '{d}/syntax.py:make': cannot load {d}/syntax.py: SyntaxError: "),
    ("raises.py:make", "space: program.torch: factory {d}/raises.py:make(batch=1) raised RuntimeError: no batch 1 "
                       "here"),
    ("returns.py:make", "space: program.torch: factory {d}/returns.py:make returned int 3, not (module, "
                        "example_inputs) or (module, example_inputs, example_kwargs)"),
    ("notmodule.py:make", "space: program.torch: factory {d}/notmodule.py:make returned str 'lin' as the module, "
                          "not a torch.nn.Module"),
    ("clash.py:make", "space: program.torch '{d}/clash.py:make': the factory's argument 'tile_rows' is also a "
                      "schedule key of the lowering"),
    ("lin.py", "space: program.torch must be FILE.py:FACTORY, not 'lin.py'"),
    ("lin.py:", "space: program.torch must be FILE.py:FACTORY (a Python file and a function in it), not 'lin.py:'"),
    (3, "space: program.torch must be a name or a path, not 3"),
])
def test_bad_program_entries_are_clear_errors(tmp_path, elsewhere, program, message):
    for name, text in BROKEN.items():
        (elsewhere / name).write_text(text)
    params = {"batch": [1]} if program != "clash.py:make" else {"hbm.channels": [4]}
    f = write_space(elsewhere, program={"torch": program}, parameters=params)
    with pytest.raises(stepsim.Error) as e:
        stepsim.dse(f, str(tmp_path / "o"), progress=False)
    assert str(e.value).startswith(message.format(d=elsewhere)), str(e.value)
    assert not (tmp_path / "o").exists()  # refused before anything was written


@pytest.mark.parametrize("changes, message", [
    ({"program": {"torch": "lin.py:make", "schedule": {"tile_rows": 8}}},
     "space: program: unknown key 'schedule' (layer, graph, builder, torch, serve, params)"),
    ({"program": {"torch": "lin.py:make", "builder": "lin.py:make"}},
     "space: 'program' needs exactly one of layer, graph, builder, torch"),
    ({"program": {"torch": "lin.py:make", "params": {"seq": 4}}},
     "space: program.params: 'seq' is not a parameter of"),
    ({"program": {"torch": "lin.py:make", "params": {"batch": [1, 2]}}},
     "space: program.params.batch: [1, 2] is not a finite number"),
    ({"parameters": {"tile_rows": [8], "batch": [1, 2], "hbm.channel": [4]}}, "space: 'hbm.channel' is not a hardware "
                                                                              "parameter (did you mean hbm.channels?)"),
    ({"parameters": {"tile_rows": [8], "batch": [1, "two"]}}, "space: parameters.batch: 'two' is not a finite number"),
    ({"parameters": {"tile_rows": [8, 16.5]}}, "space: parameters.tile_rows: 16.5: the lowering refuses it "
                                               "(schedule: tile_rows must be a whole number"),
    ({"parameters": {"non_divisor": ["error", "round"]}}, "space: parameters.non_divisor: 'round': the lowering "
                                                          "refuses it"),
    ({"set": {"tile_cols": 0}, "parameters": {"batch": [1]}}, "space: set.tile_cols: 0: the lowering refuses it"),
])
def test_bad_torch_spaces_are_refused_with_the_key_named(tmp_path, elsewhere, changes, message):
    if "refuses it" in message and not hasattr(stepsim.torch, "_check_schedule"):
        pytest.skip("stepsim.torch has no schedule check of its own")
    with pytest.raises(stepsim.Error) as e:
        stepsim.dse(write_space(elsewhere, **changes), str(tmp_path / "o"), progress=False)
    assert str(e.value).startswith(message), str(e.value)


def test_the_space_files_own_checks_still_hold(tmp_path, elsewhere):
    f = write_space(elsewhere)
    text = open(f).read()
    open(f, "w").write(text + "name: again\n")
    with pytest.raises(stepsim.Error, match="duplicate key 'name'"):
        space_module.load(f)
    open(f, "w").write(text.replace("torch: lin.py:make", "torch: &t lin.py:make") + "preset: *t\n")
    with pytest.raises(stepsim.Error, match="YAML aliases and anchors .* are not allowed in a space file"):
        space_module.load(f)


def test_the_example_through_the_command_line(tmp_path, monkeypatch):
    # graphs/dse/torch_mlp.yaml, from another directory: its factory is found beside it.
    monkeypatch.chdir(tmp_path)
    example = os.path.join(ROOT, "graphs", "dse", "torch_mlp.yaml")
    p = cli("dse", example, "--out", str(tmp_path / "o"), "--trials", "6", "--quiet", check=False)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert re.match(r"torch-mlp-b4: 6 trials \(\d+ ok, \d+ infeasible, \d+ failed\), nsga2 search", p.stdout)
    rows = read_csv(tmp_path / "o" / "trials.csv")
    assert len(rows) == 6 and any(r["state"] == "ok" for r in rows)
    for r in rows:
        assert r["state"] != "failed" or "tile_rows 24 does not divide" in r["error"], r["error"]
