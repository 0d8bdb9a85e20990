"""The package's layers, bottom first: a module may import its own layer and the layers below it,
never one above (testbench/python/test_import_order.py checks every import, function-level ones
included, and that no imports go round in a circle). docs/python.md, "Package layout".

An entry "stepsim.x.*" is the sub-package stepsim.x and everything in it; any other entry is one
module. Every module of the package is in exactly one layer. Data only: no imports here.
"""
LAYERS = (
    ("base", ("stepsim._stepsim", "stepsim._layers")),  # the extension module (C++), this list
    ("pool", ("stepsim.pool.*",)),            # where points run: inline, local processes, Slurm
    ("core", ("stepsim.core.*",)),            # the API over _stepsim: Graph, Result, the layer library
    ("front ends", ("stepsim.torch.*",)),     # the PyTorch front door: nn.Module -> Graph
    ("serving", ("stepsim.serving.*",)),      # whole models over request traces: schedule, tasks, cache
    ("design", ("stepsim.design.*",)),        # design-space exploration: space, search, plots
    ("sweep", ("stepsim.sweep",)),            # grids of runs as a DataFrame, the distributed sweep
    ("top", ("stepsim", "stepsim.__main__", "stepsim.cli")),  # the public names, `python3 -m stepsim`
)

# Circles of imports inside one layer, known and left for now: the PyTorch front door's lowering
# rules call each other (the attention absorbs the KV cache's writes, the cache's reads go
# through the attention's plan, the ops hand batched matmuls to the attention, the tracer finds
# MoE blocks that lower their experts with the lowering); issue 35 moved the front door whole.
# Each is the set of modules of one circle; the test fails on any other circle, and on one of
# these that is gone (so that the list shrinks).
KNOWN_CYCLES = (
    ("stepsim.torch.attention", "stepsim.torch.kvcache", "stepsim.torch.lowering", "stepsim.torch.moe",
     "stepsim.torch.ops", "stepsim.torch.trace"),
)
