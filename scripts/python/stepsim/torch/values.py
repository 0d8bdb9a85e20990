"""What a traced value becomes in the lowering.

SVal   a value computed on chip: a stream of tiles with a Layout and a tile dtype.
MVal   a value known when lowering: a parameter, a buffer, a constant computed from them, or an
       input of the module. It lives in HBM and is read (LinearOffChipLoad) in whatever layout
       its consumer needs; views of it are free (they change the addresses, not the data).
       `from_input`: derived from a streamed input by views only (computing on it streams it).
Lin    a Linear not yet built: x @ W^T (+ b). Its consumer picks the output's column tile (a view
       into heads takes the head dim), and a split of its columns (a fused QKV) splits W instead.
"""
import torch


class SVal:
    def __init__(self, layout, stream):
        self.layout, self.stream = layout, stream

    @property
    def dtype(self):
        """The tiles' dtype, as the graph typed the stream: bf16 or fp32."""
        return self.stream.elem.get("dtype", "bf16")

    @property
    def shape(self):
        return self.layout.shape

    def __repr__(self):
        return "<stream %s %s>" % (self.dtype, self.layout)


class MVal:
    def __init__(self, data, from_input=False, what="constant"):
        self.data, self.from_input, self.what = data, from_input, what

    @property
    def shape(self):
        return tuple(self.data.shape)

    def __repr__(self):
        return "<%s %s>" % (self.what, list(self.data.shape))


class Lin:
    """x (SVal, [.., K]) times weight [N x K] (plus bias [N]): the output [.., N]."""

    def __init__(self, x, weight, bias, node, weight_what="weight", bias_what="bias"):
        self.x, self.weight, self.bias, self.node = x, weight, bias, node
        self.weight_what, self.bias_what = weight_what, bias_what  # what the stored tensors are
        self.built = {}  # column tile -> SVal

    @property
    def shape(self):
        return tuple(self.x.shape[:-1]) + (int(self.weight.shape[0]),)

    def columns(self, start, stop):
        """The Linear of output columns start..stop-1 (a split of a fused projection)."""
        bias = None if self.bias is None else self.bias[start:stop]
        return Lin(self.x, self.weight[start:stop], bias, self.node, self.weight_what, self.bias_what)


class LinView:
    """A Linear's output viewed with its columns split into dims `tail` ([.., 3, H, hd] of a fused
    QKV): unbinding the first of them picks a Linear of those columns; any other use builds it."""

    def __init__(self, lin, tail):
        self.lin, self.tail = lin, tuple(tail)

    @property
    def shape(self):
        return tuple(self.lin.shape[:-1]) + self.tail

    def part(self, j):
        m = 1
        for s in self.tail[1:]:
            m *= s
        return self.lin.columns(j * m, (j + 1) * m)


def is_value(v):
    return isinstance(v, (SVal, MVal, Lin))


def tile_dtype(torch_dtype):
    return "fp32" if torch_dtype in (torch.float32, torch.float64) else "bf16"
