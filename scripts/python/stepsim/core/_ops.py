"""Graph methods generated from the operator registry (one per operator, by its name).

Nothing here lists operators: each method, its signature text and its docstring come from the
descriptor the simulator exposes (``stepsim._stepsim.ops()``), the one `stepsim ops` prints.

Calling convention, for ``g.OP(*streams, name=None, **kwargs)``:

* positional arguments are the input streams, in the order of the operator's input ports; a
  numbered port (``in0, in1, ...``) takes all the remaining ones but one per required port after
  it (``Reassemble(a, b, sel)``);
* a keyword that names an input port binds that port (``ref=stream``; Python keywords take a
  trailing underscore: ``in_=stream``);
* a keyword that names a parameter sets it (lists and numbers are written as the graph file
  writes them);
* ``name`` (default: ``<op>_<n>``), ``compute_bw`` (FLOPs/cycle), ``depth`` (FIFO depth of the
  outputs), ``outputs`` (how many numbered outputs) and ``impl`` (approx, hls, rtl) set the node.

The result is the output stream, a tuple of streams when the operator has several named outputs
(in port order), or a list when its outputs are numbered.
"""
import keyword

from . import _checks as check
from .. import _stepsim

NODE_OPTIONS = ("name", "compute_bw", "depth", "outputs", "impl")


def _param_text(value, what="parameter"):
    """A value as the graph file writes it (lists nested at most 16 deep; TypeError for others)."""
    return check.value_text(what, value)


def _py_name(port):
    return port + "_" if keyword.iskeyword(port) else port


class OpSpec:
    """One operator's descriptor, as the registry gives it."""

    def __init__(self, d):
        self.name = d["name"]
        self.category = d["category"]
        self.description = d["description"]
        self.timing = d["timing"]
        self.inputs = d["inputs"]
        self.outputs = d["outputs"]
        self.params = d["params"]
        self.functions = d["functions"]
        self.units = d["units"]
        self.param_names = [p["name"] for p in self.params]
        self.port_keywords = {_py_name(p["name"]): p for p in self.inputs if not p["numbered"]}

    def signature(self):
        ins = []
        for p in self.inputs:
            if p["numbered"]:
                ins.append("*" + p["name"])
            else:
                ins.append(p["name"] + ("=None" if p["optional"] else ""))
        params = []
        for p in self.params:
            params.append(p["name"] + ("" if p["required"] else "=" + repr(p["default"])))
        return "%s(%s)" % (self.name, ", ".join(ins + params + ["name=None"]))

    def docstring(self):
        lines = [self.signature(), "", self.description, "", "Inputs:"]
        for p in self.inputs:
            port = p["name"] + ("0, %s1, ..." % p["name"] if p["numbered"] else "")
            lines.append("  %s%s: %s" % (port, " (optional)" if p["optional"] else "", p["doc"]))
        lines.append("Outputs:")
        for p in self.outputs:
            port = p["name"] + ("0, %s1, ..." % p["name"] if p["numbered"] else "")
            lines.append("  %s%s: %s" % (port, " (optional)" if p["optional"] else "", p["doc"]))
        lines.append("Parameters:")
        for p in self.params:
            default = "required" if p["required"] else "default %r" % p["default"]
            lines.append("  %s (%s, %s): %s" % (p["name"], p["type"], default, p["doc"]))
        if not self.params:
            lines.append("  none")
        lines += ["", "Timing: " + self.timing, "Category: " + self.category]
        if self.units:
            lines.append("Cycle-accurate units: " + ", ".join(self.units))
        return "\n".join(lines)

    def bind(self, streams, kwargs):
        """(inputs as [(port, stream)], params as {name: text}, node options) of one call."""
        inputs, params, options = [], {}, {}
        positional = list(streams)
        for n, p in enumerate(self.inputs):
            if p["numbered"]:
                # The numbered port takes the positional streams but one for each required named
                # port after it (Reassemble(a, b, c, sel): in0..in2, then sel).
                after = sum(1 for q in self.inputs[n + 1:] if not q["numbered"] and not q["optional"])
                take = max(0, len(positional) - after)
                inputs += [("%s%d" % (p["name"], k), s) for k, s in enumerate(positional[:take])]
                positional = positional[take:]
            elif positional:
                inputs.append((p["name"], positional.pop(0)))
        if positional:
            raise TypeError("%s takes %d input stream(s) (%s), got %d" % (
                self.name, len(self.inputs), ", ".join(p["name"] for p in self.inputs), len(streams)))
        bound = {port for port, _ in inputs}
        for key, value in kwargs.items():
            if key in NODE_OPTIONS:
                options[key] = value
            elif key in self.port_keywords:
                port = self.port_keywords[key]["name"]
                if port in bound:
                    raise TypeError("%s: input '%s' given twice" % (self.name, port))
                if value is not None:
                    inputs.append((port, value))
            elif key in self.param_names:
                if value is not None:
                    params[key] = _param_text(value, "%s: %s" % (self.name, key))
            else:
                raise TypeError("%s has no input or parameter '%s' (inputs: %s; parameters: %s)" % (
                    self.name, key, ", ".join(self.port_keywords) or "none",
                    ", ".join(self.param_names) or "none"))
        return inputs, params, options

    def shape_result(self, outs, options):
        """The call's return value from the node's outputs {port: stream}."""
        if any(p["numbered"] for p in self.outputs):
            base = next(p["name"] for p in self.outputs if p["numbered"])
            numbered = sorted((int(k[len(base):]), s) for k, s in outs.items()
                              if k.startswith(base) and k[len(base):].isdigit())
            named = [outs[p["name"]] for p in self.outputs if not p["numbered"] and p["name"] in outs]
            streams = [s for _, s in numbered]
            return streams if not named else (streams, *named)
        ports = [p["name"] for p in self.outputs if p["name"] in outs]
        if len(ports) == 1:
            return outs[ports[0]]
        return tuple(outs[p] for p in ports)


def op_specs():
    """Every operator's OpSpec, by name."""
    return {d["name"]: OpSpec(d) for d in _stepsim.ops()}
