"""Symbolic sizes as SymPy expressions.

The simulator's shape inference (sim/shape) writes sizes in GiNaC's syntax: products, sums,
powers with ``^`` and the functions ``ceil_div(a, b)`` and ``max_size(a, b)``. Every name that is
not a function is a symbol of the graph (``n_<node>_<port>`` for a dynamic dimension).
"""
import sympy

_FUNCTIONS = {
    "ceil_div": lambda a, b: sympy.ceiling(a / b),
    "max_size": sympy.Max,
}


def to_sympy(text):
    """The SymPy expression of a size or metric printed by the simulator."""
    return sympy.parse_expr(text.replace("^", "**"), local_dict=dict(_FUNCTIONS), evaluate=True)
