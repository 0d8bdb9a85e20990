"""Argument checks of the Python API, before a value reaches the C++ bindings.

A binding given the wrong type answers with pybind11's signature dump (internal class names,
no allowed range) and an out-of-range number with OverflowError. So every public call checks
its arguments here first: a wrong type is a TypeError, a wrong value a stepsim.Error (a
ValueError), each naming the argument, the value and what is allowed. The bounds are the C++
side's own (``_stepsim.limits()``), so the two cannot drift.
"""
import inspect
import numbers
import os
from collections.abc import Mapping

import numpy as np

from .. import _stepsim

LIMITS = _stepsim.limits()
MAX_U64 = 2 ** 64 - 1
MAX_NESTING = 16  # lists inside lists in a parameter value


def shown(value):
    """repr(value), cut for a message."""
    try:
        text = repr(value)
    except Exception:  # a value whose repr fails is still named by its type
        text = "<%s>" % type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _type_error(what, expected, value):
    return TypeError("%s must be %s, got %s (%s)" % (what, expected, shown(value), type(value).__name__))


def text(what, value, none=False):
    """A str (or None when `none`)."""
    if value is None and none:
        return None
    if not isinstance(value, str):
        raise _type_error(what, "a string" + (" or None" if none else ""), value)
    return value


def name(kind, value, where=""):
    """A str that is an identifier (the C++ rule, sim/graph/validate.h): "WHERE: KIND name ..."."""
    _stepsim.check_name(kind, text((where + ": " if where else "") + kind + " name", value), where)
    return value


def path(what, value, none=False):
    """A str or os.PathLike path, as a str, without NUL."""
    if value is None and none:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise _type_error(what, "a path (str or os.PathLike)", value)
    value = os.fspath(value)
    if not isinstance(value, str):
        raise _type_error(what, "a str path", value)
    if "\0" in value:
        raise _stepsim.Error("%s %s contains a NUL character" % (what, shown(value)))
    return value


def integer(what, value, lo, hi, none=False):
    """A Python or NumPy integer (not a bool, not a float) within lo..hi, as an int."""
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _type_error(what, "an integer %d..%d" % (lo, hi), value)
    value = int(value)
    if not lo <= value <= hi:
        raise _stepsim.Error("%s %d outside the allowed range %d..%d" % (what, value, lo, hi))
    return value


def choice(what, value, choices, none=False):
    """One of `choices` (strings)."""
    if value is None and none:
        return None
    if not isinstance(value, str) or value not in choices:
        if not isinstance(value, str):
            raise _type_error(what, "one of " + ", ".join(choices), value)
        raise _stepsim.Error("%s must be one of %s, got %s" % (what, ", ".join(choices), shown(value)))
    return value


def mapping(what, value):
    """A Mapping with str keys (None: empty), as a dict."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _type_error(what, "a dict {name: value}", value)
    for k in value:
        text("%s key" % what, k)
    return dict(value)


def value_text(what, value, depth=0):
    """A parameter value as the graph file writes it: a number, a string, a bool or a (nested)
    list of them."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (numbers.Integral, numbers.Real)):
        return str(value)
    if isinstance(value, str):
        if "\0" in value:
            raise _stepsim.Error("%s %s contains a NUL character" % (what, shown(value)))
        return value
    if isinstance(value, (list, tuple)):
        if depth >= MAX_NESTING:
            raise _stepsim.Error("%s: lists nested deeper than %d" % (what, MAX_NESTING))
        return "[" + ", ".join(value_text(what, v, depth + 1) for v in value) + "]"
    if hasattr(value, "free_symbols"):  # a SymPy expression
        return str(value).replace("**", "^")
    raise _type_error(what, "a number, a string, a bool or a list of them", value)


def expression(what, value):
    """A size expression (text, an integer or a SymPy expression) in the simulator's syntax."""
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)) and not hasattr(value, "free_symbols"):
        raise _type_error(what, "an expression (a string, an integer or a SymPy expression)", value)
    return str(value).replace("**", "^")


def int32_array(what, array):
    """Refuses integer values that int32 cannot hold (they would wrap)."""
    if array.dtype.kind in "iu" and array.size and array.dtype.itemsize >= 4 and array.dtype != np.int32:
        lo, hi = array.min(), array.max()
        if int(lo) < -2 ** 31 or int(hi) > 2 ** 31 - 1:
            bad = lo if int(lo) < -2 ** 31 else hi
            raise _stepsim.Error("%s: value %d does not fit in int32 (-2147483648..2147483647)" % (what, int(bad)))


def array(what, value):
    """A NumPy array of numbers (lists are converted)."""
    if not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value)
        except (ValueError, TypeError, OverflowError, RecursionError) as e:
            raise TypeError("%s must be a NumPy array, got %s (%s)" % (what, shown(value), e)) from None
    if value.dtype.kind not in "biuf":
        raise _type_error(what, "a NumPy array of numbers", value)
    return value


def argument_kinds(fn, varargs=True):
    """{argument: kind} of a Python program's function (a design space's builder or PyTorch
    factory), from its defaults: bool, number, string, or any (no default, or another type).
    `varargs=False` leaves out *args and **kwargs."""
    kinds = {}
    for name, arg in inspect.signature(fn).parameters.items():
        if not varargs and arg.kind in (arg.VAR_POSITIONAL, arg.VAR_KEYWORD):
            continue
        d = arg.default
        kinds[name] = ("bool" if isinstance(d, bool) else "number" if isinstance(d, (int, float))
                       else "string" if isinstance(d, str) else "any")
    return kinds
