"""A design space (SPACE.yaml, or the same as a dict): the program, the searched parameters, the
objectives, the constraints and the search. docs/dse.md describes every key; an example:

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
import itertools
import math
import os

import yaml

from . import _stepsim
from .evaluate import METRICS, program_keys

TOP_KEYS = {"name", "program", "preset", "mode", "set", "parameters", "objectives", "constraints", "search"}
SEARCH_KEYS = {"method", "trials", "seed", "batch"}
METHODS = ("nsga2", "tpe", "grid", "random")
MAX_TRIALS = 1_000_000


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML that refuses a key given twice (PyYAML keeps the last one silently)."""


def _mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise _stepsim.Error("space: duplicate key '%s' (line %d)" % (key, key_node.start_mark.line + 1))
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load(source):
    """A Space from a file path, YAML text or a dict."""
    if isinstance(source, dict):
        return Space(source)
    text = source
    if "\n" not in source and not source.lstrip().startswith("{"):
        try:
            with open(source) as f:
                text = f.read()
        except OSError as e:
            raise _stepsim.Error("space: cannot read %s: %s" % (source, e.strerror)) from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as e:
        raise _stepsim.Error("space: not valid YAML: %s" % e) from None
    if not isinstance(data, dict):
        raise _stepsim.Error("space: expected a mapping with program, parameters, objectives, search")
    return Space(data)


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
                if not isinstance(v, (bool, int, float, str)):
                    raise _stepsim.Error("space: parameter '%s': value %r is not a number or a word" % (name, v))
            self.choices = list(spec)
            return
        if not isinstance(spec, dict):
            raise _stepsim.Error("space: parameter '%s': give a list of values or {low, high[, step][, log]}" % name)
        unknown = set(spec) - {"low", "high", "step", "log"}
        if unknown:
            raise _stepsim.Error("space: parameter '%s': unknown key '%s' (low, high, step, log)" % (name, sorted(unknown)[0]))
        if "low" not in spec or "high" not in spec:
            raise _stepsim.Error("space: parameter '%s': a range needs low and high" % name)
        self.low, self.high = spec["low"], spec["high"]
        self.step, self.log = spec.get("step"), bool(spec.get("log", False))
        for k, v in (("low", self.low), ("high", self.high), ("step", self.step)):
            if (v is not None or k != "step") and (isinstance(v, bool) or not isinstance(v, (int, float))
                                                   or not math.isfinite(v)):
                raise _stepsim.Error("space: parameter '%s': %s must be a finite number, not %r" % (name, k, v))
        if self.low > self.high:
            raise _stepsim.Error("space: parameter '%s': low %s > high %s" % (name, self.low, self.high))
        if self.log and self.low <= 0:
            raise _stepsim.Error("space: parameter '%s': a log range needs low > 0" % name)
        if self.step is not None and (self.step <= 0 or self.log):
            raise _stepsim.Error("space: parameter '%s': step must be > 0 and not with log" % name)
        self.integer = all(isinstance(v, int) for v in (self.low, self.high, self.step or 1))

    def distribution(self):
        import optuna.distributions as d

        if self.choices is not None:
            return d.CategoricalDistribution(self.choices)
        if self.integer:
            return d.IntDistribution(self.low, self.high, log=self.log, step=self.step or 1)
        return d.FloatDistribution(self.low, self.high, log=self.log, step=self.step)

    def grid_values(self):
        if self.choices is not None:
            return self.choices
        if self.step is None and not self.integer:
            raise _stepsim.Error("space: parameter '%s': a grid needs a list or a range with a step" % self.name)
        step = self.step or 1
        n = int(math.floor((self.high - self.low) / step + 1e-9)) + 1
        return [self.low + i * step for i in range(n)]


class Space:
    def __init__(self, data):
        unknown = set(data) - TOP_KEYS
        if unknown:
            raise _stepsim.Error("space: unknown key '%s' (known: %s)" % (sorted(unknown)[0], ", ".join(sorted(TOP_KEYS))))
        self.data = data
        self.name = str(data.get("name", "dse"))
        self.program = self._program(data.get("program"))
        self.preset = str(data.get("preset", "step-artifact"))
        if self.preset not in _stepsim.preset_names():
            raise _stepsim.Error("space: unknown preset '%s' (%s)" % (self.preset, ", ".join(_stepsim.preset_names())))
        self.mode = data.get("mode", "timing")
        if self.mode not in ("timing", "functional"):
            raise _stepsim.Error("space: mode must be timing or functional, not %r" % self.mode)
        self.settings = self._mapping("set", data.get("set", {}))
        self.parameters = self._parameters(data.get("parameters"))
        self.objectives = self._objectives(data.get("objectives"))
        self.constraints = self._constraints(data.get("constraints", {}))
        self._search(self._mapping("search", data.get("search", {})))

    def _mapping(self, what, value):
        if not isinstance(value, dict):
            raise _stepsim.Error("space: '%s' must be a mapping" % what)
        return dict(value)

    def _program(self, p):
        if not isinstance(p, dict):
            raise _stepsim.Error("space: 'program' must be a mapping with one of layer, graph, builder")
        kinds = [k for k in ("layer", "graph", "builder") if k in p]
        if len(kinds) != 1:
            raise _stepsim.Error("space: 'program' needs exactly one of layer, graph, builder")
        unknown = set(p) - {"layer", "graph", "builder", "params"}
        if unknown:
            raise _stepsim.Error("space: program: unknown key '%s' (layer, graph, builder, params)" % sorted(unknown)[0])
        program = {kinds[0]: str(p[kinds[0]]), "params": self._mapping("program.params", p.get("params", {}))}
        if "graph" in program:  # the workers may start elsewhere (a Slurm node's directory)
            program["graph"] = os.path.abspath(program["graph"])
        if "builder" in program and ":" in program["builder"]:
            path, _, name = program["builder"].rpartition(":")
            program["builder"] = os.path.abspath(path) + ":" + name
        self._program_keys = program_keys(program)
        for k in program["params"]:
            if k not in self._program_keys:
                raise _stepsim.Error("space: program.params: '%s' is not a parameter of %s (%s)"
                                     % (k, program[kinds[0]], ", ".join(sorted(self._program_keys))))
        return program

    def _parameters(self, params):
        if not isinstance(params, dict) or not params:
            raise _stepsim.Error("space: 'parameters' must map at least one parameter to its values")
        hardware = set(_stepsim.preset(self.preset))
        out = []
        for name, spec in params.items():
            name = str(name)
            own = name in self._program_keys
            if not own and name not in hardware and "." not in name:
                raise _stepsim.Error("space: parameter '%s' is neither a parameter of the program (%s) nor a hardware "
                                     "parameter (stepsim presets) nor NODE.PARAM"
                                     % (name, ", ".join(sorted(self._program_keys))))
            if own and name in self.program["params"]:
                raise _stepsim.Error("space: '%s' is both fixed in program.params and searched" % name)
            if name in self.settings:
                raise _stepsim.Error("space: '%s' is both fixed in set and searched" % name)
            out.append(Parameter(name, spec))
        return out

    def _objectives(self, objectives):
        if not isinstance(objectives, dict) or not objectives:
            raise _stepsim.Error("space: 'objectives' must map one or more metrics to min or max (metrics: %s)"
                                 % ", ".join(METRICS))
        for name, direction in objectives.items():
            if not self._measurable(name):
                raise _stepsim.Error("space: unknown objective '%s' (metrics: %s; or a numeric searched parameter)"
                                     % (name, ", ".join(METRICS)))
            if direction not in ("min", "max"):
                raise _stepsim.Error("space: objective '%s': min or max, not %r" % (name, direction))
        return dict(objectives)

    def _measurable(self, name):
        """A metric of the run, or a numeric searched parameter (the hardware's cost, say
        hbm.channels: min, which no run measures)."""
        if name in METRICS:
            return True
        p = next((p for p in self.parameters if p.name == name), None)
        return p is not None and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                     for v in (p.choices if p.choices is not None else [p.low, p.high]))

    def value(self, name, metrics, params):
        """An objective's or constraint's value at a point: its metric, or the parameter's value."""
        return metrics[name] if name in METRICS else params[name]

    def _constraints(self, constraints):
        out = {}
        for name, bound in self._mapping("constraints", constraints).items():
            if not self._measurable(name):
                raise _stepsim.Error("space: unknown constraint metric '%s' (metrics: %s; or a numeric searched "
                                     "parameter)" % (name, ", ".join(METRICS)))
            if not isinstance(bound, dict) or not bound or set(bound) - {"min", "max"}:
                raise _stepsim.Error("space: constraint '%s': give {max: V} and/or {min: V}" % name)
            for k, v in bound.items():
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise _stepsim.Error("space: constraint '%s': %s must be a number" % (name, k))
            out[name] = dict(bound)
        return out

    def _search(self, s):
        unknown = set(s) - SEARCH_KEYS
        if unknown:
            raise _stepsim.Error("space: search: unknown key '%s' (%s)" % (sorted(unknown)[0], ", ".join(sorted(SEARCH_KEYS))))
        default = "nsga2" if len(self.objectives) > 1 else "tpe"
        self.method = s.get("method", default)
        if self.method not in METHODS:
            raise _stepsim.Error("space: search.method must be one of %s, not %r" % (", ".join(METHODS), self.method))
        if self.method == "tpe" and len(self.objectives) > 1:
            raise _stepsim.Error("space: TPE searches one objective; use nsga2 for %d" % len(self.objectives))
        self.seed = self._int(s, "seed", 1, 0, 2**31 - 1)
        self.batch = self._int(s, "batch", 20, 2 if self.method == "nsga2" else 1, 10_000)
        if self.method == "grid":
            size = math.prod(len(p.grid_values()) for p in self.parameters)
            self.trials = min(self._int(s, "trials", size, 1, MAX_TRIALS), size)
        else:
            self.trials = self._int(s, "trials", 100, 1, MAX_TRIALS)

    def _int(self, s, key, default, low, high):
        v = s.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            raise _stepsim.Error("space: search.%s must be an integer in %d..%d, not %r" % (key, low, high, v))
        return v

    def grid(self):
        """Every point of the grid, in product order (the last parameter varies fastest)."""
        names = [p.name for p in self.parameters]
        return [dict(zip(names, values)) for values in itertools.product(*(p.grid_values() for p in self.parameters))]

    def job(self):
        """What a worker needs to evaluate a point (stepsim.evaluate.evaluate)."""
        return {"program": self.program, "preset": self.preset, "mode": self.mode, "set": self.settings}

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
