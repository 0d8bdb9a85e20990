// Every operator's shape rule (sim/shape/rules.cpp) against the simulator: the operator runs on
// literal token streams (eval_op, as `stepsim eval` does), or inside a small graph where it needs
// tensors or buffers, and the type of the beats it really emitted must be what the rule infers
// from the types of its inputs. Symbols a rule introduces are substituted where their value is
// known (Partition over literal selectors); otherwise the dimension must be dynamic or ragged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "hw/ops/op.h"
#include "hw/presets/hardware.h"
#include "shape_check.h"
#include "sim/engine/eval.h"
#include "sim/graph/loader.h"

namespace stepsim::shape {
namespace {

using testing::expect_matches;

// One operator on literal streams, every input port named.
struct Case {
  std::string op;
  std::map<std::string, std::string> params;
  std::vector<std::pair<std::string, std::string>> in;  // port -> tokens
  size_t outputs = 0;                                   // numbered outputs (0: eval's default)
};

std::string describe(const Case& c) {
  std::string s = c.op;
  for (const auto& [k, v] : c.params) s += " " + k + "=" + v;
  for (const auto& [p, t] : c.in) s += " " + p + "='" + t + "'";
  return s;
}

// The literal cases, by operator.
std::vector<Case> eval_cases() {
  return {
      // Shape operators.
      {"Flatten", {{"min", "0"}, {"max", "1"}}, {{"in", "1 2 S1 3 4 S2 5 6 S1 7 8 S2 D"}}},
      {"Flatten", {{"min", "0"}, {"max", "1"}}, {{"in", "1 2 S1 3 S1 S2 4 S2 D"}}},      // ragged
      {"Flatten", {{"min", "1"}, {"max", "2"}}, {{"in", "1 2 S1 3 4 S2 5 6 S2 S3 D"}}},  // rank 3
      {"Flatten", {{"min", "0"}, {"max", "2"}}, {{"in", "S1 S2 4 S2 D"}}},               // empty dims
      {"Flatten", {{"min", "0"}, {"max", "1"}}, {{"in", "T[2x4] T[2x4] S1 T[2x4] T[2x4] S2 D"}}},
      {"Reshape", {{"chunk", "2"}}, {{"in", "1 2 3 S1 4 S1 D"}}},  // ragged, padded
      {"Reshape", {{"chunk", "2"}}, {{"in", "1 2 3 4 S1 D"}}},
      {"Reshape", {{"chunk", "3"}}, {{"in", "1 2 3 4 5 6 D"}}},  // rank 0
      {"Reshape", {{"chunk", "2"}, {"rank", "1"}}, {{"in", "1 2 S1 3 4 S1 5 6 S1 7 8 S2 D"}}},
      {"Reshape", {{"chunk", "4"}}, {{"in", "T[1x64] T[1x64] T[1x64] T[1x64] T[1x64] T[1x64] S1 D"}}},
      {"Promote", {}, {{"in", "1 2 S1 3 S1 D"}}},
      {"Promote", {}, {{"in", "D"}}},
      {"Promote", {{"rank", "0"}}, {{"in", "1 2 S1 3 S1 D"}}},
      {"Promote", {{"rank", "1"}}, {{"in", "1 2 S1 3 4 S1 S2 D"}}},
      {"Repeat", {{"count", "3"}}, {{"in", "1 2 S1 D"}}},
      {"Repeat", {{"count", "2"}}, {{"in", "T[2x2] S1 S1 T[2x2] S2 D"}}},  // empty row (seen as an empty group)
      {"Repeat", {{"count", "2"}}, {{"in", "D"}}},
      {"Expand", {{"rank", "1"}}, {{"in", "7 S1 8 S1 D"}, {"ref", "1 2 3 S1 4 5 6 S1 D"}}},
      {"Expand", {{"rank", "1"}}, {{"in", "7 S1 8 S1 D"}, {"ref", "1 2 3 S1 4 S1 D"}}},  // ragged ref
      {"Expand", {{"rank", "1"}}, {{"in", "T[1x4] S1 T[1x4] S2 T[1x4] S2 D"}, {"ref", "0 0 S1 0 S2 0 S2 D"}}},
      {"Zip", {}, {{"in0", "T[2x2] T[2x2] S1 T[2x2] S1 D"}, {"in1", "1 2 S1 3 S1 D"}}},
      // Address generation.
      {"ExpertAddrGen", {{"tiles_per_expert", "3"}}, {{"in", "{0} {2} {1} D"}}},
      {"ExpertAddrGen", {{"tiles_per_expert", "2"}, {"base", "4"}}, {{"in", "{1} {0} S1 {3} S1 D"}}},
      {"ExpertAddrGen", {{"tiles_per_expert", "2"}}, {{"in", "{0,1} {1} {} {0,2,3} S1 D"}}},  // multi-hot, empty
      {"KvCacheAddrGen", {{"tile_rows", "4"}, {"max_tiles", "8"}}, {{"idx", "0 1 2 S1 D"}, {"kv_len", "5 16 1 S1 D"}}},
      {"KvCacheAddrGen", {{"tile_rows", "4"}, {"max_tiles", "2"}}, {{"idx", "3 0 D"}, {"kv_len", "8 8 D"}}},
      {"KvCacheAddrGen", {{"tile_rows", "4"}, {"max_tiles", "2"}}, {{"idx", "0 1 S1 D"}, {"kv_len", "0 4 S1 D"}}},
      {"Zip", {}, {{"in0", "1 S1 S1 D"}, {"in1", "{0} S1 S1 D"}, {"in2", "T[1x1] S1 S1 D"}}},
      // Routing.
      {"Broadcast", {}, {{"in", "1 2 S1 3 S1 D"}}, 2},
      {"Broadcast", {}, {{"in", "T[2x2] S1 S1 D"}}, 3},
      {"Partition", {{"rank", "0"}}, {{"in", "1 2 3 4 S1 D"}, {"sel", "{0} {1} {0,1} {} S1 D"}}},
      {"Partition", {{"rank", "0"}}, {{"in", "1 2 3 4 D"}, {"sel", "{2} {0,2} {0,1,2} {2} D"}}},
      {"Partition", {{"rank", "1"}}, {{"in", "1 2 S1 S1 4 5 S2 D"}, {"sel", "{1} {0} {1} S1 D"}}},
      {"Partition", {{"rank", "1"}}, {{"in", "1 2 S1 3 4 S1 5 6 S2 D"}, {"sel", "{0} {0,1} {1} S1 D"}}},
      {"Partition", {{"rank", "0"}}, {{"in", "T[1x8] T[1x8] S1 T[1x8] S2 D"}, {"sel", "{0} {3} S1 {3} S2 D"}}, 4},
      {"Partition", {{"rank", "0"}}, {{"in", "1 2 D"}, {"sel", "{1} {1} D"}}, 3},  // out0 and out2 stay empty
      {"Reassemble", {{"rank", "0"}}, {{"in0", "1 3 D"}, {"in1", "2 D"}, {"sel", "{0} {0,1} S1 D"}}},
      {"Reassemble", {{"rank", "1"}}, {{"in0", "1 2 S1 3 4 S1 D"}, {"in1", "5 6 S1 D"}, {"sel", "{0,1} {0} S1 D"}}},
      {"Reassemble", {{"rank", "1"}}, {{"in0", "1 2 S1 D"}, {"in1", "5 S1 D"}, {"sel", "{0} {1} S1 D"}}},
      {"Reassemble", {{"rank", "0"}}, {{"in0", "D"}, {"in1", "1 2 D"}, {"in2", "3 D"}, {"sel", "{1} {1,2} {} D"}}},
      {"EagerMerge", {{"rank", "0"}}, {{"in0", "1 2 D"}, {"in1", "3 D"}}},
      {"EagerMerge", {{"rank", "1"}}, {{"in0", "1 2 S1 3 4 S1 D"}, {"in1", "5 6 S1 D"}}},
      {"EagerMerge", {{"rank", "1"}}, {{"in0", "1 2 S1 3 S1 D"}, {"in1", "5 6 S1 S1 D"}}},  // ragged, empty
      {"EagerMerge", {{"rank", "0"}}, {{"in0", "1 2 S1 3 S1 D"}, {"in1", "D"}}},
      {"Parallelize", {{"rank", "0"}}, {{"in", "1 2 3 4 5 D"}}, 2},
      {"Parallelize", {{"rank", "0"}}, {{"in", "1 2 3 4 5 S1 D"}}, 3},
      {"Parallelize", {{"rank", "1"}}, {{"in", "1 2 S1 3 4 S1 5 6 S2 D"}}, 2},
      {"Parallelize", {{"rank", "1"}}, {{"in", "1 2 S1 3 S1 5 6 S2 D"}}, 2},  // ragged
      // On-chip memory (Streamify needs buffers: see the graph cases).
      {"Bufferize", {{"rank", "1"}}, {{"in", "T[2x2] T[2x2] S1 T[2x2] T[2x2] S2 D"}}},
      {"Bufferize", {{"rank", "1"}}, {{"in", "1 2 S1 3 S1 S2 D"}}},  // ragged
      {"Bufferize", {{"rank", "2"}}, {{"in", "1 2 S1 3 4 S2 D"}}},
      // Higher-order.
      {"Map", {{"fn", "silu"}}, {{"in0", "T[2x4] T[2x4] S1 T[2x4] S1 D"}}},
      {"Map", {{"fn", "matmul"}}, {{"in0", "T[4x8] T[4x8] S1 D"}, {"in1", "T[8x16] T[8x16] S1 D"}}},
      {"Map", {{"fn", "matmul_t_f32"}}, {{"in0", "T[4x8] D"}, {"in1", "T[16x8] D"}}},
      {"Map", {{"fn", "add"}}, {{"in0", "T[2x1] T[2x1] S1 D"}, {"in1", "T[2x4] T[2x4] S1 D"}}},
      {"Map", {{"fn", "mul"}}, {{"in0", "T[1x4:fp32] S1 S1 D"}, {"in1", "T[3x4] S1 S1 D"}}},
      {"Map", {{"fn", "row_sum"}}, {{"in0", "T[4x8:fp32] T[4x8:fp32] D"}}},
      {"Map", {{"fn", "sub_row"}}, {{"in0", "T[4x8] D"}, {"in1", "T[4x1] D"}}},
      {"Map", {{"fn", "exp"}}, {{"in0", "T[2x2] S1 S1 D"}}},
      {"Map", {{"fn", "matmul"}}, {{"in0", "(T[2x3],T[3x5]) (T[2x3],T[3x5]) S1 D"}}},  // a zipped input
      {"Map",
       {{"fn", "select"}},  // three operands, all broadcast; the dtype from in1 and in2
       {{"in0", "T[4x1:int32] T[4x1:int32] S1 D"}, {"in1", "T[1x8] T[1x8] S1 D"}, {"in2", "T[1x1] T[1x1] S1 D"}}},
      {"Map", {{"fn", "select"}}, {{"in0", "T[1x8:fp32] D"}, {"in1", "T[4x1] D"}, {"in2", "T[4x8:fp32] D"}}},
      {"Map", {{"fn", "row_mean"}}, {{"in0", "T[4x8] T[4x8] S1 D"}}},
      {"Map", {{"fn", "row_var"}}, {{"in0", "T[4x8:fp32] D"}}},
      {"Map", {{"fn", "rotate_half"}}, {{"in0", "T[2x8] S1 D"}}},
      {"Map", {{"fn", "cast_bf16"}}, {{"in0", "T[2x8:fp32] T[2x8:fp32] S1 D"}}},
      {"Map", {{"fn", "gelu"}}, {{"in0", "T[2x8] D"}}},
      {"Accum", {{"fn", "add"}, {"rank", "1"}}, {{"in0", "T[2x4] T[2x4] S1 T[2x4] S1 D"}}},
      {"Accum", {{"fn", "add_f32"}, {"rank", "2"}}, {{"in0", "T[2x4] S1 T[2x4] S2 D"}}},
      {"Accum", {{"fn", "max"}, {"rank", "1"}}, {{"in0", "T[2x4:fp32] S1 S1 T[2x4:fp32] S2 D"}}},
      {"Accum",
       {{"fn", "matmul_acc"}, {"rank", "1"}},
       {{"in0", "T[4x8] T[4x8] S1 D"}, {"in1", "T[8x16] T[8x16] S1 D"}}},
      {"Accum", {{"fn", "matmul_t_acc_f32"}, {"rank", "1"}}, {{"in0", "T[4x8] S1 D"}, {"in1", "T[16x8] S1 D"}}},
      {"Accum", {{"fn", "retile_row"}, {"rank", "1"}}, {{"in0", "T[1x8] T[1x8] T[1x8] S1 D"}}},
      {"Accum", {{"fn", "retile_row"}, {"rank", "1"}}, {{"in0", "T[1x8] T[1x8] S1 T[1x8] S1 D"}}},  // ragged
      {"Accum", {{"fn", "retile_col"}, {"rank", "1"}}, {{"in0", "T[4x2] T[4x2] S1 T[4x2] T[4x2] S1 D"}}},
      {"Accum",
       {{"fn", "flash_attn_update"}, {"rank", "1"}},
       {{"in0", "T[4x8:fp32] T[4x8:fp32] S1 D"}, {"in1", "T[8x16] T[8x16] S1 D"}}},
      {"Scan", {{"fn", "add"}, {"rank", "1"}}, {{"in0", "T[2x4] T[2x4] S1 T[2x4] S1 D"}}},
      {"Scan",
       {{"fn", "matmul_acc_f32"}, {"rank", "1"}},
       {{"in0", "T[4x8] T[4x8] S1 D"}, {"in1", "T[8x2] T[8x2] S1 D"}}},
      {"FlatMap", {{"fn", "retile_streamify_row"}, {"rank", "1"}}, {{"in0", "T[4x8] T[4x8] S1 D"}}},
      {"FlatMap", {{"fn", "retile_streamify_col"}, {"rank", "1"}}, {{"in0", "T[2x3] D"}}},
      {"FlatMap", {{"fn", "retile_streamify_row"}, {"rank", "2"}}, {{"in0", "T[3x8] T[3x8] S1 D"}}},
      {"FlatMap", {{"fn", "retile_streamify_row"}, {"rank", "0"}}, {{"in0", "T[3x8] T[3x8] S1 T[3x8] S1 D"}}},
      {"FlatMap",
       {{"fn", "filter_padding"}, {"rank", "0"}},
       {{"in0", "T[1x8] T[1x8] T[1x8] S1 D"}, {"in1", "0 1 0 S1 D"}}},
      {"FlatMap",
       {{"fn", "filter_padding"}, {"rank", "0"}},
       {{"in0", "T[1x8] T[1x8] S1 T[1x8] T[1x8] S1 D"}, {"in1", "0 0 S1 0 1 S1 D"}}},
  };
}

HardwareParams hw() { return load_preset("step-artifact"); }

void check_eval(const Case& c) {
  SCOPED_TRACE(describe(c));
  EvalResult r = eval_op(c.op, c.params, c.in, hw(), c.outputs);
  ASSERT_TRUE(r.sim.ok) << r.sim.error;
  // The graph eval_op simulated, for the shape inference.
  Graph g;
  g.name = "rules";
  NodeSpec node;
  node.name = "op";
  node.op = c.op;
  node.params = c.params;
  for (size_t i = 0; i < c.in.size(); ++i) {
    const std::string src = "src" + std::to_string(i);
    g.streams[src] = to_beats(parse_tokens(c.in[i].second));
    g.nodes.push_back(node_spec(src, "Source", {{"stream", src}}));
    node.inputs[c.in[i].first] = src + ".out0";
  }
  size_t numbered = 0;
  for (const std::string& p : r.ports) numbered += std::isdigit(static_cast<unsigned char>(p.back())) != 0;
  if (numbered) node.num_outputs = numbered;
  g.nodes.push_back(node);
  SymbolTable syms;
  GraphTypes t = infer_types(g, syms);
  const NodeTypes& nt = t.nodes.at("op");
  std::set<std::string> rule_ports, run_ports(r.ports.begin(), r.ports.end());
  for (const auto& kv : nt.outputs) rule_ports.insert(kv.first);
  EXPECT_EQ(rule_ports, run_ports);
  for (const std::string& p : r.ports) {
    if (!nt.outputs.count(p)) continue;
    expect_matches(nt.outputs.at(p), r.sim.recorded.at("sink." + p), syms, "output " + p);
  }
}

// Operators that need tensors or buffers, and the Source/Sink ends: a small graph whose Sinks
// record the checked streams (sink name -> "node.port").
struct GraphCase {
  std::string name, yaml;
  std::vector<std::pair<std::string, std::string>> checks;  // sink -> node.port
  std::vector<std::string> ops;                             // operators it covers
  bool functional = false;
};

std::vector<GraphCase> graph_cases() {
  const std::string tensors =
      "tensors:\n"
      "  a: {shape: [32, 64], dtype: bf16, init: random, seed: 1}\n"
      "  f: {shape: [16, 32], dtype: fp32, init: random, seed: 2}\n"
      "  o: {shape: [32, 64], dtype: bf16, init: output}\n"
      "  m: {shape: [8, 1], dtype: int32, init: zeros}\n";
  return {
      {"static load, store",
       tensors + "nodes:\n"
                 "  - {name: ld, op: LinearOffChipLoad, params: {tensor: a, tile: [16, 32]}}\n"
                 "  - {name: b, op: Broadcast, inputs: {in: ld}}\n"
                 "  - {name: st, op: LinearOffChipStore, params: {tensor: o, tile: [16, 32]}, inputs: {in: b.out0}}\n"
                 "  - {name: s, op: Sink, inputs: {in: b.out1}}\n",
       {{"s", "ld.out"}},
       {"LinearOffChipLoad", "LinearOffChipStore", "Sink"}},
      {"load with out_shape and stride",
       tensors + "nodes:\n"
                 "  - {name: ld, op: LinearOffChipLoad, params: {tensor: f, tile: [4, 32], out_shape: [2, 3], stride: "
                 "[1, 0]}}\n"
                 "  - {name: s, op: Sink, inputs: {in: ld}}\n",
       {{"s", "ld.out"}},
       {"LinearOffChipLoad"}},
      {"load with a ragged ref",
       tensors + "streams:\n"
                 "  ref: '0 0 S1 0 S1 S1 S2 D'\n"
                 "nodes:\n"
                 "  - {name: ref, op: Source, params: {stream: ref}}\n"
                 "  - {name: ld, op: LinearOffChipLoad, params: {tensor: a, tile: [32, 32], out_shape: [1, 2]}, "
                 "inputs: {ref: ref}}\n"
                 "  - {name: s, op: Sink, inputs: {in: ld}}\n",
       {{"s", "ld.out"}},
       {"LinearOffChipLoad", "Source"}},
      {"random load and store",
       tensors + "streams:\n"
                 "  raddr: '3 0 S1 2 S1 S2 D'\n"
                 "  waddr: '0 1 2 D'\n"
                 "nodes:\n"
                 "  - {name: raddr, op: Source, params: {stream: raddr}}\n"
                 "  - {name: ld, op: RandomOffChipLoad, params: {tensor: a, tile: [8, 64]}, inputs: {raddr: raddr}}\n"
                 "  - {name: b, op: Broadcast, inputs: {in: ld}}\n"
                 "  - {name: s, op: Sink, inputs: {in: b.out0}}\n"
                 "  - {name: waddr, op: Source, params: {stream: waddr}}\n"
                 "  - {name: st, op: RandomOffChipStore, params: {tensor: o, tile: [8, 64]}, inputs: {waddr: waddr, "
                 "wdata: b.out1}}\n"
                 "  - {name: acks, op: Sink, inputs: {in: st}}\n",
       {{"s", "ld.out"}, {"acks", "st.out"}},
       {"RandomOffChipLoad", "RandomOffChipStore"}},
      {"store through a strided view, scatter of fp32 tiles",
       tensors + "streams:\n"
                 "  raddr: '1 1 0 D'\n"
                 "  waddr: '3 S1 0 2 S1 D'\n"
                 "nodes:\n"
                 "  - {name: ld, op: LinearOffChipLoad, params: {tensor: a, tile: [8, 64], out_shape: [2, 2], stride: "
                 "[1, 2]}}\n"
                 "  - {name: b, op: Broadcast, inputs: {in: ld}}\n"
                 "  - {name: st, op: LinearOffChipStore, params: {tensor: o, tile: [8, 64], out_shape: [2, 2], stride: "
                 "[2, 1]},\n"
                 "     inputs: {in: b.out0}}\n"
                 "  - {name: s, op: Sink, inputs: {in: b.out1}}\n"
                 "  - {name: raddr, op: Source, params: {stream: raddr}}\n"
                 "  - {name: g, op: RandomOffChipLoad, params: {tensor: f, tile: [4, 32]}, inputs: {raddr: raddr}}\n"
                 "  - {name: gb, op: Broadcast, inputs: {in: g}}\n"
                 "  - {name: gs, op: Sink, inputs: {in: gb.out0}}\n"
                 "  - {name: waddr, op: Source, params: {stream: waddr}}\n"
                 "  - {name: sc, op: RandomOffChipStore, params: {tensor: f, tile: [4, 32]}, inputs: {waddr: waddr, "
                 "wdata: gb.out1}}\n"
                 "  - {name: acks, op: Sink, inputs: {in: sc}}\n",
       {{"s", "ld.out"}, {"gs", "g.out"}, {"acks", "sc.out"}},
       {"LinearOffChipLoad", "LinearOffChipStore", "RandomOffChipLoad", "RandomOffChipStore"}},
      {"sources",
       "streams:\n"
       "  lit: '1 2 S1 3 S2 S2 D'\n"
       "  rep: {repeat: 'T[2x2:fp32]', count: 3, rank: 1}\n"
       "  sel: '{0} {1,3} D'\n"
       "nodes:\n"
       "  - {name: lit, op: Source, params: {stream: lit}, outputs: 2}\n"
       "  - {name: s0, op: Sink, inputs: {in: lit.out0}}\n"
       "  - {name: s1, op: Sink, inputs: {in: lit.out1}}\n"
       "  - {name: rep, op: Source, params: {stream: rep}}\n"
       "  - {name: s2, op: Sink, inputs: {in: rep}}\n"
       "  - {name: sel, op: Source, params: {stream: sel}}\n"
       "  - {name: s3, op: Sink, inputs: {in: sel}}\n",
       {{"s0", "lit.out0"}, {"s1", "lit.out1"}, {"s2", "rep.out0"}, {"s3", "sel.out0"}},
       {"Source", "Sink"}},
      {"streamify, static repeat",
       "streams:\n"
       "  x: 'T[2x2] T[2x2] S1 T[2x2] T[2x2] S2 D'\n"
       "nodes:\n"
       "  - {name: x, op: Source, params: {stream: x}}\n"
       "  - {name: buf, op: Bufferize, params: {rank: 1}, inputs: {in: x}}\n"
       "  - {name: rep, op: Streamify, params: {repeat: [3]}, inputs: {in: buf}}\n"
       "  - {name: s, op: Sink, inputs: {in: rep}}\n",
       {{"s", "rep.out"}},
       {"Bufferize", "Streamify"}},
      {"streamify, two repeat factors and an affine view",
       "streams:\n"
       "  x: '1 2 3 4 S1 D'\n"
       "nodes:\n"
       "  - {name: x, op: Source, params: {stream: x}}\n"
       "  - {name: buf, op: Bufferize, params: {rank: 1}, inputs: {in: x}}\n"
       "  - {name: rep, op: Streamify, params: {repeat: [2, 3], out_shape: [2, 2], stride: [2, 1]}, inputs: {in: "
       "buf}}\n"
       "  - {name: s, op: Sink, inputs: {in: rep}}\n",
       {{"s", "rep.out"}},
       {"Streamify"}},
      {"streamify driven by a ref",
       "streams:\n"
       "  x: '1 2 S1 3 4 S2 D'\n"
       "  ref: '0 0 S1 0 0 0 S2 D'\n"
       "nodes:\n"
       "  - {name: x, op: Source, params: {stream: x}}\n"
       "  - {name: buf, op: Bufferize, params: {rank: 1}, inputs: {in: x}}\n"
       "  - {name: ref, op: Source, params: {stream: ref}}\n"
       "  - {name: rep, op: Streamify, params: {rank: 1}, inputs: {in: buf, ref: ref}}\n"
       "  - {name: s, op: Sink, inputs: {in: rep}}\n",
       {{"s", "rep.out"}},
       {"Streamify"}},
      {"streamify of ragged buffers",
       "streams:\n"
       "  x: '1 2 3 S1 4 S2 D'\n"
       "nodes:\n"
       "  - {name: x, op: Source, params: {stream: x}}\n"
       "  - {name: buf, op: Bufferize, params: {rank: 1}, inputs: {in: x}}\n"
       "  - {name: rep, op: Streamify, params: {repeat: [2]}, inputs: {in: buf}}\n"
       "  - {name: s, op: Sink, inputs: {in: rep}}\n",
       {{"s", "rep.out"}},
       {"Streamify"}},
      {"retile_streamify_row_filter (needs mask values: functional)",
       tensors +
           "nodes:\n"
           "  - {name: x, op: LinearOffChipLoad, params: {tensor: a, tile: [8, 64], out_shape: [2], stride: [1]}}\n"
           "  - {name: m, op: LinearOffChipLoad, params: {tensor: m, tile: [8, 1], out_shape: [2], stride: [0]}}\n"
           "  - {name: rows, op: FlatMap, params: {fn: retile_streamify_row_filter, rank: 1}, inputs: {in0: x, in1: "
           "m}}\n"
           "  - {name: s, op: Sink, inputs: {in: rows}}\n",
       {{"s", "rows.out"}},
       {"FlatMap"},
       true},
      {"TopK selectors and masks (routes by value: functional)",
       tensors +
           "nodes:\n"
           "  - {name: x, op: LinearOffChipLoad, params: {tensor: f, tile: [1, 32], out_shape: [4, 4]}}\n"
           "  - {name: top, op: TopK, params: {k: 2}, inputs: {in: x}}\n"
           "  - {name: s, op: Sink, inputs: {in: top.sel}}\n"
           "  - {name: m, op: Sink, inputs: {in: top.mask}}\n",
       {{"s", "top.sel"}, {"m", "top.mask"}},
       {"TopK"},
       true},
      {"TopK selector only, rank 1",
       tensors +
           "nodes:\n"
           "  - {name: x, op: LinearOffChipLoad, params: {tensor: f, tile: [1, 32]}}\n"
           "  - {name: top, op: TopK, params: {k: 32}, inputs: {in: x}}\n"
           "  - {name: s, op: Sink, inputs: {in: top.sel}}\n",
       {{"s", "top.sel"}},
       {"TopK"},
       true},
  };
}

void check_graph(const GraphCase& c) {
  SCOPED_TRACE(c.name);
  Graph g = parse_graph(c.yaml, c.name, ".", {});
  SimOptions opt;
  opt.hw = hw();
  opt.functional = c.functional;
  SimResult r = simulate(g, opt);
  ASSERT_TRUE(r.ok) << r.error;
  SymbolTable syms;
  GraphTypes t = infer_types(g, syms);
  for (const auto& [sink, ref] : c.checks) {
    const std::string node = ref.substr(0, ref.find('.')), port = ref.substr(ref.find('.') + 1);
    ASSERT_TRUE(t.nodes.at(node).outputs.count(port)) << ref;
    expect_matches(t.nodes.at(node).outputs.at(port), r.recorded.at(sink), syms, ref);
  }
}

void check_category(OpCategory category) {
  size_t n = 0;
  for (const Case& c : eval_cases())
    if (OpRegistry::instance().find(c.op).category == category) {
      check_eval(c);
      ++n;
    }
  for (const GraphCase& c : graph_cases()) {
    bool in = false;
    for (const std::string& op : c.ops) in = in || OpRegistry::instance().find(op).category == category;
    if (in) {
      check_graph(c);
      ++n;
    }
  }
  EXPECT_GT(n, 0u) << "no case for category " << category_name(category);
}

TEST(Rules, EveryOperatorHasARuleAndCases) {
  std::map<std::string, size_t> cases;
  for (const Case& c : eval_cases()) ++cases[c.op];
  for (const GraphCase& c : graph_cases())
    for (const std::string& op : c.ops) ++cases[op];
  for (const OpInfo* op : OpRegistry::instance().all()) {
    EXPECT_NE(find_shape_rule(op->name), nullptr) << op->name << " has no shape rule in sim/shape/rules.cpp";
    EXPECT_GE(cases[op->name], op->name == "Sink" ? 1u : 2u) << op->name << " has too few cases in this test";
  }
  EXPECT_EQ(find_shape_rule("NoSuchOp"), nullptr);
}

// One test per category: a new category needs its own line here.
static_assert(kNumOpCategories == 7, "every category has a test below");
TEST(Rules, ShapeOperatorsMatchTheSimulator) { check_category(OpCategory::kShape); }
TEST(Rules, RoutingOperatorsMatchTheSimulator) { check_category(OpCategory::kRouting); }
TEST(Rules, OnChipMemoryOperatorsMatchTheSimulator) { check_category(OpCategory::kOnChipMemory); }
TEST(Rules, HigherOrderOperatorsMatchTheSimulator) { check_category(OpCategory::kHigherOrder); }
TEST(Rules, OffChipMemoryOperatorsMatchTheSimulator) { check_category(OpCategory::kOffChipMemory); }
TEST(Rules, SourceAndSinkMatchTheSimulator) { check_category(OpCategory::kSourceSink); }
TEST(Rules, AddressGenerationMatchesTheSimulator) { check_category(OpCategory::kAddressGeneration); }

}  // namespace
}  // namespace stepsim::shape
