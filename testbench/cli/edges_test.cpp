// Inputs that once crashed, hung or escaped (issue 33, "trust at the edges, third round"): YAML
// anchors and aliases, deep nesting, unbounded numbers in expressions, a tensor name used as a file
// name, a FIFO or a malformed header given as a tensor file. Each is refused at once, by every
// command that reads it, with a message naming the file and what is wrong.
#include <sys/stat.h>

#include <chrono>

#include "testbench/cli/cli_fixture.h"

namespace stepsim_cli_test {
namespace {

// A small graph every command accepts, with a tensor stored to --out.
const char* kGraph = R"(name: edges
tensors:
  a: {shape: [16, 16], dtype: bf16, init: random, seed: 1}
  b: {shape: [16, 16], dtype: bf16, init: output}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: a, tile: [16, 16]}}
  - {name: store, op: LinearOffChipStore, params: {tensor: b, tile: [16, 16]}, inputs: {in: load}}
)";

class Edges : public Cli {
 protected:
  // Every command that reads a graph file, on `graph`.
  std::vector<CliRun> every_reader(const std::string& graph) const {
    return {stepsim({"run", graph}), stepsim({"analyze", graph}), stepsim({"size-fifos", graph, "-o", path("s.yaml")}),
            stepsim({"downtile", graph, "--tile", "8", "-o", path("d.yaml")})};
  }
  // A failure within `seconds` of wall time (the command is killed after 60 s).
  void expect_quick_failure(const std::vector<std::string>& args, const std::vector<std::string>& words,
                            double seconds = 10) const {
    const auto t0 = std::chrono::steady_clock::now();
    const CliRun r = stepsim(args);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    expect_failure(r, words);
    EXPECT_LT(took, seconds) << "refusing took " << took << " s: " << r.output;
  }
};

TEST_F(Edges, ARecursiveAliasIsRefusedByEveryReader) {
  const std::string graph = write("alias.yaml", "a: &a [*a]\n");
  for (const CliRun& r : every_reader(graph)) expect_failure(r, {"alias.yaml:1:", "anchors (&name) and aliases"});
  const std::string ok = write("ok.yaml", kGraph);
  const std::string preset = write("preset.yaml", "clock_ghz: &c 1.0\n");
  expect_failure(stepsim({"run", ok, "--preset", preset}), {"preset.yaml:1:", "anchors (&name) and aliases"});
}

TEST_F(Edges, BillionLaughsIsRefusedAtOnce) {
  std::string text = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
  std::string prev = "a";
  for (char c = 'b'; c <= 'j'; ++c) {
    text += std::string(1, c) + ": &" + c + " [";
    for (int k = 0; k < 9; ++k) text += (k ? ",*" : "*") + prev;
    text += "]\n";
    prev = std::string(1, c);
  }
  const std::string graph = write("laughs.yaml", text);
  expect_quick_failure({"analyze", graph}, {"laughs.yaml:1:", "aliases"});
  expect_quick_failure({"run", graph}, {"laughs.yaml:1:", "aliases"});
}

TEST_F(Edges, AliasWithoutAnchorOrDeepNestingIsRefused) {
  expect_failure(stepsim({"analyze", write("alias_only.yaml", "name: *x\n")}), {"alias_only.yaml"});
  std::string deep = "name: x\nnodes: " + std::string(200, '[') + std::string(200, ']') + "\n";
  expect_failure(stepsim({"analyze", write("deep.yaml", deep)}), {"deep.yaml:2:", "nested more than 64 deep"});
}

std::string nested_tuple(int depth) { return std::string(size_t(depth), '(') + "1" + std::string(size_t(depth), ')'); }

TEST_F(Edges, ALiteralElementNestedTooDeepIsRefusedBeforeAnyFiberRuns) {
  const std::string graph = write("tuple.yaml", std::string("name: t\nstreams:\n  s: '") + nested_tuple(2500) +
                                                    " D'\nnodes:\n  - {name: src, op: Source, params: {stream: s}}\n"
                                                    "  - {name: sink, op: Sink, inputs: {in: src}}\n");
  for (const CliRun& r : every_reader(graph)) expect_failure(r, {"tuple.yaml", "nest at most 16 deep"});
  expect_failure(stepsim({"eval", "Flatten", "--in", nested_tuple(2500) + " D"}), {"nest at most 16 deep"});
  // (An argument holds at most 128 KiB.)
  expect_quick_failure({"eval", "Flatten", "--in", nested_tuple(60000) + " D"}, {"nest at most 16 deep"});
  EXPECT_LT(stepsim({"eval", "Flatten", "--in", nested_tuple(60000) + " D"}).output.size(), 1000u)
      << "the message quotes the whole 120 KB stream";
  // 16 levels are still an element.
  const CliRun r = stepsim({"eval", "Flatten", "--in", nested_tuple(16) + " D"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("out: " + nested_tuple(16) + " D"), std::string::npos) << r.output;
}

TEST_F(Edges, UnboundedNumbersInExpressionsAreRefusedAtOnce) {
  const std::string base = replace(kGraph, "name: edges\n", "name: edges\nsymbols:\n  n: SYM\n");
  for (const char* bomb : {"2^8000000000", "2^1000000000", "1e999999999", "99999999999999999999", "n^n"}) {
    const std::string graph = write("sym.yaml", replace(base, "SYM", bomb));
    expect_quick_failure({"run", graph}, {"sym.yaml:3:", "symbol 'n'"});
    expect_quick_failure({"analyze", graph}, {"sym.yaml:3:", "symbol 'n'"});
  }
  const std::string dims =
      replace(kGraph, "op: LinearOffChipLoad, ", "op: LinearOffChipLoad, dims: {out: ['2^1000000000', 1, 1]}, ");
  expect_quick_failure({"analyze", write("dims.yaml", dims)}, {"dims.yaml:", "dims.out", "exponent must be a number 0..64"});
  expect_quick_failure({"analyze", write("ok.yaml", kGraph), "--sym", "n=2^2^2^2"}, {"at most 2 powers"});
}

TEST_F(Edges, AMalformedExpressionNamesNoParserInternals) {
  const std::string graph = write("sym.yaml", replace(kGraph, "name: edges\n", "name: edges\nsymbols:\n  n: 2+\n"));
  const CliRun r = stepsim({"analyze", graph});
  expect_failure(r, {"sym.yaml: symbol 'n'", "cannot parse expression '2+'", "unexpected token"});
  EXPECT_EQ(r.output.find("GiNaC"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("parser.cpp"), std::string::npos) << r.output;
}

TEST_F(Edges, ATensorNameNeverLeavesTheOutputFolder) {
  const std::string out = path("out");
  for (const std::string& name : std::vector<std::string>{"../escaped", "/tmp/stepsim_abs_escape"}) {
    const std::string graph = write(
        "esc.yaml", replace(replace(kGraph, "  b: {", "  '" + name + "': {"), "tensor: b,", "tensor: '" + name + "',"));
    expect_failure(stepsim({"run", graph, "--mode", "functional", "--out", out}), {"esc.yaml", name});
    EXPECT_FALSE(fs::exists(path("escaped.npy")));
    EXPECT_FALSE(fs::exists("/tmp/stepsim_abs_escape.npy"));
  }
}

TEST_F(Edges, AFifoOrADeviceIsNoTensorOrTraceFile) {
  ASSERT_EQ(::mkfifo(path("pipe.npy").c_str(), 0600), 0);
  fs::create_symlink(path("pipe.npy"), path("link.npy"));
  for (const std::string& file : {path("pipe.npy"), path("link.npy")}) {
    const std::string graph =
        write("fifo.yaml", replace(kGraph, "init: random, seed: 1", "init: file, file: '" + file + "'"));
    expect_quick_failure({"run", graph}, {fs::path(file).filename().string(), "FIFO"});
  }
  const std::string graph = write("dev.yaml", replace(kGraph, "init: random, seed: 1", "init: file, file: /dev/zero"));
  expect_quick_failure({"run", graph}, {"/dev/zero", "device"});
  expect_quick_failure({"run", "/dev/zero"}, {"/dev/zero", "device"});
  expect_quick_failure({"run", write("ok.yaml", kGraph), "--preset", "/dev/zero"}, {"/dev/zero", "device"});
}

TEST_F(Edges, AGraphFileTooLargeToReadIsRefusedBeforeItIsParsed) {
  // About 100 bytes of memory per byte of YAML: at a limit of 100 KiB, 1 KiB of YAML is the most.
  std::string big = kGraph;
  while (big.size() <= 1024) big += "# padding to pass the limit\n";
  const std::string graph = write("big.yaml", big);
  ::setenv("STEPSIM_HOST_MEMORY_LIMIT", "100K", 1);
  const CliRun r = stepsim({"analyze", graph});
  ::unsetenv("STEPSIM_HOST_MEMORY_LIMIT");
  expect_failure(r, {"big.yaml", "at most 1024", "100 bytes of memory per byte of YAML", "102400"});
  EXPECT_EQ(stepsim({"analyze", graph}).status, 0);  // the default limit takes it
}

// A .npy file of 16x16 float32 zeros whose header dict is `dict`.
std::string npy_with_header(std::string dict) {
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string f("\x93NUMPY\x01\x00", 8);
  f += char(dict.size() & 0xff);
  f += char(dict.size() >> 8);
  return f + dict + std::string(16 * 16 * 4, '\0');
}

TEST_F(Edges, ANpyHeaderIsReadAsNumPyReadsIt) {
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (16, 16), }";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {good, {}},
      {"{'descr': '<f4', 'descr': '<i4', 'fortran_order': False, 'shape': (16, 16), }", {"gives 'descr' twice"}},
      {"{'descr': '<f4', 'fortran_order': Flase, 'shape': (16, 16), }", {"must be True or False, got 'Flase'"}},
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (16, 16), }", {"Fortran-order arrays are not supported"}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (16, 16), 'x': 1}", {"unknown key 'x'"}},
      {"{'descr': '<f4', 'fortran_order': False}", {"header has no 'shape'"}},
      {"{'descr': <f4, 'fortran_order': False, 'shape': (16, 16)}", {"malformed header"}},
      {"{'fortran_order': False, 'shape': (16, 16), 'descr': '<f4'} junk", {"after the closing"}},
  };
  for (const auto& [dict, words] : cases) {
    std::ofstream(path("t.npy"), std::ios::binary) << npy_with_header(dict);
    const std::string graph =
        write("npy.yaml", replace(kGraph, "init: random, seed: 1", "init: file, file: '" + path("t.npy") + "'"));
    const CliRun r = stepsim({"run", graph});
    if (words.empty()) {
      EXPECT_EQ(r.status, 0) << dict << "\n" << r.output;
    } else {
      std::vector<std::string> all = words;
      all.push_back("t.npy");
      expect_failure(r, all);
    }
  }
}

}  // namespace
}  // namespace stepsim_cli_test
