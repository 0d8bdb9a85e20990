// `stepsim analyze` through the real binary: totals with units, exit codes, --json, --sym, --model.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct CliRun {
  int status = -1;
  std::string out;
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class Analyze : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stepsim_analyze_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& n) const { return (dir_ / n).string(); }
  std::string write(const std::string& n, const std::string& text) const {
    std::ofstream(path(n)) << text;
    return path(n);
  }
  CliRun stepsim(const std::vector<std::string>& args) const {
    std::string cmd = quote(STEPSIM_BINARY);
    for (const std::string& a : args) cmd += " " + quote(a);
    cmd += " > " + quote(path("out.txt")) + " 2>&1";
    CliRun r;
    const int rc = std::system(cmd.c_str());
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    std::ifstream f(path("out.txt"));
    std::stringstream ss;
    ss << f.rdbuf();
    r.out = ss.str();
    return r;
  }
  fs::path dir_;
};

const std::string kExamples = std::string(STEPSIM_SOURCE_DIR) + "/graphs/examples/";

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST_F(Analyze, PrintsShapesSymbolsAndTotalsWithUnits) {
  CliRun r = stepsim({"analyze", kExamples + "higher_order.yaml"});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "graph higher_order: 13 nodes")) << r.out;
  EXPECT_TRUE(has(r.out, "  x.out: [1, 4] of T[4x64:bf16]\n")) << r.out;
  EXPECT_TRUE(has(r.out, "  down.out: [1, 4] of T[4x64:bf16]\n")) << r.out;
  EXPECT_TRUE(has(r.out, "  rows.out: [1, 4, 4] of T[1x64:bf16]\n")) << r.out;
  // Totals, equal to what `stepsim run` measures (testbench/shape metrics_test).
  EXPECT_TRUE(has(r.out, "  off-chip read          133120 B\n")) << r.out;
  EXPECT_TRUE(has(r.out, "  off-chip written       4096 B\n")) << r.out;
  EXPECT_TRUE(has(r.out, "  off-chip traffic       137216 B")) << r.out;
  EXPECT_TRUE(has(r.out, "  FLOPs                  541696 FLOPs\n")) << r.out;
  EXPECT_TRUE(has(r.out, "B (paper formulas)\n")) << r.out;
  EXPECT_TRUE(has(r.out, "  operational intensity  3.948 FLOPs/B")) << r.out;
  CliRun a = stepsim({"analyze", kExamples + "higher_order.yaml", "--model", "artifact"});
  ASSERT_EQ(a.status, 0) << a.out;
  EXPECT_TRUE(has(a.out, "  on-chip requirement    19072 B (artifact formulas)\n")) << a.out;
}

TEST_F(Analyze, TraceSymbolsGetTheirValues) {
  CliRun r = stepsim({"analyze", kExamples + "routing.yaml"});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "  n_route_out0 = 5\n")) << r.out;
  EXPECT_TRUE(has(r.out, "  n_route_out1 = 5\n")) << r.out;
  EXPECT_TRUE(has(r.out, "  route.out0: [n_route_out0] of T[1x64:bf16]\n")) << r.out;
  // The expression (GiNaC orders its terms) and its value; Parallelize splits expert 0's tokens.
  EXPECT_TRUE(has(r.out, "  split.out0: [ceil_div(n_route_out0,2)] of T[1x64:bf16]\n")) << r.out;
  const size_t w = r.out.find("  off-chip written       ");
  ASSERT_NE(w, std::string::npos) << r.out;
  const std::string line = r.out.substr(w, r.out.find('\n', w) - w);
  for (const char* term :
       {"128*n_route_out1", "128*ceil_div(n_route_out0,2)", "128*ceil_div(n_route_out0-1,2)", " = 1280 B"})
    EXPECT_TRUE(has(line, term)) << term << " in " << line;
}

TEST_F(Analyze, SymOverridesAValueAndJsonHasTheDocumentedKeys) {
  const std::string json = path("a.json");
  CliRun r = stepsim({"analyze", kExamples + "routing.yaml", "--sym", "n_route_out0=7", "--json", json});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "  n_route_out0 = 7\n")) << r.out;
  EXPECT_TRUE(has(r.out, "= 1536 B\n")) << r.out;  // 128 x (4 + 5 + 3)
  std::ifstream f(json);
  nlohmann::json j = nlohmann::json::parse(f);  // throws on invalid JSON
  EXPECT_EQ(j["graph"], "routing");
  EXPECT_EQ(j["onchip_model"], "paper");
  EXPECT_EQ(j["streams"]["tokens.out"], "[1, 8] of T[1x64:bf16]");
  EXPECT_EQ(j["symbols"]["n_route_out0"], "7");
  EXPECT_EQ(j["read_bytes"]["value"], 1024);
  EXPECT_EQ(j["read_bytes"]["expr"], "1024");
  EXPECT_EQ(j["write_bytes"]["value"], 1536);
  EXPECT_EQ(j["flops"]["value"], 0);
  EXPECT_EQ(j["onchip_bytes"]["value"], 512);
  ASSERT_EQ(j["nodes"].size(), 9u);
  EXPECT_EQ(j["nodes"][0]["name"], "tokens");
  EXPECT_EQ(j["nodes"][0]["op"], "LinearOffChipLoad");
  for (const char* k : {"read_bytes", "write_bytes", "flops", "onchip_bytes"}) {
    EXPECT_TRUE(j["nodes"][0][k].contains("expr")) << k;
    EXPECT_TRUE(j["nodes"][0][k].contains("value")) << k;
  }
  EXPECT_FALSE(fs::exists(json + ".tmp"));
  // An unknown value is null: a Partition whose selectors are not a literal stream (they pass a
  // Flatten) has outputs of unknown size.
  const std::string unknown =
      write("unknown.yaml",
            "tensors:\n"
            "  y: {shape: [2, 4], dtype: bf16, init: output}\n"
            "streams:\n"
            "  a: 'T[1x4] T[1x4] S1 D'\n"
            "  s: '{0} {1} S1 D'\n"
            "nodes:\n"
            "  - {name: a, op: Source, params: {stream: a}}\n"
            "  - {name: s, op: Source, params: {stream: s}}\n"
            "  - {name: sel, op: Flatten, params: {min: 0, max: 0}, inputs: {in: s}}\n"
            "  - {name: route, op: Partition, inputs: {in: a, sel: sel}, outputs: 2}\n"
            "  - {name: store, op: LinearOffChipStore, params: {tensor: y, tile: [1, 4]}, inputs: {in: route.out0}}\n"
            "  - {name: rest, op: Sink, inputs: {in: route.out1}}\n");
  CliRun m = stepsim({"analyze", unknown, "--json", json});
  ASSERT_EQ(m.status, 0) << m.out;
  std::ifstream f2(json);
  nlohmann::json j2 = nlohmann::json::parse(f2);
  EXPECT_TRUE(j2["write_bytes"]["value"].is_null()) << j2["write_bytes"];
  EXPECT_TRUE(j2["read_bytes"]["value"].is_number());
}

TEST_F(Analyze, ShapeMismatchAndBadGraphsFailCleanly) {
  const std::string g = write("mismatch.yaml",
                              "streams:\n"
                              "  a: 'T[2x4] T[2x4] S1 D'\n"
                              "  b: 'T[2x4] S1 D'\n"
                              "nodes:\n"
                              "  - {name: a, op: Source, params: {stream: a}}\n"
                              "  - {name: b, op: Source, params: {stream: b}}\n"
                              "  - {name: m, op: Map, params: {fn: add}, inputs: {in0: a, in1: b}}\n");
  CliRun r = stepsim({"analyze", g});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out,
                  "error: node 'm' (Map): inputs must have the same shape: in0 from 'a.out0' is [1, 2] of "
                  "T[2x4:bf16], in1 from 'b.out0' is [1, 1] of T[2x4:bf16]"))
      << r.out;
  CliRun bad = stepsim({"analyze", write("bad.yaml", "nodes: [ {name: a\n")});
  EXPECT_EQ(bad.status, 1) << bad.out;
  EXPECT_TRUE(has(bad.out, "error: ") && has(bad.out, "bad.yaml")) << bad.out;
  CliRun model = stepsim({"analyze", kExamples + "routing.yaml", "--model", "fancy"});
  EXPECT_EQ(model.status, 1);
  EXPECT_TRUE(has(model.out, "unknown on-chip requirement model 'fancy'")) << model.out;
  CliRun sym = stepsim({"analyze", kExamples + "routing.yaml", "--sym", "n=2*("});
  EXPECT_EQ(sym.status, 1);
  EXPECT_TRUE(has(sym.out, "cannot parse expression '2*('")) << sym.out;
  CliRun opt = stepsim({"analyze", kExamples + "routing.yaml", "--fast"});
  EXPECT_EQ(opt.status, 1);
  EXPECT_TRUE(has(opt.out, "analyze: unknown option '--fast'")) << opt.out;
  CliRun none = stepsim({"analyze"});
  EXPECT_EQ(none.status, 1);
  EXPECT_TRUE(has(none.out, "analyze needs a graph file")) << none.out;
}

}  // namespace
