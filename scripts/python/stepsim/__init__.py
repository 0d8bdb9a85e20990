"""stepsim: Streaming Tensor Programs on a simulated PCU/PMU dataflow fabric, from Python.

    import stepsim
    g = stepsim.Graph("mine")                      # a STeP program (stepsim.Graph)
    ...                                            # g.LinearOffChipLoad(...), g.Map(...), ...
    r = g.run(preset="step-artifact")              # r.cycles, r.report, r.nodes, r.symbolic
    moe = stepsim.layers.moe(model="qwen")         # the layer library, as Graphs
    df = stepsim.sweep(moe, {"hbm_channels": [8, 16, 32]})
    df = stepsim.dse("space.yaml", out="dse/", workers="local:2")   # design-space exploration
    s = stepsim.serve("tiny-moe", "shared:traces/azure/AzureLLMInferenceTrace_conv.csv", count=8)

stepsim.ops() and stepsim.functions() list the operators and tile functions; errors are
stepsim.Error (a ValueError), stepsim.ShapeError and stepsim.SimulationError, with the messages
of the command line. The package's layers (core, pool, torch, serving, design, sweep): stepsim._layers.
"""
from . import _stepsim
from ._stepsim import Error, ShapeError, SimulationError, have_rtl
from .core import _checks, layers
from .core.graph import OPS, Graph, Stream
from .core.result import Analysis, Result
from .design.explore import dse
from .serving import serve
from .sweep import sweep

__all__ = ["Graph", "Stream", "Result", "Analysis", "Error", "ShapeError", "SimulationError", "layers", "sweep", "dse",
           "serve", "ops", "functions", "presets", "preset", "have_rtl"]


def __getattr__(name):
    # stepsim.torch (the PyTorch front door) imports PyTorch, which takes seconds: only on first use.
    if name == "torch":
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError("module 'stepsim' has no attribute %r" % name)


def ops():
    """The operators' names, in the registry's order (each is a method of Graph)."""
    return list(OPS)


def functions(family="map"):
    """The tile functions of a family (map, accum, flatmap) as dicts: name, arity, description, units."""
    return _stepsim.functions(_checks.text("functions: family", family))


def presets():
    """The built-in hardware presets."""
    return _stepsim.preset_names()


def preset(name):
    """A preset's hardware parameters {key: value text in its unit}."""
    return _stepsim.preset(_checks.path("preset: name", name))
