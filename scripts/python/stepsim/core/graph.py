"""STeP programs in Python: a Graph of operators whose streams carry symbolic shapes.

    import stepsim
    g = stepsim.Graph("scale")
    g.tensor("x", (64, 256), init="random", seed=1)
    g.output_tensor("y", (64, 256))
    x = g.LinearOffChipLoad(tensor="x", tile=[16, 256])      # [1, 4, 1] of T[16x256:bf16]
    y = g.Map(x, x, fn="mul", compute_bw=1024)
    g.LinearOffChipStore(y, tensor="y", tile=[16, 256])
    r = g.run(mode="functional")                               # r.cycles, r.outputs["y"]

Every operator of the registry is a method of the same name (stepsim/_ops.py says how its
arguments bind). Each call adds one node and types it: a shape mismatch raises ShapeError at that
call, naming both ends and both shapes.
"""
import inspect
import os

import numpy as np

from . import _checks as check
from .. import _stepsim
from ._checks import LIMITS
from ._ops import NODE_OPTIONS, _py_name, op_specs
from ._symbolic import to_sympy
from .result import Analysis, Result

_DTYPES = ("bf16", "fp32", "int32")


class Stream:
    """One output port of a node. Its shape is symbolic: SymPy expressions in the graph's symbols."""

    def __init__(self, graph, cpp):
        self.graph = graph  # keeps the graph (and its builder) alive
        self._cpp = cpp

    @property
    def node(self):
        return self._cpp.node

    @property
    def port(self):
        return self._cpp.port

    @property
    def ref(self):
        """``node.port``, as a graph file names the stream."""
        return self._cpp.ref

    def _type(self):
        return self._cpp.type()

    @property
    def shape(self):
        """The dims, outermost first, as SymPy expressions (a ragged dim: its sum over the outer ones)."""
        return tuple(to_sympy(size) for size, _ in self._type()["dims"])

    @property
    def dim_kinds(self):
        """static, dynamic or ragged, per dim."""
        return tuple(kind for _, kind in self._type()["dims"])

    @property
    def rank(self):
        return len(self._type()["dims"])

    @property
    def elem(self):
        """The element type: {'kind': tile|scalar|selector|buffer|tuple, 'text': ..., and for tiles
        'rows', 'cols' (SymPy) and 'dtype'}."""
        e = dict(self._type()["elem"])
        for k in ("rows", "cols"):
            if k in e:
                e[k] = to_sympy(e[k])
        return e

    @property
    def card(self):
        """Number of elements the stream carries (SymPy)."""
        return to_sympy(self._type()["card"])

    def set_dim(self, dim, expr):
        """Gives dim `dim` (outermost first) the known size `expr` (text or SymPy), for this
        stream and everything built from it. Returns the stream."""
        if not self.rank:
            raise _stepsim.Error("set_dim on '%s': the stream has no dims" % self.ref)
        dim = check.integer("set_dim on '%s': dim" % self.ref, dim, 0, self.rank - 1)
        self._cpp.set_dim(dim, check.expression("set_dim: expr", expr))
        return self

    def __str__(self):
        return str(self._cpp)

    def __repr__(self):
        return "<Stream %s: %s>" % (self.ref, self)


class Graph:
    """A STeP program being built: tensors, literal streams and operator nodes."""

    def __init__(self, name="graph", description="", _builder=None):
        if _builder is None:
            _builder = _stepsim.GraphBuilder(check.name("graph", name), check.text("Graph: description", description))
        self._b = _builder
        self._arrays = {}  # tensors initialised from NumPy arrays
        self._counter = 0

    @property
    def tokens(self):
        """The tokens one run processes (the report's energy per token: energy.pj_per_token); 0 when
        not known. A layer sets it from its `tokens` or `batch`; the torch front door from its
        input's rows."""
        return self._b.tokens()

    @tokens.setter
    def tokens(self, n):
        self._b.set_tokens(check.integer("Graph.tokens", n, 0, check.MAX_U64))

    # ---- construction from elsewhere

    @classmethod
    def from_yaml(cls, text_or_path, params=None):
        """A graph from YAML text or a graph file (the CLI's format), going on from there.
        `params` set graph parameters (a file's `params:`) as the CLI's --set does."""
        params = {k: check.value_text("from_yaml: params[%r]" % k, v)
                  for k, v in check.mapping("from_yaml: params", params).items()}
        text_or_path = check.path("from_yaml: text_or_path", text_or_path)
        looks_like_path = "\n" not in text_or_path and text_or_path.rstrip().endswith((".yaml", ".yml"))
        if looks_like_path and not os.path.exists(text_or_path):
            raise _stepsim.Error("cannot open graph file '%s'" % text_or_path)
        if "\n" not in text_or_path and os.path.exists(text_or_path):
            text = _read_graph_file(text_or_path)
            source, base = text_or_path, os.path.dirname(os.path.abspath(text_or_path))
        else:
            text, source, base = text_or_path, "yaml text", os.getcwd()
        return cls(_builder=_stepsim.GraphBuilder.from_yaml(text, source, base, params))

    @classmethod
    def from_layer(cls, layer, **params):
        """A layer of the library (stepsim.layers lists them) as a Graph one can extend."""
        check.text("from_layer: layer", layer)
        params = {k: check.value_text("layer %s: %s" % (layer, k), v) for k, v in params.items()}
        return cls(_builder=_stepsim.GraphBuilder.from_layer(layer, params))

    # ---- declarations

    def tensor(self, name, shape, dtype="bf16", init="zeros", seed=0, file=None, block=None):
        """Declares a stored tensor [rows x cols]. `init`: zeros, random (with `seed`), file (a
        .npy `file`) or a NumPy array (kept by the Graph and given to every functional run; the
        bf16 convention: values are float32, rounded to bf16 to nearest even when stored)."""
        check.name("tensor", name)
        rows, cols = _shape2(name, shape)
        check.choice("tensor '%s': dtype" % name, dtype, _DTYPES)
        array = None
        if isinstance(init, np.ndarray):
            array, init = init, "zeros"
            _check_init_array(name, array, rows, cols, dtype)
        check.choice("tensor '%s': init" % name, init, ("zeros", "random", "file", "output"))
        seed = check.integer("tensor '%s': seed" % name, seed, 0, LIMITS["max_seed"])
        file = check.path("tensor '%s': file" % name, file, none=True) or ""
        block_rows, block_cols = _shape2(name, block, "block") if block is not None else (0, 0)
        self._b.tensor(name, rows, cols, dtype, init, seed, file, block_rows, block_cols)
        if array is not None:
            self._arrays[name] = array
        return name

    def output_tensor(self, name, shape, dtype="bf16"):
        """Declares a tensor the graph writes (zeros before the run; a functional run returns it)."""
        check.name("tensor", name)
        rows, cols = _shape2(name, shape)
        check.choice("tensor '%s': dtype" % name, dtype, _DTYPES)
        self._b.tensor(name, rows, cols, dtype, "output", 0, "", 0, 0)
        return name

    def literal_stream(self, name, tokens):
        """A named literal stream for Source nodes: tokens as the CLI writes them ("1 2 S1 D")."""
        self._b.literal_stream(check.name("stream", name), check.text("literal_stream: tokens", tokens))
        return name

    def trace_stream(self, name, spec):
        """A named stream from a trace file, e.g. "{trace: 'shared:traces/moe/x.csv', kind: selector, rank: 1}"."""
        check.name("stream", name)
        self._b.trace_stream(name, check.text("trace_stream: spec", spec), os.getcwd())
        return name

    def symbol(self, name, value):
        """Gives graph symbol `name` a known value (an expression)."""
        check.name("symbol", name)
        self._b.symbol(name, check.expression("symbol '%s': value" % name, value))

    def stream(self, ref):
        """The stream ``node.port`` (or ``node`` for its ``out``) of a node already in the graph."""
        node, _, port = check.text("stream: ref", ref).partition(".")
        return Stream(self, self._b.stream(node, port or "out"))

    def forward(self, node, port, type_text):
        """Declares output `port` of node `node`, added later, with its type ("[1, 4] of selector"):
        the back edge of a cycle."""
        check.name("node", node, "forward")
        check.name("port", port, "forward")
        return Stream(self, self._b.forward(node, port, check.text("forward: type_text", type_text)))

    def set_depth(self, node, depth):
        """FIFO depth of node `node`'s outputs (1..2^20 beats)."""
        depth = check.integer("set_depth: depth", depth, 1, LIMITS["max_fifo_depth"])
        self._b.set_depth(check.text("set_depth: node", node), depth)

    def set_compute_bw(self, node, flops_per_cycle):
        """Compute bandwidth of node `node` (1..2^40 FLOPs/cycle)."""
        flops = check.integer("set_compute_bw: flops_per_cycle", flops_per_cycle, 1, LIMITS["max_bandwidth"])
        self._b.set_compute_bw(check.text("set_compute_bw: node", node), flops)

    def set_impl(self, impl):
        """Default implementation of the nodes without their own (approx, hls, rtl)."""
        self._b.set_impl(check.text("set_impl: impl", impl))

    # ---- nodes

    def _add(self, spec, streams, kwargs):
        inputs, params, options = spec.bind(streams, kwargs)
        for port, s in inputs:
            if not isinstance(s, Stream):
                raise TypeError("%s input '%s': expected a Stream, got %r" % (spec.name, port, s))
            if s.graph is not self:
                raise _stepsim.ShapeError("%s input '%s': stream %s is from another graph" % (spec.name, port, s.ref))
        what = "%s: " % spec.name
        name = options.get("name")
        name = check.name("node", name, spec.name) if name is not None else self._fresh_name(spec.name)
        bw = check.integer(what + "compute_bw", options.get("compute_bw"), 1, LIMITS["max_bandwidth"], none=True)
        depth = check.integer(what + "depth", options.get("depth"), 1, LIMITS["max_fifo_depth"], none=True)
        outputs = check.integer(what + "outputs", options.get("outputs"), 1, LIMITS["max_numbered_ports"], none=True)
        impl = check.text(what + "impl", options.get("impl"), none=True)
        outs = self._b.add(name, spec.name, params, [(p, s._cpp) for p, s in inputs], bw, depth, outputs, impl or "")
        wrapped = {port: Stream(self, s) for port, s in outs.items()}
        return spec.shape_result(wrapped, options)

    def _fresh_name(self, op):
        while True:  # (one lookup a name: listing every node here made building quadratic)
            self._counter += 1
            name = "%s_%d" % (op.lower(), self._counter)
            if not self._b.has_node(name):
                return name

    # ---- what the graph holds

    @property
    def name(self):
        return self._b.name

    @property
    def nodes(self):
        """The nodes as dicts: name, op, params, inputs (port -> node.port), impl."""
        return self._b.nodes()

    @property
    def tensors(self):
        return self._b.tensors()

    def to_yaml(self):
        """The graph in the CLI's file format (`stepsim run` reads it)."""
        if self._arrays:
            raise _stepsim.Error("tensor(s) %s are initialised from NumPy arrays: write the graph with save(path), "
                                 "which stores them as .npy files beside it" % ", ".join(sorted(self._arrays)))
        return self._b.to_yaml()

    def save(self, path):
        """Writes the graph file `path`; tensors initialised from arrays go to NAME.npy beside it."""
        path = check.path("save: path", path)
        folder = os.path.dirname(os.path.abspath(path))
        if not self._arrays:
            text = self._b.to_yaml()
        else:
            text = self._with_array_files(folder)
        try:
            with open(path, "w") as f:
                f.write(text)
        except OSError as e:
            raise _stepsim.Error("save: cannot write '%s': %s" % (path, e.strerror)) from None
        return path

    def _with_array_files(self, folder):
        files = {}
        for name, array in sorted(self._arrays.items()):
            is_int = next(t for t in self.tensors if t["name"] == name)["dtype"] == "int32"
            target = _file_under(folder, name + ".npy")
            try:
                np.save(target, np.asarray(array, dtype=np.int32 if is_int else np.float32))
            except OSError as e:
                raise _stepsim.Error("save: cannot write '%s': %s" % (target, e.strerror)) from None
            files[name] = name + ".npy"
        return self._b.to_yaml_with_files(files)

    # ---- analysis and runs

    def analyze(self, model="paper", symbols=None):
        """Shape inference and the symbolic metrics, as `stepsim analyze`: an Analysis."""
        values = {k: check.expression("analyze: symbols[%r]" % k, v)
                  for k, v in check.mapping("analyze: symbols", symbols).items()}
        return Analysis(_stepsim.analyze(self._b, check.text("analyze: model", model), values))

    def run(self, preset="step-artifact", mode="timing", set=None, impl=None, inputs=None, shuffle=0,
            cosim_dir=None, downtile=None, tech=None):
        """Runs the graph as `stepsim run` does and returns a Result.

        preset: a preset name or YAML file; tech: the technology table pricing the energy and area
        (a name, `stepsim techs`, or a YAML file; None: the default, docs/energy.md); set: {key:
        value}, a hardware parameter in its unit (stepsim.presets), tech.SECTION.KEY or NODE.PARAM;
        mode: timing or functional; impl: approx, hls or rtl (co-simulation on the cycle-accurate
        units, docs/cosim.md); inputs: {tensor: array} in functional mode (overrides the tensor's
        init); downtile: None, a tile side T or "auto" (`stepsim run --downtile`: the graph
        rewritten onto T x T blocks first, the nodes the down-tiler cannot rewrite kept at their
        logical tiles; with impl, Result.downtile accounts for every node). Raises SimulationError
        with the CLI's message when the run fails (a deadlock names the blocked operators and channels)."""
        preset = check.path("run: preset", preset)
        tech = check.path("run: tech", tech, none=True)
        mode = check.text("run: mode", mode)  # the values: checked as the CLI checks them
        impl = check.text("run: impl", impl, none=True)
        if downtile is not None and not (downtile == "auto" or (isinstance(downtile, int) and
                                                                not isinstance(downtile, bool))):
            raise TypeError("run: downtile must be None, a tile side (int) or 'auto', not %s" % check.shown(downtile))
        shuffle = check.integer("run: shuffle", shuffle, 0, check.MAX_U64)
        cosim_dir = check.path("run: cosim_dir", cosim_dir, none=True)
        sets = [(k, check.value_text("run: set[%r]" % k, v)) for k, v in check.mapping("run: set", set).items()]
        arrays = dict(self._arrays)
        for k, v in check.mapping("run: inputs", inputs).items():
            arrays[k] = check.array("run: inputs[%r]" % k, v)
        if arrays and mode != "functional":
            arrays = {}  # timing mode carries no values
        extra = {} if tech is None else {"tech": tech}
        raw = _stepsim.run(self._b, preset, sets, mode, impl or "", shuffle, arrays, cosim_dir or "",
                           "" if downtile is None else str(downtile), **extra)
        return Result(raw)

    def __repr__(self):
        return "<Graph %s: %d nodes, %d tensors>" % (self.name, len(self.nodes), len(self.tensors))


def _shape2(name, shape, what="shape"):
    """(rows, cols): two integers 1..2^40 (a float such as 4.7 is refused, not cut to 4)."""
    if not isinstance(shape, (tuple, list)) or len(shape) != 2:
        raise TypeError("tensor '%s': %s must be (rows, cols), got %s" % (name, what, check.shown(shape)))
    return tuple(check.integer("tensor '%s': %s[%d]" % (name, what, k), d, 1, LIMITS["max_side"])
                 for k, d in enumerate(shape))


def _check_init_array(name, array, rows, cols, dtype):
    if array.shape != (rows, cols):
        raise _stepsim.Error("tensor '%s': init array of shape %s for the declared shape (%d, %d)"
                             % (name, array.shape, rows, cols))
    if array.dtype.kind not in ("iu" if dtype == "int32" else "f"):
        raise _stepsim.Error("tensor '%s': init array of dtype %s for a %s tensor" % (name, array.dtype, dtype))
    if dtype == "int32":
        check.int32_array("tensor '%s': init array" % name, array)


def _read_graph_file(path):
    """The text of graph file `path`: a regular file (a folder or a FIFO is refused, not waited on)."""
    if not os.path.isfile(path):
        raise _stepsim.Error("cannot open graph file '%s': not a regular file" % path)
    try:
        with open(path) as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise _stepsim.Error("cannot read graph file '%s': %s" % (path, e)) from None


def _file_under(folder, file_name):
    """folder/file_name, checked to stay in the folder (names are identifiers, so it does)."""
    path = os.path.realpath(os.path.join(folder, file_name))
    if os.path.dirname(path) != os.path.realpath(folder):
        raise _stepsim.Error("save: the file for %s would be written outside %s" % (check.shown(file_name), folder))
    return path


def _make_method(spec):
    def method(self, *streams, **kwargs):
        return self._add(spec, streams, kwargs)

    method.__name__ = method.__qualname__ = spec.name
    method.__doc__ = spec.docstring()
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    for p in spec.inputs:  # the named input ports first (positional or by keyword), then a numbered one
        if not p["numbered"]:
            params.append(inspect.Parameter(_py_name(p["name"]), inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None))
    for p in spec.inputs:
        if p["numbered"]:
            params.append(inspect.Parameter(_py_name(p["name"]), inspect.Parameter.VAR_POSITIONAL))
    for p in spec.params:
        default = inspect.Parameter.empty if p["required"] else p["default"]
        params.append(inspect.Parameter(p["name"], inspect.Parameter.KEYWORD_ONLY, default=default))
    for opt in NODE_OPTIONS:
        params.append(inspect.Parameter(opt, inspect.Parameter.KEYWORD_ONLY, default=None))
    method.__signature__ = inspect.Signature(params)
    return method


OPS = op_specs()
for _spec in OPS.values():
    setattr(Graph, _spec.name, _make_method(_spec))
