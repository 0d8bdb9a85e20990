#!/usr/bin/python3
"""Writes a graph of N nodes for the load and run scaling measurements (docs/performance.md,
"Big graphs"): a chain of a load, N - 2 Maps and a sink, named k0 .. k<N-1>.

    scripts/bench/big_graph.py N [--reverse] -o FILE

--reverse lists the nodes consumers first (the file order shape inference must not depend on).
Each Map needs a compute unit: run with `--set num_pcus=N` (the limit is 2^20). The run's
tensor is [4 x 64] bf16 as four [1 x 64] tiles, so a run is the cost of the nodes, not data.
"""
import argparse
import sys


def chain(n):
    maps = max(n - 2, 0)
    nodes = ["  - {name: k0, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 64], out_shape: [4]}}"]
    for k in range(1, maps + 1):
        nodes.append(f"  - {{name: k{k}, op: Map, params: {{fn: exp}}, inputs: {{in0: k{k - 1}}}}}")
    nodes.append(f"  - {{name: k{maps + 1}, op: Sink, inputs: {{in: k{maps}}}}}")
    return nodes


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("n", type=int, help="number of nodes (at least 2)")
    p.add_argument("--reverse", action="store_true", help="list the nodes consumers first")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args()
    if a.n < 2:
        sys.exit("error: N must be at least 2, got %d" % a.n)
    nodes = chain(a.n)
    if a.reverse:
        nodes.reverse()
    with open(a.output, "w") as f:
        f.write(f"name: big_chain_{a.n}\n")
        f.write("tensors:\n  x: {shape: [4, 64], dtype: bf16, init: random, seed: 1}\n")
        f.write("nodes:\n")
        f.write("\n".join(nodes) + "\n")


if __name__ == "__main__":
    main()
