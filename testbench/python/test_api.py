"""The Python API is generated from the operator registry: every operator is a Graph method with
its ports, typed parameters and documentation, and nothing else."""
import inspect
import re

import pytest
import stepsim
from stepsim import _stepsim

from conftest import cli


def test_every_operator_of_the_registry_is_a_method_with_its_documentation():
    ops = _stepsim.ops()
    assert [d["name"] for d in ops] == stepsim.ops()
    # The same operators as the command line lists (`stepsim ops`: "Name  [category]" lines).
    listed = [line.split()[0] for line in cli("ops").stdout.splitlines() if re.match(r"^[A-Z]\w+  \[", line)]
    assert sorted(listed) == sorted(stepsim.ops()) and len(listed) >= 26
    for d in ops:
        method = getattr(stepsim.Graph, d["name"])
        doc = method.__doc__
        assert d["description"] in doc and d["timing"] in doc, d["name"]
        for p in d["params"]:
            assert "  %s (%s, " % (p["name"], p["type"]) in doc, (d["name"], p["name"])
            assert p["name"] in inspect.signature(method).parameters
        for port in d["inputs"] + d["outputs"]:
            assert port["doc"] in doc, (d["name"], port["name"])


def test_no_other_method_looks_like_an_operator():
    # Capitalized attributes of Graph are exactly the registry's operators.
    ops = set(stepsim.ops())
    assert {a for a in dir(stepsim.Graph) if a[:1].isupper()} == ops


def test_signature_shows_ports_parameters_and_node_options():
    sig = inspect.signature(stepsim.Graph.Accum)
    kinds = {n: p.kind for n, p in sig.parameters.items()}
    assert kinds["in_"] == inspect.Parameter.VAR_POSITIONAL
    assert sig.parameters["fn"].default is inspect.Parameter.empty  # required
    accum = next(d for d in _stepsim.ops() if d["name"] == "Accum")
    rank = next(p for p in accum["params"] if p["name"] == "rank")
    assert sig.parameters["rank"].default == rank["default"] != ""
    for opt in ("name", "compute_bw", "depth", "outputs", "impl"):
        assert opt in sig.parameters


def test_unknown_parameter_names_the_operator_and_what_it_takes(small_graph):
    x = small_graph.stream("load.out")
    with pytest.raises(TypeError, match=r"Map has no input or parameter 'fun' \(inputs: none; parameters: fn\)"):
        small_graph.Map(x, fun="mul")


def test_unknown_function_and_bad_parameter_values_raise_the_clis_error(small_graph):
    x = small_graph.stream("load.out")
    with pytest.raises(stepsim.Error, match="unknown map function 'mull'"):
        small_graph.Map(x, x, fn="mull")
    with pytest.raises(stepsim.Error, match="rank"):
        small_graph.Accum(x, fn="add", rank="two")


def test_tile_functions_and_presets_come_from_the_simulator():
    names = [f["name"] for f in stepsim.functions("map")]
    assert "matmul" in names and "silu" in names
    matmul = next(f for f in stepsim.functions("map") if f["name"] == "matmul")
    assert matmul["arity"] == 2 and matmul["units"] == "pcu_tile_map"
    assert "step-artifact" in stepsim.presets()
    assert stepsim.preset("step-artifact")
    with pytest.raises(stepsim.Error, match="unknown function family"):
        stepsim.functions("reduce")
