"""The layer library as functions: ``stepsim.layers.moe(model="qwen", tile_n=0)`` returns a Graph
one can extend. One function per layer of the registry (`stepsim layers`), generated with its
parameters in the docstring; ``stepsim.layers.names()`` lists them."""
import sys

from .. import _stepsim
from .graph import Graph

_LAYERS = {d["name"]: d for d in _stepsim.layers()}


def names():
    return sorted(_LAYERS)


def build(layer, **params):
    """Layer `layer` with its parameters (text or numbers) as a Graph."""
    return Graph.from_layer(layer, **params)


def _make(d):
    def layer(**params):
        return build(d["name"], **params)

    layer.__name__ = layer.__qualname__ = d["name"]
    lines = [d["description"], "", "Parameters:"]
    for p in d["params"]:
        default = "required" if p["required"] else "default %r" % p["default"]
        lines.append("  %s (%s, %s): %s" % (p["name"], p["type"], default, p["doc"]))
    layer.__doc__ = "\n".join(lines)
    return layer


for _name, _d in _LAYERS.items():
    setattr(sys.modules[__name__], _name, _make(_d))
