// Bad inputs through the real `stepsim` binary: every one must exit non-zero with a message that
// names the problem (the file, node, port, parameter, key or value at fault), never crash, hang
// or leave a report behind.
#include "testbench/cli/cli_fixture.h"

namespace {

using namespace stepsim_cli_test;

TEST_F(Cli, GoodGraphRunsAndWritesItsReport) {
  const std::string g = write("good.yaml", kGood), rep = path("good.json");
  CliRun r = stepsim({"run", g, "--report", rep});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("cycles"), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(rep));
  std::ifstream f(rep);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("cycles"), std::string::npos);
  EXPECT_FALSE(fs::exists(rep + ".tmp"));
}

TEST_F(Cli, MissingGraphFile) {
  expect_failure(stepsim({"run", path("nope.yaml")}), {"cannot open graph file", "nope.yaml"});
  expect_failure(stepsim({"run"}), {"run needs a graph file"});
}

TEST_F(Cli, MalformedYaml) {
  const std::string g = write("broken.yaml", "nodes: [ {name: a\n");
  expect_failure(stepsim({"run", g}), {"broken.yaml:2:1:", "end of map flow not found"});
  const std::string list = write("list.yaml", "- just\n- a list\n");
  expect_failure(stepsim({"run", list}), {"list.yaml", "nodes:"});
}

TEST_F(Cli, UnknownTopLevelAndNodeKeys) {
  expect_failure(stepsim({"run", write("top.yaml", "nodez: []\n")}),
                 {"top.yaml:1:1:", "unknown key 'nodez' in the graph"});
  const std::string g = write("key.yaml", replace(kGood, "inputs: {in: m}}", "inputs: {in: m}, colour: red}"));
  expect_failure(stepsim({"run", g}), {"key.yaml", "node 'sink'", "unknown key 'colour'"});
}

TEST_F(Cli, UnknownOperatorNamesTheNodeAndTheKnownOperators) {
  const std::string g = write("op.yaml", replace(kGood, "op: Map", "op: Mapp"));
  expect_failure(stepsim({"run", g}), {"op.yaml", "node 'm'", "unknown operator 'Mapp'", "known operators", "Map,"});
}

TEST_F(Cli, UnknownParameter) {
  const std::string g = write("param.yaml", replace(kGood, "fn: silu}", "fn: silu, bogus: 3}"));
  expect_failure(stepsim({"run", g}), {"node 'm' (Map)", "unknown parameter 'bogus'", "fn"});
  const std::string missing = write("missing.yaml", replace(kGood, "params: {fn: silu}, ", ""));
  expect_failure(stepsim({"run", missing}), {"node 'm' (Map)", "missing required parameter 'fn'"});
}

TEST_F(Cli, BadParameterValues) {
  const std::string rep = replace(kGood, "op: Map, params: {fn: silu}, inputs: {in0: src}",
                                  "op: Repeat, params: {count: abc}, inputs: {in: src}");
  expect_failure(stepsim({"run", write("int.yaml", rep)}), {"node 'm' (Repeat)", "'count'", "int", "'abc'"});
  expect_failure(stepsim({"run", write("neg.yaml", replace(rep, "count: abc", "count: -2"))}),
                 {"count", "is -2, outside the allowed range 0..16777216"});
  expect_failure(stepsim({"run", write("fn.yaml", replace(kGood, "fn: silu", "fn: nosuchfn"))}),
                 {"unknown map function 'nosuchfn'", "silu"});
  expect_failure(
      stepsim({"run", write("depth.yaml", replace(kGood, "inputs: {in0: src}}", "inputs: {in0: src}, depth: 0}"))}),
      {"node 'm'", "depth must be an integer in 1..1048576, got '0'"});
  expect_failure(
      stepsim({"run", write("bw.yaml", replace(kGood, "inputs: {in0: src}}", "inputs: {in0: src}, compute_bw: -5}"))}),
      {"node 'm'", "compute_bw"});
}

TEST_F(Cli, InputReferringToAnUnknownNode) {
  const std::string g = write("ref.yaml", replace(kGood, "in0: src", "in0: nosrc"));
  expect_failure(stepsim({"run", g}), {"node 'm'", "input 'in0'", "unknown node 'nosrc'"});
}

TEST_F(Cli, UnknownPorts) {
  expect_failure(stepsim({"run", write("out.yaml", replace(kGood, "in0: src}", "in0: src.bogus}"))}),
                 {"node 'm'", "'src.bogus'", "no output 'bogus'", "outputs: out0.."});
  expect_failure(stepsim({"run", write("in.yaml", replace(kGood, "in0: src}", "inx: src}"))}),
                 {"node 'm' (Map)", "no input 'inx'", "inputs: in0.."});
}

TEST_F(Cli, UnconnectedRequiredInput) {
  const std::string g = write("open.yaml", replace(kGood, "inputs: {in: m}", "inputs: {}"));
  expect_failure(stepsim({"run", g}), {"node 'sink' (Sink)", "input 'in' is not connected"});
}

TEST_F(Cli, UnknownPreset) {
  const std::string g = write("good.yaml", kGood);
  expect_failure(stepsim({"run", g, "--preset", "nosuch"}), {"unknown preset 'nosuch'", "step-artifact"});
  const std::string bad = write("preset.yaml", "onchip_bw: [\n");
  expect_failure(stepsim({"run", g, "--preset", bad}), {"preset.yaml"});
}

TEST_F(Cli, BadSetKeyAndValue) {
  const std::string g = write("good.yaml", kGood);
  expect_failure(stepsim({"run", g, "--set", "bogus_key=3"}), {"--set bogus_key", "not a hardware parameter"});
  expect_failure(stepsim({"run", g, "--set", "nosuchnode.fn=3"}), {"nosuchnode.fn"});
  expect_failure(stepsim({"run", g, "--set", "onchip_bw=abc"}),
                 {"'onchip_bw'", "integer in 1..1099511627776", "'abc'"});
  expect_failure(stepsim({"run", g, "--set", "onchip_bw=0"}), {"'onchip_bw'", "integer in 1..1099511627776", "'0'"});
  expect_failure(stepsim({"run", g, "--set", "loads_sum_inputs=maybe"}), {"'loads_sum_inputs'", "true or false"});
  expect_failure(stepsim({"run", g, "--set", "onchip_bw"}), {"--set expects key=value", "'onchip_bw'"});
  expect_failure(stepsim({"run", g, "--set", "m.fn=xyz"}), {"unknown map function 'xyz'"});
}

TEST_F(Cli, BadOptions) {
  const std::string g = write("good.yaml", kGood);
  expect_failure(stepsim({"run", g, "--shuffle", "abc"}), {"--shuffle", "non-negative integer", "'abc'"});
  expect_failure(stepsim({"run", g, "--mode", "fast"}), {"--mode", "timing or functional", "'fast'"});
  expect_failure(stepsim({"run", g, "--bogus"}), {"unknown option '--bogus'"});
  expect_failure(stepsim({"run", g, "--report"}), {"--report needs a value"});
  CliRun r = stepsim({"frobnicate"});
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("unknown command 'frobnicate'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("usage:"), std::string::npos) << r.output;
}

const std::string kTraceGraph =
    "streams:\n"
    "  sel: {trace: TRACE, kind: selector}\n"
    "nodes:\n"
    "  - {name: src, op: Source, params: {stream: sel}}\n"
    "  - {name: sink, op: Sink, inputs: {in: src}}\n";

TEST_F(Cli, MissingTraceFile) {
  const std::string g = write("t.yaml", replace(kTraceGraph, "TRACE", "no_such_trace.csv"));
  expect_failure(stepsim({"run", g}), {"t.yaml", "stream 'sel'", "cannot open trace file", "no_such_trace.csv"});
}

TEST_F(Cli, MalformedTraceCsv) {
  write("short.csv", "expert0,expert1\n1,2\n3\n");
  const std::string g = write("t.yaml", replace(kTraceGraph, "TRACE", "short.csv"));
  expect_failure(stepsim({"run", g}), {"stream 'sel'", "short.csv:3", "expected 2 columns, found 1"});
  write("word.csv", "expert0,expert1\n1,x\n");
  const std::string g2 = write("t2.yaml", replace(kTraceGraph, "TRACE", "word.csv"));
  expect_failure(stepsim({"run", g2}), {"word.csv", "'x' is not an integer"});
  write("nocol.csv", "token,weight\n1,2\n");
  const std::string g3 = write("t3.yaml", replace(kTraceGraph, "TRACE", "nocol.csv"));
  expect_failure(stepsim({"run", g3}), {"nocol.csv", "no columns starting with 'expert'"});
}

TEST_F(Cli, DeadlockFailsNamesTheBlockedNodesAndWritesNoReport) {
  const std::string g = write("dead.yaml",
                              "nodes:\n"
                              "  - {name: ping, op: Map, params: {fn: silu}, inputs: {in0: pong}}\n"
                              "  - {name: pong, op: Map, params: {fn: silu}, inputs: {in0: ping}}\n");
  const std::string rep = path("dead.json"), trace = path("dead.trace.json");
  // A report from an earlier run must not survive to look like this run's.
  write("dead.json", "{\"cycles\": 6}\n");
  CliRun r = stepsim({"run", g, "--report", rep, "--trace", trace});
  expect_failure(r, {"deadlock", "node 'ping' (Map)", "node 'pong' (Map)", "'pong.out->ping.in0' (empty)",
                     "'ping.out->pong.in0' (empty)"});
  EXPECT_EQ(r.status, 1);
  EXPECT_FALSE(fs::exists(rep)) << "a failed run left a report behind";
  EXPECT_FALSE(fs::exists(rep + ".tmp"));
  EXPECT_FALSE(fs::exists(trace));
  // The same for a graph that does not even load.
  write("dead.json", "{\"cycles\": 6}\n");
  expect_failure(stepsim({"run", write("bad.yaml", "nodez: []\n"), "--report", rep}), {"nodez"});
  EXPECT_FALSE(fs::exists(rep));
}

TEST_F(Cli, ShapeMismatchNamesNodeBothEndsAndBothShapes) {
  const std::string g = write("shape.yaml",
                              "streams:\n"
                              "  a: 'T[16x64] S1 D'\n"
                              "  b: 'T[32x16] S1 D'\n"
                              "nodes:\n"
                              "  - {name: a, op: Source, params: {stream: a}}\n"
                              "  - {name: b, op: Source, params: {stream: b}}\n"
                              "  - {name: mm, op: Map, params: {fn: matmul}, inputs: {in0: a, in1: b}}\n"
                              "  - {name: sink, op: Sink, inputs: {in: mm}}\n");
  const std::string rep = path("shape.json");
  // A run checks the graph as analyze does, before anything runs: the error names both producers.
  CliRun r = stepsim({"run", g, "--report", rep});
  expect_failure(r, {"node 'mm' (Map)", "matmul", "inner dimensions 64 and 32 differ", "T[16x64:bf16]", "T[32x16:bf16]",
                     "'a.out0'", "'b.out0'"});
  EXPECT_FALSE(fs::exists(rep));
  expect_failure(stepsim({"analyze", g}), {"node 'mm' (Map)", "inner dimensions 64 and 32 differ"});
  // eval runs the operator on the streams without that check: its own run-time check names the
  // channels the tiles came on.
  expect_failure(stepsim({"eval", "Map", "--param", "fn=matmul", "--in", "T[16x64] S1 D", "--in", "T[32x16] S1 D"}),
                 {"node 'op' (Map)", "inner dimensions differ", "T[16x64]", "T[32x16]", "on channel"});
}

TEST_F(Cli, EvalBadInputs) {
  expect_failure(stepsim({"eval", "Mapp", "--in", "T[16x64] D"}), {"unknown operator 'Mapp'", "known operators"});
  expect_failure(stepsim({"eval", "Map", "--param", "fn=silu", "--in", "T[16x64] S9x D"}),
                 {"--in 'T[16x64] S9x D'", "cannot parse 'S9x'"});
  expect_failure(stepsim({"eval", "Map", "--param", "fn=silu", "--in", "T[16x64] 1 2"}),
                 {"--in 'T[16x64] 1 2'", "done token D"});
  expect_failure(stepsim({"eval", "Map", "--param", "fn=silu", "--in", "T[16x64 D"}), {"--in", "T[16x64"});
  expect_failure(stepsim({"eval", "Map", "--param", "fn=silu", "--in", "T[16x64] D", "--outputs", "x"}),
                 {"--outputs", "'x'"});
  expect_failure(stepsim({"eval", "Map", "--param", "fn", "--in", "T[16x64] D"}), {"--param expects key=value"});
  expect_failure(stepsim({"eval"}), {"eval needs an operator name"});
  // A well-formed eval still works.
  CliRun ok = stepsim({"eval", "Map", "--param", "fn=silu", "--in", "T[16x64] S1 D"});
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("out: T[16x64] S1 D"), std::string::npos) << ok.output;
}

TEST_F(Cli, AGraphErrorUnderCosimulationIsNotBlamedOnTheUnits) {
  // Only a Promote is on a unit; the Map's error is the graph's own (the all-approximate run fails
  // the same way), so it reads as in a plain run, without a "co-simulation" prefix.
  const std::string g = write("tap.yaml",
                              "streams:\n  a: 'T[2x4] T[2x4] S1 D'\nnodes:\n"
                              "  - {name: a, op: Source, params: {stream: a}}\n"
                              "  - {name: f, op: Promote, inputs: {in: a}, impl: hls}\n"
                              "  - {name: m, op: Map, params: {fn: matmul}, inputs: {in0: f, in1: f}}\n"
                              "  - {name: k, op: Sink, inputs: {in: m}}\n");
  const CliRun r = stepsim({"run", g});
  expect_failure(r, {"error: node 'm' (Map): matmul: T[2x4:bf16] x T[2x4:bf16]: inner dimensions 4 and 2 differ"});
  EXPECT_EQ(r.output.find("co-simulation"), std::string::npos) << r.output;
}

TEST_F(Cli, ARunRejectsWhatAnalyzeRejectsWithItsError) {
  // A run checks the graph as `stepsim analyze` does before it elaborates anything: the error
  // names both producers and both shapes, and nothing runs.
  const std::string g = write("mismatch.yaml",
                              "streams:\n  a: 'T[2x4] T[2x4] S1 D'\n  b: 'T[2x4] T[2x4] T[2x4] S1 D'\nnodes:\n"
                              "  - {name: a, op: Source, params: {stream: a}}\n"
                              "  - {name: b, op: Source, params: {stream: b}}\n"
                              "  - {name: m, op: Map, params: {fn: add}, inputs: {in0: a, in1: b}}\n"
                              "  - {name: k, op: Sink, inputs: {in: m}}\n");
  expect_failure(
      stepsim({"run", g}),
      {"error: node 'm' (Map): inputs must have the same shape: in0 from "
       "'a.out0' is [1, 2] of T[2x4:bf16], in1 from 'b.out0' is [1, 3] of T[2x4:bf16] (dimension 0: 2 vs 3)\n"});
}

}  // namespace
