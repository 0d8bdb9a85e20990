"""A seeded fuzz of DSE space files (scripts/dse/fuzz_space.py's mutations: types, signs, sizes,
names, NaN, aliases, anchors, nesting, damaged text), in the process: each space loads or is a
stepsim.Error within a second; a sample of those that load runs 2 trials, and none of them may
have a trial without parameters. `fuzz_space.py --minutes M` runs the long campaign through the
command line."""
import os
import random
import signal
import sys
import time

import pytest

import stepsim
from stepsim.design import explore
from stepsim.design import space as space_module

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts", "dse"))
import fuzz_space  # noqa: E402


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


@pytest.fixture
def no_plots(monkeypatch):
    from stepsim.design import plots

    monkeypatch.setattr(plots, "pareto", lambda *a, **k: open(a[3], "w").close())
    monkeypatch.setattr(plots, "sensitivity", lambda *a, **k: open(a[3], "w").close())


def test_mutated_space_files_load_or_are_clear_errors(tmp_path, no_plots):
    rng = random.Random(33)
    counts = {"loaded": 0, "error": 0}
    loaded = []
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for i in range(400):
            text = fuzz_space.case(rng)
            signal.alarm(2)
            try:
                s = space_module.load(text)
                counts["loaded"] += 1
                loaded.append(text)
            except stepsim.Error as e:
                assert str(e) and "Traceback" not in str(e)
                counts["error"] += 1
            except Hang:
                pytest.fail("case %d hangs: %r" % (i, text[:300]))
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, old)
    assert counts["loaded"] > 10 and counts["error"] > 300, counts
    # A sample of the loaded ones runs: never a trial without parameters.
    for i, text in enumerate(loaded[:8]):
        try:
            _, rows = explore.run(text, str(tmp_path / ("o%d" % i)), trials=2, progress=False)
        except stepsim.Error:
            continue  # e.g. a grid whose points the program refuses before the run
        s = space_module.load(text)
        for r in rows:
            assert all(r[p.name] is not None for p in s.parameters), (text, r)


@pytest.mark.parametrize("text, message", [
    ("a: &a [*a]\n", "space: line 1: YAML aliases and anchors"),
    ("x: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n", "nested more than 32 levels"),
    ("name: " + "[" * 100000 + "\n", "nested more than 32 levels"),
    ("? [1, 2]\n: 3\n", "a key must be a word or a number, not list"),
], ids=["recursive_alias", "nested_33", "nested_100000", "unhashable_key"])
def test_aliases_nesting_and_odd_keys_are_refused_at_once(text, message):
    t0 = time.time()
    with pytest.raises(stepsim.Error, match=message.replace("[", "\\[")):
        space_module.load(text)
    assert time.time() - t0 < 2


def test_billion_laughs_in_a_space_file_is_refused_naming_the_file_and_line(tmp_path):
    laughs = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    laughs += ["a%d: &a%d [%s]" % (i, i, ",".join(["*a%d" % (i - 1)] * 9)) for i in range(1, 10)]
    f = tmp_path / "laughs.yaml"
    f.write_text("\n".join(laughs) + "\nprogram: {layer: swiglu}\n")
    t0 = time.time()
    with pytest.raises(stepsim.Error, match="%s: line 1: YAML aliases and anchors" % f):
        space_module.load(str(f))
    assert time.time() - t0 < 1


def test_a_space_dict_containing_itself_is_refused():
    s = {"program": {"layer": "swiglu"}, "parameters": {"tile_f": [32]}, "objectives": {"cycles": "min"}}
    s["parameters"]["tile_f"].append(s["parameters"]["tile_f"])
    with pytest.raises(stepsim.Error, match="contains itself"):
        space_module.load(s)
