// The graph loader and the parameter readers at the door (issue "trust at the edges"): strict
// YAML, 64-bit integers with ranges, host limits. Each test is a case that was once accepted
// silently, crashed or ran out of memory.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "hw/ops/op.h"
#include "hw/presets/hardware.h"
#include "hw/stream/number_text.h"
#include "sim/graph/graph_writer.h"
#include "sim/graph/host_limits.h"
#include "sim/graph/loader.h"

namespace stepsim {
namespace {

Graph load(const std::string& yaml, const std::vector<std::pair<std::string, std::string>>& sets = {}) {
  return parse_graph(yaml, "g.yaml", ".", sets);
}

// The loader's message for `yaml`, or "loaded" when it was accepted.
std::string load_error(const std::string& yaml, const std::vector<std::pair<std::string, std::string>>& sets = {}) {
  try {
    load(yaml, sets);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "loaded";
}

const std::string kHead = "streams:\n  s: '1 2 3 D'\nnodes:\n  - {name: src, op: Source, params: {stream: s}}\n";

TEST(NumberText, ReadsWhole64BitDecimalsAndNothingElse) {
  int64_t v = 0;
  EXPECT_TRUE(parse_int64("4294967296", v));
  EXPECT_EQ(v, int64_t(1) << 32);  // not cut to 32 bits
  EXPECT_TRUE(parse_int64("010", v));
  EXPECT_EQ(v, 10);  // decimal, not octal
  EXPECT_TRUE(parse_int64("-9223372036854775808", v));
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_TRUE(parse_int64("0x10", v));
  EXPECT_EQ(v, 16);
  for (const char* bad : {"", "-", "9223372036854775808", "12345678901234567890123", "1e3", "1.5", " 1", "1 ", "--1",
                          "+-1", "0x", "abc", "4294967296x"})
    EXPECT_FALSE(parse_int64(bad, v)) << bad;
}

TEST(NumberText, ReadsFiniteDecimalsAndNothingElse) {
  double v = 0;
  EXPECT_TRUE(parse_finite_double("1e-3", v));
  EXPECT_EQ(v, 0.001);
  EXPECT_TRUE(parse_finite_double("-2.5", v));
  EXPECT_EQ(v, -2.5);
  for (const char* bad : {"", "nan", "inf", "-inf", "1e999", "1e-999", "1x", " 1", "1 ", ".", "0x", "--1"})
    EXPECT_FALSE(parse_finite_double(bad, v)) << bad;
}

TEST(Parameters, NegativeAndWideRanksAreRejectedWithTheRange) {
  // Once a segmentation fault (rank -1) and a silent rank 0 (2^32 cut to 32 bits).
  for (const char* op : {"Partition", "Parallelize", "EagerMerge"})
    for (const char* rank : {"-1", "4294967296", "16"}) {
      const std::string yaml =
          kHead + "  - {name: r, op: " + op + ", params: {rank: " + rank + "}, inputs: {in0: src}}\n";
      EXPECT_EQ(load_error(yaml), std::string("g.yaml: node 'r' (") + op + "): parameter 'rank' is " + rank +
                                      ", outside the allowed range 0..15");
    }
  EXPECT_EQ(load_error(kHead + "  - {name: r, op: Reassemble, params: {rank: 15}, inputs: {sel: src}}\n"),
            "g.yaml: node 'r' (Reassemble): parameter 'rank' is 15, outside the allowed range 0..14");
}

TEST(Parameters, EveryRegisteredDefaultIsInsideItsRange) {
  for (const OpInfo* op : OpRegistry::instance().all()) {
    std::map<std::string, std::string> required;
    for (const ParamSpec& p : op->params)
      if (p.required)
        required[p.name] = p.type == ParamSpec::Type::kIntList ? "[1, 1]" : p.type == ParamSpec::Type::kInt ? "1" : "x";
    EXPECT_NO_THROW(Params(op->name, "n", &op->params, required)) << op->name;
  }
}

TEST(Parameters, SourceIntervalAndRepeatCountAreBounded) {
  // A negative interval once reported 18446744073709551615 cycles; a count of 2e9 ran out of memory.
  EXPECT_EQ(load_error(kHead, {{"src.interval", "-1"}}),
            "g.yaml: node 'src' (Source): parameter 'interval' is -1, outside the allowed range 0..1073741824");
  EXPECT_EQ(load_error(kHead + "  - {name: r, op: Repeat, params: {count: 2000000000}, inputs: {in: src}}\n"),
            "g.yaml: node 'r' (Repeat): parameter 'count' is 2000000000, outside the allowed range 0..16777216");
  EXPECT_EQ(load_error(kHead + "  - {name: r, op: Reshape, params: {chunk: 99999999999}, inputs: {in: src}}\n"),
            "g.yaml: node 'r' (Reshape): parameter 'chunk' is 99999999999, outside the allowed range 1..16777216");
  EXPECT_EQ(load_error(kHead + "  - {name: r, op: Streamify, params: {out_shape: [2, -1], stride: [1, 1]}, inputs: "
                               "{in: src}}\n"),
            "g.yaml: node 'r' (Streamify): parameter 'out_shape' entry 1 is -1, outside the allowed range "
            "0..1099511627776");
}

TEST(StrictYaml, RepeatedKeysAnywhereAreErrors) {
  // Each of these once dropped an entry silently.
  EXPECT_EQ(load_error(kHead + "  - {name: k, op: Sink, inputs: {in: src, in: src}}\n"),
            "g.yaml:5:43: duplicate key 'in' (first given at line 5)");
  EXPECT_EQ(load_error(kHead + "  - {name: m, op: Map, params: {fn: silu, fn: exp}, inputs: {in0: src}}\n"),
            "g.yaml:5:43: duplicate key 'fn' (first given at line 5)");
  EXPECT_EQ(load_error(kHead + "nodes:\n  - {name: x, op: Sink}\n"),
            "g.yaml:5:1: duplicate key 'nodes' (first given at line 3)");
  EXPECT_EQ(load_error(kHead + "  - {name: src, op: Sink, inputs: {in: src}}\n"),
            "g.yaml:5:12: duplicate node name 'src' (first given at line 4)");
}

TEST(StrictYaml, WrongTypesAndUnknownKeysNameTheirPlace) {
  EXPECT_EQ(load_error(kHead + "  - {name: k, op: Sink, inputs: {in: src}, depth: [1]}\n"),
            "g.yaml:5:51: node 'k' depth must be a single value, got a list");
  EXPECT_EQ(load_error(kHead + "  - {name: [k], op: Sink}\n"), "g.yaml:5:12: name must be a single value, got a list");
  EXPECT_EQ(load_error("streams:\n  s: {repeat: '1', count: 2, colour: red}\nnodes: []\n"),
            "g.yaml:2:30: unknown key 'colour' in stream 's' (expected repeat, count, rank)");
  EXPECT_EQ(load_error("tensors:\n  x: {shape: [4, 4], init: random, file: a.npy}\nnodes: []\n"),
            "g.yaml: tensor 'x': 'file:' is read only with init: file (init is random)");
}

TEST(StrictYaml, AGraphParameterSetToTextIsNamedWhereItIsUsed) {
  // Once "yaml-cpp: error at line 10, column 15: bad conversion".
  const std::string yaml = "params:\n  n: 4\nstreams:\n  s: {repeat: '1', count: '${n}'}\nnodes: []\n";
  EXPECT_EQ(load_error(yaml, {{"n", "abc"}}), "g.yaml:4:27: count must be an integer in 0..16777216, got 'abc'");
  EXPECT_EQ(load(yaml, {{"n", "7"}}).streams.at("s").size(), 7u);  // 7 elements, D on the last beat
}

TEST(NodeKeys, InputDepthIsReadCheckedAndWrittenBack) {
  const Graph g = load(kHead + "  - {name: k, op: Sink, inputs: {in: src}, input_depth: {in: 7}}\n");
  EXPECT_EQ(g.find("k")->input_depth, (std::map<std::string, uint32_t>{{"in", 7}}));
  const Graph again = parse_graph(graph_to_yaml(g), "w.yaml", ".", {});
  EXPECT_EQ(again.find("k")->input_depth, g.find("k")->input_depth);
  EXPECT_EQ(load_error(kHead + "  - {name: k, op: Sink, inputs: {in: src}, input_depth: {in0: 7}}\n"),
            "g.yaml:5:58: node 'k' input_depth names 'in0', which is not one of its inputs");
  EXPECT_EQ(load_error(kHead + "  - {name: k, op: Sink, inputs: {in: src}, input_depth: {in: 0}}\n"),
            "g.yaml:5:62: node 'k' input_depth.in must be an integer in 1..1048576, got '0'");
  EXPECT_EQ(load_error(kHead + "  - {name: k, op: Sink, inputs: {in: src}, input_depth: 7}\n"),
            "g.yaml:5:57: node 'k' input_depth must be a mapping, got '7'");
}

TEST(HostLimits, FieldsThatSizeMemoryAreBoundedBeforeAnythingIsAllocated) {
  // depth 1e9 once ended in std::bad_alloc naming no node.
  EXPECT_EQ(load_error(kHead + "  - {name: k, op: Sink, inputs: {in: src}, depth: 1000000000}\n"),
            "g.yaml:5:51: node 'k' depth must be an integer in 1..1048576, got '1000000000'");
  EXPECT_EQ(load_error(kHead + "  - {name: k, op: Sink, inputs: {in: src.out300}}\n"),
            "g.yaml: node 'k': input 'in': port 'out300': numbered ports go from 0 to 255");
  EXPECT_EQ(load_error("tensors:\n  x: {shape: [4294967296, 4294967296]}\nnodes: []\n"),
            "g.yaml: tensor 'x': shape [4294967296, 4294967296] has more elements than the limit of 1099511627776");
  EXPECT_EQ(load_error("streams:\n  s: {repeat: '1', count: 2000000000}\nnodes: []\n"),
            "g.yaml:2:27: count must be an integer in 0..16777216, got '2000000000'");
}

TEST(HostLimits, TheMemoryEstimateRefusesARunAboveTheLimit) {
  std::string yaml = kHead;
  yaml.replace(yaml.find("s}}"), 3, "s}, outputs: 4, depth: 1000000}");
  for (int k = 0; k < 4; ++k)
    yaml += "  - {name: k" + std::to_string(k) + ", op: Sink, inputs: {in: src.out" + std::to_string(k) + "}}\n";
  const Graph g = load(yaml);
  HardwareParams hw;
  const HostMemoryEstimate e = estimate_host_memory(g, hw, false);
  EXPECT_EQ(e.channel_bytes, 4 * uint64_t(1000000) * (sizeof(Beat) + 24));
  // A consumer's input_depth counts for its channel instead of the producer's depth.
  yaml.replace(yaml.find("src.out3}}"), 10, "src.out3}, input_depth: {in: 3000000}}");
  EXPECT_NE(load_error(yaml), "loaded");  // above the largest depth
  yaml.replace(yaml.find("3000000"), 7, "1048576");
  EXPECT_EQ(estimate_host_memory(load(yaml), hw, false).channel_bytes,
            (3 * uint64_t(1000000) + 1048576) * (sizeof(Beat) + 24));
  ::setenv("STEPSIM_HOST_MEMORY_LIMIT", "100M", 1);
  try {
    check_host_memory(g, hw, false);
    ADD_FAILURE() << "a run needing " << e.total() << " B passed a limit of 100 MiB";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("g.yaml: the run would need "), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("more than the limit of 100 MiB"), std::string::npos) << err.what();
  }
  ::setenv("STEPSIM_HOST_MEMORY_LIMIT", "1G", 1);
  EXPECT_NO_THROW(check_host_memory(g, hw, false));
  ::setenv("STEPSIM_HOST_MEMORY_LIMIT", "lots", 1);
  EXPECT_THROW(host_memory_limit(), std::invalid_argument);
  ::unsetenv("STEPSIM_HOST_MEMORY_LIMIT");
  EXPECT_EQ(host_memory_limit(), uint64_t(16) << 30);
}

TEST(HostLimits, FunctionalRunsCountTheTensorsTheyHoldNotTheRandomOnesTheyRead) {
  // 2^34 random weights (128 GiB at 8 B each) are made as tiles read them: no memory up front.
  // The tensor a store writes is held (its bytes, then its values for the .npy).
  const Graph g = load(
      "tensors:\n"
      "  w: {shape: [131072, 131072], dtype: bf16, init: random, seed: 1}\n"
      "  y: {shape: [64, 64], dtype: bf16, init: output}\n"
      "nodes:\n"
      "  - {name: ld, op: LinearOffChipLoad, params: {tensor: w, tile: [64, 64], out_shape: [1]}}\n"
      "  - {name: st, op: LinearOffChipStore, params: {tensor: y, tile: [64, 64]}, inputs: {in: ld}}\n");
  HardwareParams hw;
  EXPECT_EQ(estimate_host_memory(g, hw, true).tensor_bytes, 64u * 64u * 8u);
  EXPECT_EQ(estimate_host_memory(g, hw, false).tensor_bytes, 0u);
  EXPECT_NO_THROW(check_host_memory(g, hw, true));
}

TEST(HardwareParameters, EveryIntegerFieldHasARangeThatFitsItsType) {
  HardwareParams h;
  for (const auto& f : HardwareParams::fields()) {
    if (!f.max) continue;
    EXPECT_NO_THROW(h.set(f.key, std::to_string(f.max))) << f.key;
    EXPECT_EQ(h.to_map().at(f.key), std::to_string(f.max)) << f.key << " was cut to its type";
    try {
      h.set(f.key, std::to_string(f.max + 1));
      ADD_FAILURE() << f.key << " accepted " << f.max + 1;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "hardware parameter '" + f.key + "': expected an integer in " +
                                           std::to_string(f.min) + ".." + std::to_string(f.max) + ", got '" +
                                           std::to_string(f.max + 1) + "'");
    }
  }
  EXPECT_THROW(h.set("hbm.channels", "1000000000"), std::invalid_argument);  // once grew to 24 GB
  EXPECT_THROW(h.set("fifo_depth", "4294967297"), std::invalid_argument);    // once cut to 1
}

}  // namespace
}  // namespace stepsim
