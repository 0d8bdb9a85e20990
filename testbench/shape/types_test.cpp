// Symbolic stream types (sim/shape/stream_type.h), the symbol table and graph inference
// (sim/shape/infer.h): exact shapes, messages and symbol values.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "sim/graph/loader.h"
#include "sim/shape/infer.h"
#include "sim/shape/metrics.h"

namespace stepsim::shape {
namespace {

StreamType lit(const std::string& text) { return literal_type(to_beats(parse_tokens(text))); }

TEST(StreamTypes, LiteralTypesCountTheTopLevelUnits) {
  EXPECT_EQ(lit("1 2 3 S1 D").str(), "[1, 3] of scalar");
  EXPECT_EQ(lit("1 2 3 D").str(), "[3] of scalar");
  EXPECT_EQ(lit("D").str(), "[0] of scalar");
  EXPECT_EQ(lit("S1 D").str(), "[1, 0] of scalar");
  EXPECT_EQ(lit("T[16x64] T[16x64] S1 T[16x64] T[16x64] S1 D").str(), "[2, 2] of T[16x64:bf16]");
  EXPECT_EQ(lit("{0} {1,3} S1 D").str(), "[1, 2] of selector");
  EXPECT_EQ(lit("(1,T[2x2:fp32]) D").str(), "[1] of (scalar, T[2x2:fp32])");
  // A ragged dimension's size is its sum over the outer indices.
  StreamType r = lit("1 2 S1 3 S2 4 S1 5 6 7 S2 D");
  EXPECT_EQ(r.str(), "[2, 2, 7~] of scalar");
  EXPECT_EQ(r.dims[2].kind, DimKind::Ragged);
  EXPECT_EQ(r.dims[1].kind, DimKind::Static);
  EXPECT_EQ(to_string(r.card()), "7");
  EXPECT_EQ(lit("1 2 S1 S1 3 S1 D").str(), "[3, 3~] of scalar");        // the empty row counts
  EXPECT_EQ(lit("1 2 S1 S1 3 S1 S2 D").str(), "[1, 4, 3~] of scalar");  // a bare S2 after S1 ends an empty row
}

TEST(StreamTypes, CardinalityBytesAndDimensionIndex) {
  SymbolTable syms;
  const ex n = syms.get("n"), m = syms.get("m");
  StreamType t{{Dim::fixed(2), Dim{n, DimKind::Dynamic}, Dim::fixed(4)}, ElemType::tile(16, 64, DType::BF16)};
  EXPECT_EQ(to_string(t.card()), "8*n");
  EXPECT_EQ(t.str(), "[2, n, 4] of T[16x64:bf16]");
  EXPECT_EQ(to_string(t.dim(0).size), "4");  // paper index 0 = innermost
  EXPECT_EQ(to_string(t.dim(2).size), "2");
  // A ragged dim's symbol replaces everything outside it.
  StreamType r{{Dim::fixed(2), Dim{m, DimKind::Ragged}, Dim::fixed(4)}, ElemType::scalar()};
  EXPECT_EQ(to_string(r.card()), "4*m");
  EXPECT_EQ(to_string(t.elem.bytes()), "2048");
  EXPECT_EQ(to_string(ElemType::tile(n, 8, DType::FP32).bytes()), "32*n");
  EXPECT_EQ(to_string(ElemType::scalar().bytes()), "8");
  EXPECT_EQ(to_string(ElemType::selector().bytes()), "32");
  ElemType tup;
  tup.kind = ElemType::Tuple;
  tup.members = {ElemType::scalar(), ElemType::tile(2, 2, DType::INT32)};
  EXPECT_EQ(to_string(tup.bytes()), "24");
}

TEST(StreamTypes, DifferencesNameWhatDiffers) {
  SymbolTable syms;
  const ex n = syms.get("n");
  StreamType a{{Dim::fixed(1), Dim::fixed(4)}, ElemType::tile(1, 64, DType::BF16)};
  StreamType b = a;
  EXPECT_EQ(difference(a, b), "");
  b.dims[1].size = n;
  EXPECT_EQ(difference(a, b), "dimension 0: 4 vs n");
  b = a;
  b.dims.insert(b.dims.begin(), Dim::fixed(1));
  EXPECT_EQ(difference(a, b), "rank 2 vs 3");
  b = a;
  b.elem = ElemType::tile(1, 32, DType::BF16);
  EXPECT_EQ(difference(a, b), "element T[1x64:bf16] vs T[1x32:bf16]");
  b.elem = ElemType::tile(1, 64, DType::FP32);
  EXPECT_EQ(difference(a, b), "element T[1x64:bf16] vs T[1x64:fp32]");
  // Equal sizes written differently are the same size.
  EXPECT_TRUE(same_size(2 * n + 2, 2 * (n + 1)));
  EXPECT_FALSE(same_size(n, n + 1));
}

TEST(StreamTypes, CeilDivIsExactOnNumbersAndSymbolicOtherwise) {
  SymbolTable syms;
  const ex n = syms.get("n");
  EXPECT_EQ(to_string(ceil_div(7, 2)), "4");
  EXPECT_EQ(to_string(ceil_div(8, 2)), "4");
  EXPECT_EQ(to_string(ceil_div(0, 3)), "0");
  EXPECT_EQ(to_string(ceil_div(n, 1)), "n");
  EXPECT_EQ(to_string(ceil_div(n, 4)), "ceil_div(n,4)");
  syms.set_value("n", 9);
  EXPECT_EQ(to_string(evaluate(ceil_div(n, 4), syms)), "3");
}

// GiNaC orders sums by memory-dependent hashes; the printed text must not depend on that.
TEST(SymbolTables, PrintingDoesNotDependOnCreationOrder) {
  std::set<std::string> seen;
  for (int round = 0; round < 4; ++round) {
    SymbolTable t;
    std::vector<std::string> names = {"n_b", "n_a", "n_c", "k"};
    std::rotate(names.begin(), names.begin() + round, names.end());
    for (const std::string& n : names) t.get(n);
    seen.insert(to_string(t.parse("3*n_c + 2*n_a*k + ceil_div(n_b - 1, 4) + 7 + n_a")));
  }
  ASSERT_EQ(seen.size(), 1u) << *seen.begin();
  EXPECT_EQ(*seen.begin(), "ceil_div(n_b-1,4)+2*k*n_a+n_a+3*n_c+7");  // by symbolic part, constants last
}

TEST(SymbolTables, OneSymbolPerNameParsingAndValues) {
  SymbolTable syms;
  EXPECT_FALSE(syms.has("n"));
  const ex a = syms.get("n");
  EXPECT_TRUE(syms.has("n"));
  EXPECT_TRUE((a - syms.get("n")).is_zero());
  const ex e = syms.parse("2*n + k");
  EXPECT_EQ(syms.names(), (std::vector<std::string>{"k", "n"}));
  syms.set_value("n", 5);
  int64_t v = 0;
  EXPECT_FALSE(to_int(evaluate(e, syms), v)) << "k is unknown";
  syms.set_value("k", syms.parse("n - 1"));
  // Values are substituted once: k's value in n stays symbolic in n.
  EXPECT_EQ(to_string(evaluate(e, syms)), "n+9");
  syms.set_value("k", 3);
  ASSERT_TRUE(to_int(evaluate(e, syms), v));
  EXPECT_EQ(v, 13);
  EXPECT_EQ(to_string(evaluate(syms.parse("ceil_div(n, 2)"), syms)), "3");
  EXPECT_THROW(syms.parse("2 * (n"), std::invalid_argument);
  try {
    syms.parse("n +* 2");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot parse expression 'n +* 2'"), std::string::npos) << e.what();
  }
  // A function called with the wrong number of arguments is refused before GiNaC evaluates it
  // (it would read arguments that are not there: a fuzz finding).
  for (const char* text : {"ceil_div()", "ceil_div(n)", "ceil_div(n, 2, 3)", "1 + ceil_div( )"}) {
    try {
      syms.parse(text);
      FAIL() << text;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("no function ceil_div of "), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(to_string(evaluate(syms.parse("ceil_div(ceil_div(n, 2), (1))"), syms)), "3");
}

Graph graph(const std::string& yaml) { return parse_graph(yaml, "g.yaml", ".", {}); }

std::string shape_error(const std::string& yaml) {
  Graph g = graph(yaml);
  SymbolTable syms;
  try {
    infer_types(g, syms);
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Inference, PartitionOverLiteralSelectorsKnowsItsBins) {
  Graph g = graph(
      "streams:\n"
      "  x: 'T[1x8] T[1x8] T[1x8] T[1x8] S1 D'\n"
      "  sel: '{0} {2} {0,2} {0} S1 D'\n"
      "nodes:\n"
      "  - {name: x, op: Source, params: {stream: x}}\n"
      "  - {name: sel, op: Source, params: {stream: sel}}\n"
      "  - {name: b, op: Broadcast, inputs: {in: sel}}\n"
      "  - {name: p, op: Partition, inputs: {in: x, sel: b.out0}, outputs: 3}\n");
  SymbolTable syms;
  GraphTypes t = infer_types(g, syms);
  EXPECT_EQ(t.nodes.at("p").outputs.at("out0").str(), "[n_p_out0] of T[1x8:bf16]");
  EXPECT_EQ(t.nodes.at("p").outputs.at("out2").str(), "[n_p_out2] of T[1x8:bf16]");
  EXPECT_EQ(to_string(syms.values().at("n_p_out0")), "3");
  EXPECT_EQ(to_string(syms.values().at("n_p_out1")), "0");
  EXPECT_EQ(to_string(syms.values().at("n_p_out2")), "2");
  EXPECT_EQ(t.nodes.at("p").producers.at("sel"), "b.out0");
  EXPECT_EQ(t.order, (std::vector<std::string>{"x", "sel", "b", "p"}));
}

TEST(Inference, SymbolsSectionAndDimsAnnotations) {
  Graph g = graph(
      "symbols:\n"
      "  rows: 6\n"
      "streams:\n"
      "  x: 'T[1x8] T[1x8] S1 T[1x8] S1 D'\n"
      "  mask: 'T[1x1:int32] T[1x1:int32] S1 T[1x1:int32] S1 D'\n"
      "nodes:\n"
      "  - {name: x, op: Source, params: {stream: x}}\n"
      "  - {name: mask, op: Source, params: {stream: mask}}\n"
      "  - {name: f, op: FlatMap, params: {fn: retile_streamify_row_filter, rank: 1}, inputs: {in0: x, in1: mask},\n"
      "     dims: {out: ['', '', rows]}}\n"
      "  - {name: m, op: Map, params: {fn: silu}, inputs: {in0: f}}\n");
  SymbolTable syms;
  GraphTypes t = infer_types(g, syms);
  // Without the annotation the filtered rows are a fresh symbol; with it, `rows`.
  EXPECT_EQ(t.nodes.at("f").outputs.at("out").str(), "[2, 3~, rows~] of T[1x8:bf16]");
  EXPECT_EQ(t.nodes.at("m").inputs.at("in0").str(), "[2, 3~, rows~] of T[1x8:bf16]");
  EXPECT_EQ(to_string(evaluate(t.nodes.at("m").flops, syms)), "384");  // 6 tiles x 8 elements x 8 FLOPs
}

TEST(Inference, ErrorsNameTheNodesPortsAndShapes) {
  const std::string head =
      "streams:\n"
      "  a: 'T[2x4] T[2x4] S1 D'\n"
      "  b: 'T[2x4] T[2x4] T[2x4] S1 D'\n"
      "nodes:\n"
      "  - {name: a, op: Source, params: {stream: a}}\n"
      "  - {name: b, op: Source, params: {stream: b}}\n";
  EXPECT_EQ(shape_error(head + "  - {name: m, op: Map, params: {fn: add}, inputs: {in0: a, in1: b}}\n"),
            "node 'm' (Map): inputs must have the same shape: in0 from 'a.out0' is [1, 2] of T[2x4:bf16], in1 from "
            "'b.out0' is [1, 3] of T[2x4:bf16] (dimension 0: 2 vs 3)");
  EXPECT_EQ(shape_error(head + "  - {name: mm, op: Map, params: {fn: matmul}, inputs: {in0: a, in1: a}}\n"),
            "node 'mm' (Map): matmul: T[2x4:bf16] x T[2x4:bf16]: inner dimensions 4 and 2 differ (in0 from 'a.out0' "
            "is [1, 2] of T[2x4:bf16], in1 from 'a.out0' is [1, 2] of T[2x4:bf16])");
  EXPECT_EQ(shape_error(head + "  - {name: f, op: Flatten, params: {min: 0, max: 3}, inputs: {in: a}}\n"),
            "node 'f' (Flatten): min 0 / max 3 outside the dims of [1, 2] of T[2x4:bf16]");
  // A missing parameter is refused earlier, by the loader (every node's parameters are checked there).
  try {
    graph(head + "  - {name: r, op: Repeat, inputs: {in: a}}\n");
    ADD_FAILURE() << "a Repeat without count was loaded";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "g.yaml: node 'r' (Repeat): missing required parameter 'count' (copies per element)");
  }
  EXPECT_NE(shape_error(head + "  - {name: m, op: Map, params: {fn: nope}, inputs: {in0: a}}\n")
                .find("node 'm' (Map): unknown map function 'nope'; known: abs, add, cast_bf16, cast_f32, cat_cols, cat_rows, div, eq"),
            std::string::npos);
  EXPECT_EQ(shape_error(head + "  - {name: m, op: Map, params: {fn: silu}, inputs: {in0: zz}}\n"),
            "node 'm' (Map) input 'in0' reads unknown node 'zz'");
  EXPECT_EQ(shape_error(head + "  - {name: m, op: Map, params: {fn: silu}, inputs: {in0: a.foo}}\n"),
            "node 'm' (Map) input 'in0' reads 'a.foo', but Source 'a' has no output 'foo'");
  // A cycle is reported, not looped on.
  const std::string cyc = shape_error(head +
                                      "  - {name: z, op: Zip, inputs: {in0: a, in1: m}}\n"
                                      "  - {name: m, op: Map, params: {fn: silu}, inputs: {in0: z}}\n");
  EXPECT_NE(cyc.find("cannot order the nodes z, m"), std::string::npos) << cyc;
  // Declared dims must fit the output.
  EXPECT_EQ(shape_error(head + "  - {name: m, op: Map, params: {fn: silu}, inputs: {in0: a}, dims: {out: [n]}}\n"),
            "node 'm' (Map): dims: output 'out' is [1, 2] of T[2x4:bf16] (2 dims), 1 sizes given");
}

}  // namespace
}  // namespace stepsim::shape
