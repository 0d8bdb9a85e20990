#!/usr/bin/env python3
"""A new layer written in Python: a SwiGLU expert with a residual connection,

    y = x + (SiLU(x W1) * (x W3)) W2,

built operator by operator on a stepsim.Graph (the "mn_mk" schedule of the library's C++ swiglu
layer: gate and up tiled on batch and intermediate, down reduced over the intermediate tiles with
an Accum, then the residual add), run in functional mode and checked against NumPy, then swept
over a schedule parameter (tile_f) and a hardware parameter (HBM channels), with a plot.

    PYTHONPATH=build/python /usr/bin/python3 graphs/python/swiglu_residual.py --out /tmp/swiglu_py

writes sweep.csv and sweep.png to --out and prints the table; exits 1 if the simulated values
differ from the NumPy reference by more than the tolerance. --quick: a smaller layer and sweep.
"""
import argparse
import os
import sys

import numpy as np
import stepsim


def swiglu_residual(batch=64, hidden=256, inter=512, tile_b=16, tile_f=64, compute_bw=1024, seed=1):
    """The layer as a Graph: x [batch x hidden], W1 and W3 [hidden x inter], W2 [inter x hidden]."""
    M, N = batch // tile_b, inter // tile_f
    g = stepsim.Graph("swiglu_residual", "x + SwiGLU(x), tiles [%d, %d]" % (tile_b, tile_f))
    for k, (name, shape) in enumerate([("x", (batch, hidden)), ("w1", (hidden, inter)), ("w3", (hidden, inter)),
                                       ("w2", (inter, hidden))]):
        g.tensor(name, shape, init="random", seed=seed + k)
    g.output_tensor("y", (batch, hidden))
    bw = dict(compute_bw=compute_bw)
    x = g.LinearOffChipLoad(tensor="x", tile=[tile_b, hidden], out_shape=[M], name="x_load")
    x_rep = g.Repeat(x, count=N, name="x_rep")  # each batch tile stays on chip for the N weight tiles

    def weights(name, tile):  # re-read for every batch tile (stride 0 on the batch dimension)
        return g.LinearOffChipLoad(tensor=name, tile=tile, out_shape=[M, N], stride=[0, 1], name=name + "_load")

    gate = g.Map(x_rep, weights("w1", [hidden, tile_f]), fn="matmul", name="gate", **bw)
    up = g.Map(x_rep, weights("w3", [hidden, tile_f]), fn="matmul", name="up", **bw)
    h = g.Map(g.Map(gate, fn="silu", name="act", **bw), up, fn="mul", name="h", **bw)
    down = g.Accum(h, weights("w2", [tile_f, hidden]), fn="matmul_acc", rank=1, name="down", **bw)
    x_again = g.LinearOffChipLoad(tensor="x", tile=[tile_b, hidden], out_shape=[M], name="x_residual")
    y = g.Map(down, x_again, fn="add", name="residual", **bw)
    g.LinearOffChipStore(y, tensor="y", tile=[tile_b, hidden], out_shape=[M], name="y_store")
    return g


def bf16(a):
    """float32 rounded to bf16, to nearest even (the simulator's storage format)."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def reference(inputs):
    """The layer in NumPy, in float64 from the bf16 inputs (the simulator sums in fp32)."""
    x, w1, w3, w2 = (inputs[k].astype(np.float64) for k in ("x", "w1", "w3", "w2"))
    gate = x @ w1
    return x + ((gate / (1 + np.exp(-gate))) * (x @ w3)) @ w2


def check_against_numpy(g, tolerance):
    rng = np.random.default_rng(0)
    inputs = {t["name"]: bf16(rng.uniform(-1, 1, t["shape"]).astype(np.float32)) for t in g.tensors
              if t["init"] != "output"}
    r = g.run(mode="functional", inputs=inputs)
    want = reference(inputs)
    err = np.max(np.abs(r.outputs["y"] - want)) / np.max(np.abs(want))
    print("functional run: %d cycles; largest error against NumPy %.2e of the largest |y| (tolerance %.0e)"
          % (r.cycles, err, tolerance))
    return err <= tolerance


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".", help="folder for sweep.csv and sweep.png")
    ap.add_argument("--quick", action="store_true", help="a smaller layer and sweep (the test uses it)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    size = dict(batch=32, hidden=64, inter=128) if args.quick else {}
    ok = check_against_numpy(swiglu_residual(**size), tolerance=2e-2)
    tiles = [32, 64] if args.quick else [32, 64, 128]
    channels = [2, 8] if args.quick else [2, 4, 8, 16]
    df = stepsim.sweep(lambda tile_f: swiglu_residual(tile_f=tile_f, **size),
                       {"tile_f": tiles, "hbm.channels": channels})
    print(df[["tile_f", "hbm.channels", "cycles", "offchip_read_bytes", "onchip_bytes", "error"]]
          .to_string(index=False))
    df.to_csv(os.path.join(args.out, "sweep.csv"), index=False)
    plot(df, os.path.join(args.out, "sweep.png"))
    print("wrote %s and %s" % (os.path.join(args.out, "sweep.csv"), os.path.join(args.out, "sweep.png")))
    return 0 if ok and (df["error"] == "").all() else 1


def plot(df, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for tile_f, rows in df.groupby("tile_f"):
        ax.plot(rows["hbm.channels"], rows["cycles"], marker="o", label="tile_f = %d" % tile_f)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("HBM channels")
    ax.set_ylabel("cycles")
    ax.set_title("x + SwiGLU(x), step-artifact preset")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    sys.exit(main())
