"""A design space's program written in PyTorch: `program: {torch: FILE.py:FACTORY}`.

FILE.py defines FACTORY(**params) returning (module, example_inputs) or (module, example_inputs,
example_kwargs). A point of the space gives the factory its own parameters (batch, seq, ...) and
the lowering its schedule (the keys of stepsim.torch.SCHEDULE_KEYS: tile_rows, tile_cols, ...);
the point's program is `stepsim.torch.lower(module, inputs, kwargs, schedule=...)`, run as
`lowered.run(mode, preset, set)`: the lowered graph at the FIFO depth the lowering asks for
unless the schedule gives one. docs/dse.md ("A PyTorch module as the program").

Each call of the factory starts from torch.manual_seed(0) (the caller's random state is kept):
the same point gives the same module and inputs in every process, which the search's cache of
points and its workers rely on (a MoE's routing depends on its weights).
"""
import functools
import importlib.util
import inspect
import os

from .. import _stepsim
from ..core._checks import argument_kinds

RETURNS = "(module, example_inputs) or (module, example_inputs, example_kwargs)"


def front():
    """stepsim.torch (imported when a torch program is first used: PyTorch is slow to import)."""
    try:
        from .. import torch as lowering
    except Exception as e:  # PyTorch missing, or the front door broken: say so, not a traceback
        raise _stepsim.Error("a torch program needs stepsim.torch (and PyTorch): cannot import it: %s: %s"
                             % (type(e).__name__, e)) from None
    return lowering


def schedule_keys():
    """The lowering's schedule keys, as stepsim.torch declares them today."""
    return tuple(front().SCHEDULE_KEYS)


def split_spec(spec):
    """"FILE.py:FACTORY" -> (FILE.py, FACTORY); a mistake is an Error naming the entry."""
    if not isinstance(spec, str) or ":" not in spec:
        raise _stepsim.Error("program.torch must be FILE.py:FACTORY, not %r" % (spec,))
    path, _, name = spec.rpartition(":")
    if not path or not name.isidentifier():
        raise _stepsim.Error("program.torch must be FILE.py:FACTORY (a Python file and a function in it), not %r"
                             % (spec,))
    return path, name


@functools.lru_cache(maxsize=16)
def load_factory(spec):
    """"FILE.py:FACTORY" (FILE an absolute path) -> the function, imported from the file (so that
    a worker process finds it too). Errors name the file and the factory."""
    path, name = split_spec(spec)
    where = "program.torch '%s'" % spec
    if not os.path.exists(path):
        raise _stepsim.Error("%s: no file %s" % (where, path))
    if not os.path.isfile(path):
        raise _stepsim.Error("%s: %s is not a regular file" % (where, path))
    if not path.endswith(".py"):
        raise _stepsim.Error("%s: %s is not a Python file (.py)" % (where, path))
    module_spec = importlib.util.spec_from_file_location("stepsim_torch_program_" + str(abs(hash(path))), path)
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as e:  # a syntax error, an exception at import: its own message, not a traceback
        raise _stepsim.Error("%s: cannot load %s: %s" % (where, path, _describe(e))) from None
    if not hasattr(module, name):
        raise _stepsim.Error("%s: %s has no factory %s (it defines %s)" % (
            where, path, name, ", ".join(n for n in sorted(vars(module)) if _public_function(module, n)) or "none"))
    fn = getattr(module, name)
    if not callable(fn):
        raise _stepsim.Error("%s: %s in %s is not callable (a %s)" % (where, name, path, type(fn).__name__))
    return fn


def _public_function(module, name):
    v = getattr(module, name)
    return not name.startswith("_") and inspect.isfunction(v) and v.__module__ == module.__name__


def factory_kinds(spec):
    """{argument: kind} of the factory (the kinds space.py checks values against, from the
    defaults). A factory argument named as a schedule key is refused: it could not be told apart."""
    kinds = argument_kinds(load_factory(spec), varargs=False)
    keys = schedule_keys()
    for name in kinds:
        if name in keys:
            raise _stepsim.Error("program.torch '%s': the factory's argument '%s' is also a schedule key of the "
                                 "lowering (%s): rename it" % (spec, name, ", ".join(keys)))
    return kinds


def program_kinds(spec):
    """{name: kind} of a torch program's own parameters: the factory's and the schedule's."""
    kinds = factory_kinds(spec)
    kinds.update({k: "scalar" for k in schedule_keys()})
    return kinds


def check_schedule_value(key, value):
    """Why the lowering would refuse `key: value` whatever the module (None when it takes it),
    by the lowering's own check when stepsim.torch has one."""
    check = getattr(front(), "_check_schedule", None)
    if check is None:
        return None
    try:
        check({key: value})
    except _stepsim.Error as e:
        return str(e)
    except Exception:  # the front door changed its check: the trials will tell
        return None
    return None


def call_factory(spec, args):
    """factory(**args), seeded, -> (module, inputs, kwargs); what it raises or a result of the
    wrong form is an Error naming the file and the factory."""
    import torch  # here, not at the top: PyTorch is slow to import (only a torch program needs it)

    fn = load_factory(spec)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        try:
            made = fn(**args)
        except Exception as e:
            raise _stepsim.Error("factory %s(%s) raised %s" % (spec, _call(args), _describe(e))) from None
    if not isinstance(made, (tuple, list)) or len(made) not in (2, 3):
        raise _stepsim.Error("factory %s returned %s, not %s" % (spec, _short(made), RETURNS))
    module, inputs = made[0], made[1]
    kwargs = made[2] if len(made) == 3 else None
    if not isinstance(module, torch.nn.Module):
        raise _stepsim.Error("factory %s returned %s as the module, not a torch.nn.Module (%s)"
                             % (spec, _short(module), RETURNS))
    if not isinstance(inputs, (tuple, list, torch.Tensor)):
        raise _stepsim.Error("factory %s returned %s as the example inputs, not a tuple of them or a tensor"
                             % (spec, _short(inputs)))
    if kwargs is not None and not isinstance(kwargs, dict):
        raise _stepsim.Error("factory %s returned %s as the example kwargs, not a dict" % (spec, _short(kwargs)))
    return module, inputs, kwargs


def lower(spec, args):
    """The factory at its arguments, lowered with the schedule among `args` -> a stepsim.torch
    Lowered. The lowering's refusal (a tile_rows that divides no dim, an operation it has no rule
    for) is an Error with its message."""
    keys = set(schedule_keys())
    schedule = {k: v for k, v in args.items() if k in keys}
    module, inputs, kwargs = call_factory(spec, {k: v for k, v in args.items() if k not in keys})
    try:
        if kwargs is None:  # (module, args, schedule=...) is the call every version of the front door takes
            return front().lower(module, inputs, schedule=schedule)
        return front().lower(module, inputs, kwargs, schedule=schedule)
    except _stepsim.Error as e:
        raise _stepsim.Error("stepsim.torch.lower: %s" % e) from None
    except Exception as e:  # tracing or lowering failed otherwise: a failed point, with the reason
        raise _stepsim.Error("stepsim.torch.lower raised %s" % _describe(e)) from None


def _call(args):
    return ", ".join("%s=%r" % kv for kv in sorted(args.items()))


def _short(v):
    text = repr(v)
    return "%s %s" % (type(v).__name__, text if len(text) <= 60 else text[:57] + "...")


def _describe(e):
    if isinstance(e, SyntaxError):
        return "%s: %s (%s, line %s)" % (type(e).__name__, e.msg, e.filename, e.lineno)
    text = str(e).strip()
    return "%s: %s" % (type(e).__name__, text) if text else type(e).__name__
