"""A design space (SPACE.yaml, or the same as a dict): the program, the searched parameters, the
objectives, the constraints and the search. docs/dse.md describes every key (a program is a
layer, a graph file, a builder function, or a PyTorch module: {torch: FILE.py:FACTORY},
stepsim.design.torch_program); an example:

    program: {layer: moe, params: {model: qwen}}
    preset: step-artifact
    set: {onchip_requirement_model: artifact}
    parameters:
      tile_n: [0, 8, 16, 32, 64]                     # a list: one of these values
      hbm.channels: {low: 8, high: 32, step: 8}       # a range (integers when low and high are)
      compute_bw: {low: 1024, high: 8192, log: true}
    objectives: {cycles: min, onchip_bytes: min}
    constraints: {compute_units: {max: 1024}}         # and always: the run fits the fabric
    search: {method: nsga2, trials: 300, seed: 1, batch: 20}

Every mistake is an Error naming the key: unknown or duplicate keys, empty lists, bad ranges,
parameters that are neither the program's nor the hardware's, unknown metrics.
"""
import math
import os

import yaml

from .. import _stepsim
from ..core._checks import argument_kinds
from ..core.graph import OPS
from . import torch_program
from .evaluate import SERVE_PARAMS, build, load_builder, program_keys, program_metrics

TOP_KEYS = {"name", "program", "preset", "tech", "mode", "set", "parameters", "objectives", "constraints", "search"}
TECH_PREFIX = "tech."  # set/parameters: tech.SECTION.KEY, an entry of the technology table
SEARCH_KEYS = {"method", "trials", "seed", "batch"}
METHODS = ("nsga2", "tpe", "grid", "random")
MAX_TRIALS = 1_000_000


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML that refuses a key given twice (PyYAML keeps the last one silently)."""


def _mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        line = key_node.start_mark.line + 1
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise _stepsim.Error("%s: line %d: a key must be a word or a number, not %s"
                                 % (loader.where, line, type(key).__name__))
        if key in seen:
            raise _stepsim.Error("%s: duplicate key '%s' (line %d)" % (loader.where, key, line))
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


MAX_NAME = 100  # characters of a study's name
MAX_BYTES = 1 << 20  # a space file (a real one is a few hundred bytes)
MAX_DEPTH = 32  # nesting of a space's YAML (a real space is 4 deep)
MAX_GRID = MAX_TRIALS  # points of a grid (it is enumerated lazily, but each point is a trial)


def load(source):
    """A Space from a file path, YAML text or a dict. A torch program's file is relative to the
    space file (to the current directory for text or a dict)."""
    if isinstance(source, dict):
        _check_plain(source, "space")
        return Space(source)
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise _stepsim.Error("space: give a file path, YAML text or a dict, not %s" % type(source).__name__)
    text, where, base = source, "space", None
    if "\n" not in source and not source.lstrip().startswith("{"):
        text, where, base = _read(source), source, os.path.dirname(os.path.abspath(source))
    try:
        _check_events(text, where)
        loader = _UniqueKeyLoader(text)
        loader.where = where
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as e:  # one line: where, and what PyYAML found there
        mark, problem = getattr(e, "problem_mark", None), getattr(e, "problem", None)
        at = " (line %d, column %d)" % (mark.line + 1, mark.column + 1) if mark is not None else ""
        raise _stepsim.Error("%s: not valid YAML%s: %s" % (where, at, problem or str(e).replace("\n", " "))) from None
    if not isinstance(data, dict):
        raise _stepsim.Error("space: expected a mapping with program, parameters, objectives, search")
    return Space(data, base)


def _read(path):
    """A space file's text: a regular file (a FIFO would block for ever) of at most MAX_BYTES."""
    try:
        if os.path.exists(path) and not os.path.isfile(path):
            raise _stepsim.Error("space: %s is not a regular file" % path)
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise _stepsim.Error("space: cannot read %s: %s" % (path, e.strerror)) from None
    if len(data) > MAX_BYTES:
        raise _stepsim.Error("space: %s is larger than %d bytes" % (path, MAX_BYTES))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _stepsim.Error("space: %s is not UTF-8 text (byte %d)" % (path, e.start)) from None


def _check_events(text, where):
    """Refuses aliases and anchors (a recursive alias or "billion laughs" would be expanded by
    every reader of the space) and nesting deeper than MAX_DEPTH, from PyYAML's event stream:
    nothing is constructed before the whole text has passed."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _stepsim.Error("%s: line %d: YAML aliases and anchors (&, *) are not allowed in a space file"
                                 % (where, line))
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise _stepsim.Error("%s: line %d: nested more than %d levels deep" % (where, line, MAX_DEPTH))
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _check_plain(value, where, depth=0, inside=()):
    """A space given as a dict: the same bound on nesting, and no container inside itself."""
    if not isinstance(value, (dict, list, tuple)):
        return
    if id(value) in inside:
        raise _stepsim.Error("%s: a value contains itself" % where)
    if depth >= MAX_DEPTH:
        raise _stepsim.Error("%s: nested more than %d levels deep" % (where, MAX_DEPTH))
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for k, v in items:
        _check_plain(v, "%s.%s" % (where, k), depth + 1, inside + (id(value),))


INT64 = 2**63


def _number(v):
    """A finite number within 64 bits (a bool is not a number here)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return -INT64 <= v < INT64 if isinstance(v, int) else math.isfinite(v)


class Parameter:
    """One searched parameter: a list of choices, or an int/float range (optionally log or stepped)."""

    def __init__(self, name, spec):
        self.name = name
        self.choices = None
        if isinstance(spec, list):
            if not spec:
                raise _stepsim.Error("space: parameter '%s' has an empty list" % name)
            if len(set(map(repr, spec))) != len(spec):
                raise _stepsim.Error("space: parameter '%s' lists a value twice" % name)
            for v in spec:
                if not (isinstance(v, (bool, str)) or _number(v)):
                    raise _stepsim.Error("space: parameter '%s': value %r is not a finite number (within 64 bits) "
                                         "or a word" % (name, v))
            self.choices = list(spec)
            return
        if not isinstance(spec, dict):
            raise _stepsim.Error("space: parameter '%s': give a list of values or {low, high[, step][, log]}" % name)
        unknown = set(spec) - {"low", "high", "step", "log"}
        if unknown:
            raise _stepsim.Error("space: parameter '%s': unknown key '%s' (low, high, step, log)"
                                 % (name, sorted(unknown, key=str)[0]))
        if "low" not in spec or "high" not in spec:
            raise _stepsim.Error("space: parameter '%s': a range needs low and high" % name)
        self.low, self.high = spec["low"], spec["high"]
        self.step, self.log = spec.get("step"), spec.get("log", False)
        if not isinstance(self.log, bool):
            raise _stepsim.Error("space: parameter '%s': log must be true or false, not %r" % (name, self.log))
        for k, v in (("low", self.low), ("high", self.high), ("step", self.step)):
            if (v is not None or k != "step") and not _number(v):
                raise _stepsim.Error("space: parameter '%s': %s must be a finite number (within 64 bits), not %r"
                                     % (name, k, v))
        if self.low > self.high:
            raise _stepsim.Error("space: parameter '%s': low %s > high %s" % (name, self.low, self.high))
        if self.log and self.low <= 0:
            raise _stepsim.Error("space: parameter '%s': a log range needs low > 0" % name)
        if self.step is not None and (self.step <= 0 or self.log):
            raise _stepsim.Error("space: parameter '%s': step must be > 0 and not with log" % name)
        self.integer = all(isinstance(v, int) for v in (self.low, self.high, self.step or 1))

    def values(self):
        """What the parameter can take, for checking: every choice, or a range's bounds."""
        return self.choices if self.choices is not None else [self.low, self.high]

    def distribution(self):
        import optuna.distributions as d  # here, not at the top: Optuna is slow to import

        if self.choices is not None:
            return d.CategoricalDistribution(self.choices)
        if self.integer:
            return d.IntDistribution(self.low, self.high, log=self.log, step=self.step or 1)
        return d.FloatDistribution(self.low, self.high, log=self.log, step=self.step)

    def grid_size(self):
        """The number of grid values, counted without listing them (a range may hold 10^12)."""
        if self.choices is not None:
            return len(self.choices)
        if self.step is None and not self.integer:
            raise _stepsim.Error("space: parameter '%s': a grid needs a list or a range with a step" % self.name)
        if self.integer:
            return (self.high - self.low) // (self.step or 1) + 1
        n = (self.high - self.low) / self.step
        # Beyond MAX_GRID the exact count does not matter (the grid is refused); it may be inf.
        return int(math.floor(n + 1e-9)) + 1 if n <= MAX_GRID else math.inf

    def grid_value(self, i):
        return self.choices[i] if self.choices is not None else self.low + i * (self.step or 1)


PROGRAM_KINDS = ("layer", "graph", "builder", "torch", "serve")


class Space:
    def __init__(self, data, base=None):
        """`base`: the folder a torch program's file is relative to (the space file's; default
        the current directory)."""
        self.base = os.path.abspath(base or os.curdir)
        unknown = set(data) - TOP_KEYS
        if unknown:
            raise _stepsim.Error("space: unknown key '%s' (known: %s)"
                                 % (sorted(unknown, key=str)[0], ", ".join(sorted(TOP_KEYS))))
        self.data = data
        self.name = self._name(data.get("name", "dse"))
        self.preset = str(data.get("preset", "step-artifact"))
        if self.preset not in _stepsim.preset_names():
            raise _stepsim.Error("space: unknown preset '%s' (%s)" % (self.preset, ", ".join(_stepsim.preset_names())))
        self.hardware = {k: _hardware_kind(v) for k, v in _stepsim.preset(self.preset).items()}
        self.hardware.update({TECH_PREFIX + k: "nonnegative" for k in _stepsim.tech_entries()})
        self.tech = self._tech(data.get("tech", _stepsim.default_technology()))
        self.program = self._program(data.get("program"))
        self.metrics = program_metrics(self.program)  # name -> unit of what its runs measure
        self.mode = data.get("mode", "timing")
        if self.mode not in ("timing", "functional"):
            raise _stepsim.Error("space: mode must be timing or functional, not %r" % (self.mode,))
        self.settings = self._settings(self._mapping("set", data.get("set", {})))
        self.parameters = self._parameters(data.get("parameters"))
        self._check_torch()
        self._check_node_params()
        self.objectives = self._objectives(data.get("objectives"))
        self.constraints = self._constraints(data.get("constraints", {}))
        self._search(self._mapping("search", data.get("search", {})))

    def _tech(self, tech):
        """The technology table pricing energy and area: a built-in name or a YAML file, read once
        here so that a file that is no table fails before any trial runs."""
        tech = str(tech)
        if tech not in _stepsim.technology_names() and not os.path.isfile(os.path.join(self.base, tech)):
            raise _stepsim.Error("space: unknown tech '%s' (a technology file, or one of: %s)"
                                 % (tech, ", ".join(_stepsim.technology_names())))
        tech = tech if tech in _stepsim.technology_names() else os.path.join(self.base, tech)
        try:
            _stepsim.technology(tech)
        except _stepsim.Error as e:
            raise _stepsim.Error("space: tech: %s" % e) from None
        return tech

    def _name(self, name):
        """The study's name: a short line (plots carry it as their title; matplotlib fails on a
        very long one after every trial has run)."""
        if isinstance(name, bool) or not isinstance(name, (str, int)):
            raise _stepsim.Error("space: name must be a word, not %r" % (name,))
        name = str(name)
        if not 1 <= len(name) <= MAX_NAME or not name.isprintable():
            raise _stepsim.Error("space: name must be 1..%d printable characters, not %r"
                                 % (MAX_NAME, name if len(name) <= 40 else name[:40] + "..."))
        return name

    def _mapping(self, what, value):
        if not isinstance(value, dict):
            raise _stepsim.Error("space: '%s' must be a mapping" % what)
        return {str(k): v for k, v in value.items()}

    def _program(self, p):
        if not isinstance(p, dict):
            raise _stepsim.Error("space: 'program' must be a mapping with one of %s" % ", ".join(PROGRAM_KINDS))
        unknown = set(p) - set(PROGRAM_KINDS) - {"params"}
        if unknown:
            raise _stepsim.Error("space: program: unknown key '%s' (%s, params)"
                                 % (sorted(unknown, key=str)[0], ", ".join(PROGRAM_KINDS)))
        kinds = [k for k in PROGRAM_KINDS if k in p]
        if len(kinds) != 1:
            raise _stepsim.Error("space: 'program' needs exactly one of %s" % ", ".join(PROGRAM_KINDS))
        if not isinstance(p[kinds[0]], str) or not p[kinds[0]]:
            raise _stepsim.Error("space: program.%s must be a name or a path, not %r" % (kinds[0], p[kinds[0]]))
        program = {kinds[0]: p[kinds[0]], "params": self._mapping("program.params", p.get("params", {}))}
        if "graph" in program:  # the workers may start elsewhere (a Slurm node's directory)
            program["graph"] = os.path.abspath(program["graph"])
            if os.path.exists(program["graph"]) and not os.path.isfile(program["graph"]):
                raise _stepsim.Error("space: program.graph %s is not a regular file" % program["graph"])
        if "builder" in program and ":" in program["builder"]:
            path, _, name = program["builder"].rpartition(":")
            program["builder"] = os.path.abspath(path) + ":" + name
        if "serve" in program:  # a model file and the requests, relative to the space file
            program["serve"] = self._beside(program["serve"], str(program["serve"]).endswith((".yaml", ".yml")))
            if "requests" in program["params"]:
                program["params"]["requests"] = self._beside(program["params"]["requests"], True)
        if "torch" in program:  # FILE.py:FACTORY, the file relative to the space file
            try:
                path, name = torch_program.split_spec(program["torch"])
            except _stepsim.Error as e:
                raise _stepsim.Error("space: %s" % e) from None
            program["torch"] = os.path.abspath(os.path.join(self.base, os.path.expanduser(path))) + ":" + name
        self._program_kinds = _program_kinds(program)
        self._program_keys = set(self._program_kinds)
        for k, v in program["params"].items():
            if k not in self._program_keys:
                raise _stepsim.Error("space: program.params: '%s' is not a parameter of %s (%s)"
                                     % (k, program[kinds[0]], ", ".join(sorted(self._program_keys))))
            self._check_value("program.params.%s" % k, v, self._program_kinds[k])
        return program

    def _beside(self, path, is_path):
        """A path the space file gives, relative to it (shared:... and names stay as they are)."""
        path = str(path)
        if not is_path or path.startswith("shared:"):
            return path
        return os.path.abspath(os.path.join(self.base, os.path.expanduser(path)))

    def _settings(self, settings):
        """`set:` (fixed for every point): a hardware parameter, NODE.PARAM, or a parameter of the
        program, which joins program.params (a graph file's params: are set when it is read)."""
        for name, value in settings.items():
            where = "set.%s" % name
            if name in self._program_keys:
                if name in self.program["params"]:
                    raise _stepsim.Error("space: '%s' is given both in program.params and in set" % name)
                self._check_value(where, value, self._program_kinds[name])
                self.program["params"][name] = value
            else:
                self._check_setting(where, name, [value])
        return {k: v for k, v in settings.items() if k not in self._program_keys}

    def _check_setting(self, where, name, values):
        """A name that is not the program's: a hardware parameter with values of its kind, or
        NODE.PARAM (checked against the program's graph once every parameter is known)."""
        if name in self.hardware:
            for v in values:
                self._check_value(where, v, self.hardware[name])
            return
        if name.startswith(TECH_PREFIX):
            raise _stepsim.Error("space: %s: unknown technology entry '%s' (known: %s)"
                                 % (where, name[len(TECH_PREFIX):], ", ".join(sorted(_stepsim.tech_entries()))))
        if "." not in name:
            raise _stepsim.Error("space: %s: '%s' is neither a parameter of the program (%s) nor a hardware "
                                 "parameter (stepsim presets) nor NODE.PARAM%s"
                                 % (where, name, ", ".join(sorted(self._program_keys)),
                                    _did_you_mean(name, self.hardware)))
        for v in values:
            self._check_value(where, v, "scalar")

    def _check_value(self, where, value, kind):
        problem = _value_problem(value, kind)
        if problem:
            raise _stepsim.Error("space: %s: %r is not %s" % (where, value, problem))

    def _parameters(self, params):
        if not isinstance(params, dict) or not params:
            raise _stepsim.Error("space: 'parameters' must map at least one parameter to its values")
        out = []
        for name, spec in params.items():
            name = str(name)
            own = name in self._program_keys
            if own and name in self.program["params"]:
                raise _stepsim.Error("space: '%s' is both fixed in program.params and searched" % name)
            if name in self.settings:
                raise _stepsim.Error("space: '%s' is both fixed in set and searched" % name)
            if not own and name not in self.hardware and "." not in name:
                self._check_setting("parameters.%s" % name, name, [])  # the error naming what it could be
            p = Parameter(name, spec)
            kind = self._program_kinds[name] if own else self.hardware.get(name, "scalar")
            for v in p.values():
                self._check_value("parameters.%s" % name, v, kind)
            out.append(p)
        return out

    def _check_torch(self):
        """A torch program: every schedule value is one the lowering takes (its own check), and
        the factory is called once, at the fixed parameters and the first value of each searched
        one, to see it return a module and its inputs. A mistake there would fail every trial."""
        if "torch" not in self.program:
            return
        keys = torch_program.schedule_keys()
        given = self._mapping("set", self.data.get("set", {}))
        fixed = [("%s.%s" % ("set" if k in given else "program.params", k), k, [v])
                 for k, v in self.program["params"].items()]
        searched = [("parameters.%s" % p.name, p.name, p.values()) for p in self.parameters]
        for where, name, values in fixed + searched:
            if name in keys:
                for v in values:
                    problem = torch_program.check_schedule_value(name, v)
                    if problem:
                        raise _stepsim.Error("space: %s: %r: the lowering refuses it (%s)" % (where, v, problem))
        args = {k: v for k, v in self.program["params"].items() if k not in keys}
        args.update({p.name: p.values()[0] for p in self.parameters
                     if p.name in self._program_keys and p.name not in keys})
        try:
            torch_program.call_factory(self.program["torch"], args)
        except _stepsim.Error as e:
            raise _stepsim.Error("space: program.torch: %s" % e) from None

    def _check_node_params(self):
        """NODE.PARAM names (in set or searched) name a node of the program's graph and one of its
        operator's parameters: a typo such as hbm.channel would otherwise fail every trial. The
        graph is built once, at the first value of each searched program parameter."""
        dotted = [n for n in list(self.settings) + [p.name for p in self.parameters]
                  if n not in self.hardware and n not in self._program_keys]
        if not dotted:
            return
        probe = {p.name: p.values()[0] for p in self.parameters if p.name in self._program_keys}
        try:
            graph, _ = build(self.program, probe)
            nodes = {n["name"]: n["op"] for n in graph.nodes}
        except Exception:  # the program refuses this point: its trials will say why
            return
        for name in dotted:
            node, _, param = name.partition(".")
            if node not in nodes:
                raise _stepsim.Error("space: '%s' is not a hardware parameter%s, and the program has no node '%s' "
                                     "for NODE.PARAM" % (name, _did_you_mean(name, self.hardware), node))
            op = OPS.get(nodes[node])
            names = op.param_names if op is not None else []
            if param not in names:
                raise _stepsim.Error("space: '%s': node '%s' (%s) has no parameter '%s' (%s)"
                                     % (name, node, nodes[node], param, ", ".join(names) or "none"))

    def _objectives(self, objectives):
        if not isinstance(objectives, dict) or not objectives:
            raise _stepsim.Error("space: 'objectives' must map one or more metrics to min or max (metrics: %s)"
                                 % ", ".join(self.metrics))
        objectives = {str(k): v for k, v in objectives.items()}
        for name, direction in objectives.items():
            if not self._measurable(name):
                raise _stepsim.Error("space: unknown objective '%s' (metrics: %s; or a numeric searched parameter)"
                                     % (name, ", ".join(self.metrics)))
            if direction not in ("min", "max"):
                raise _stepsim.Error("space: objective '%s': min or max, not %r" % (name, direction))
        return dict(objectives)

    def _measurable(self, name):
        """A metric of the run, or a numeric searched parameter (the hardware's cost, say
        hbm.channels: min, which no run measures)."""
        if name in self.metrics:
            return True
        p = next((p for p in self.parameters if p.name == name), None)
        return p is not None and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                     for v in (p.choices if p.choices is not None else [p.low, p.high]))

    def value(self, name, metrics, params):
        """An objective's or constraint's value at a point: its metric, or the parameter's value."""
        return metrics[name] if name in self.metrics else params[name]

    def _constraints(self, constraints):
        out = {}
        for name, bound in self._mapping("constraints", constraints).items():
            if not self._measurable(name):
                raise _stepsim.Error("space: unknown constraint metric '%s' (metrics: %s; or a numeric searched "
                                     "parameter)" % (name, ", ".join(self.metrics)))
            if not isinstance(bound, dict) or not bound or set(bound) - {"min", "max"}:
                raise _stepsim.Error("space: constraint '%s': give {max: V} and/or {min: V}" % name)
            for k, v in bound.items():
                if not _number(v):
                    raise _stepsim.Error("space: constraint '%s': %s must be a finite number, not %r" % (name, k, v))
            out[name] = dict(bound)
        return out

    def _search(self, s):
        unknown = set(s) - SEARCH_KEYS
        if unknown:
            raise _stepsim.Error("space: search: unknown key '%s' (%s)"
                                 % (sorted(unknown)[0], ", ".join(sorted(SEARCH_KEYS))))
        default = "nsga2" if len(self.objectives) > 1 else "tpe"
        self.method = s.get("method", default)
        if self.method not in METHODS:
            raise _stepsim.Error("space: search.method must be one of %s, not %r" % (", ".join(METHODS), self.method))
        if self.method == "tpe" and len(self.objectives) > 1:
            raise _stepsim.Error("space: TPE searches one objective; use nsga2 for %d" % len(self.objectives))
        self.seed = self._int(s, "seed", 1, 0, 2**31 - 1)
        self.batch = self._int(s, "batch", 20, 2 if self.method == "nsga2" else 1, 10_000)
        if self.method == "grid":
            size = self.grid_size()
            self.trials = min(self._int(s, "trials", min(size, MAX_TRIALS), 1, MAX_TRIALS), size)
        else:
            self.trials = self._int(s, "trials", 100, 1, MAX_TRIALS)

    def _int(self, s, key, default, low, high):
        v = s.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            raise _stepsim.Error("space: search.%s must be an integer in %d..%d, not %r" % (key, low, high, v))
        return v

    def grid_size(self):
        """The number of grid points; a grid of more than MAX_GRID is refused (each is a trial)."""
        size = 1
        for p in self.parameters:
            size *= p.grid_size()
            if size > MAX_GRID:
                raise _stepsim.Error("space: the grid has more than %d points (%s); the limit is %d: give fewer "
                                     "values or a larger step, or search it (method nsga2, tpe or random)"
                                     % (MAX_GRID, " x ".join(_count(q.grid_size()) for q in self.parameters), MAX_GRID))
        return size

    def grid_point(self, i):
        """Point i of the grid in product order (the last parameter varies fastest), without
        listing the others."""
        values = {}
        for p in reversed(self.parameters):
            i, digit = divmod(i, p.grid_size())
            values[p.name] = p.grid_value(digit)
        return {p.name: values[p.name] for p in self.parameters}

    def job(self):
        """What a worker needs to evaluate a point (design.evaluate.evaluate_point)."""
        return {"program": self.program, "preset": self.preset, "tech": self.tech, "mode": self.mode,
                "set": self.settings}

    def violations(self, m, params):
        """Constraint values at a point (<= 0 is satisfied): fitting the fabric, then each bound."""
        out = [0.0 if m["fits"] else 1.0]
        for name, bound in self.constraints.items():
            v = self.value(name, m, params)
            if "max" in bound:
                out.append(float(v - bound["max"]))
            if "min" in bound:
                out.append(float(bound["min"] - v))
        return out


def _count(n):
    return "more than %d" % MAX_GRID if n == math.inf else str(n)


def _hardware_kind(text):
    """The kind of a hardware parameter from its value in the preset: bool, int (the preset
    writes a real-valued one with a point: clock_ghz 1.000000), number or word."""
    if text in ("true", "false"):
        return "bool"
    if _is_int(text):
        return "int"
    return "number" if _is_number(text) else "word"


def _program_kinds(program):
    """{name: kind} of the program's own parameters (a layer's declared types, a builder's
    defaults, a torch factory's defaults and the lowering's schedule keys); a program that cannot
    be loaded is an error naming it."""
    if "torch" in program:
        try:
            return torch_program.program_kinds(program["torch"])
        except _stepsim.Error as e:
            raise _stepsim.Error("space: %s" % e) from None
    try:
        keys = program_keys(program)
    except _stepsim.Error as e:
        raise _stepsim.Error("space: program: %s" % e) from None
    except Exception as e:  # a builder file that does not import: its own error, not a traceback
        raise _stepsim.Error("space: program.builder '%s': cannot load it: %s"
                             % (program["builder"], _describe(e))) from None
    if "layer" in program:
        layer = next(d for d in _stepsim.layers() if d["name"] == program["layer"])
        return {p["name"]: p["type"] for p in layer["params"]}
    if "builder" in program:
        return argument_kinds(load_builder(program["builder"]))
    if "serve" in program:
        return dict(SERVE_PARAMS)
    return {k: "scalar" for k in keys}


def _describe(e):
    if isinstance(e, SyntaxError):
        return "%s: %s (%s, line %s)" % (type(e).__name__, e.msg, e.filename, e.lineno)
    return "%s: %s" % (type(e).__name__, e)


def _value_problem(v, kind):
    """Why value v cannot be a parameter of this kind (None when it can): the mistakes that would
    fail every trial, caught before the first."""
    scalar = isinstance(v, (bool, str)) or _number(v)
    if kind == "int":
        ok = (_number(v) and isinstance(v, int)) or (isinstance(v, str) and _is_int(v))
        return None if ok else "an integer (within 64 bits)"
    if kind == "int list":
        ok = isinstance(v, str) or (isinstance(v, list) and all(_number(x) and isinstance(x, int) for x in v))
        return None if ok else "a list of integers"
    if kind == "number":
        ok = _number(v) or (isinstance(v, str) and _is_number(v))
        return None if ok else "a finite number"
    if kind == "nonnegative":  # a technology entry (pJ, mm2, mW)
        ok = (_number(v) or (isinstance(v, str) and _is_number(v))) and float(v) >= 0
        return None if ok else "a finite number >= 0"
    if kind == "bool":
        return None if isinstance(v, bool) or v in ("true", "false") else "true or false"
    if kind in ("word", "string", "scalar"):
        return None if scalar else "a number or a word"
    return None  # "any": a builder argument without a default takes what it is given


def _is_int(text):
    try:
        return -INT64 <= int(text, 10) < INT64
    except ValueError:
        return False


def _is_number(text):
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _did_you_mean(name, known):
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
    return " (did you mean %s?)" % close[0] if close else ""
