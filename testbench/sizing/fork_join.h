// The sizing tests' fork-join: a row of N elements, one copy straight into a Zip, the other
// through a Bufferize of the whole row. The direct copy must hold all N elements before the last
// one reaches the Bufferize, so its channel deadlocks below depth N.
#pragma once

#include <string>

namespace stepsim::sizing_test {

// `streams:` with `row`: 1 .. n, one stop, done.
inline std::string row_stream(int n) {
  std::string row;
  for (int k = 1; k <= n; ++k) row += std::to_string(k) + " ";
  return "streams:\n  row: '" + row + "S1 D'\n";
}

// An explicit Broadcast: out0 (the direct copy) is served first.
inline std::string fork_join_graph(int n) {
  return "name: fork_join\n" + row_stream(n) +
         "nodes:\n"
         "  - {name: src, op: Source, params: {stream: row}}\n"
         "  - {name: bc, op: Broadcast, inputs: {in: src}}\n"
         "  - {name: buf, op: Bufferize, params: {rank: 1}, inputs: {in: bc.out1}}\n"
         "  - {name: replay, op: Streamify, inputs: {in: buf}}\n"
         "  - {name: zip, op: Zip, inputs: {in0: bc.out0, in1: replay}}\n"
         "  - {name: sink, op: Sink, inputs: {in: zip}}\n";
}

}  // namespace stepsim::sizing_test
