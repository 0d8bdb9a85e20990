// The layers of the tree (docs/architecture.md, "Layers"): a source file may include headers of
// its own folder and of folders in lower layers, never of its own layer's other folders or of a
// higher one. This test reads every .h/.cpp under hw/, sim/ and graphs/ and names each include
// that goes against the order, with both layers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// Lowest first; folders in one entry are peers (neither includes the other).
const std::vector<std::vector<std::string>> kLayers = {
    {"hw/stream"},                   // tokens, tiles, number formats
    {"hw/functions", "hw/channel"},  // tile functions; FIFO channels, fibers and the Scheduler
    {"hw/presets"},                  // typed hardware parameters and their YAML presets
    {"hw/memory"},                   // HBM (TLM-2.0) and the off-chip tensors
    {"hw/ops"},                      // the STeP operators and their registry
    {"hw/fabric"},                   // allocation on the fabric, on-chip requirement models
    {"hw/units"},                    // synthesizable (HLS-style) units
    {"hw/bridge"},                   // units as graph nodes (co-simulation)
    {"hw/bridge/rtl"},               // the bridges over the Verilated units
    {"sim/graph"},                   // the graph, its files and tensors
    {"sim/shape"},                   // symbolic shapes and metrics
    {"sim/frontend"},                // the C++ graph builder
    {"sim"},                         // simulate, co-simulate, analyze, report, down-tile
    {"graphs/layers"},               // the LLM layer library
    {"sim/apps"},                    // the command line
    {"sim/python"},                  // the Python package's extension module
};

int layer_of(const std::string& folder) {
  for (size_t i = 0; i < kLayers.size(); ++i)
    for (const std::string& f : kLayers[i])
      if (f == folder) return int(i);
  return -1;
}

// The includes of `text` (a file in `folder`) that go against the order, as "line N: #include
// "x" (layer A -> layer B)". Includes without a folder (Verilator's generated headers) are
// third-party.
std::vector<std::string> violations(const std::string& folder, const std::string& text) {
  static const std::regex include(R"(^\s*#\s*include\s+"([^"]+)\")");
  std::vector<std::string> out;
  const int own = layer_of(folder);
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    std::smatch m;
    if (!std::regex_search(line, m, include)) continue;
    const std::string target = fs::path(m[1].str()).parent_path().string();
    if (target.empty() || target == folder) continue;
    const int theirs = layer_of(target);
    if (theirs < 0 || theirs >= own)
      out.push_back("line " + std::to_string(n) + ": #include \"" + m[1].str() + "\" (" + folder + ", layer " +
                    std::to_string(own) + " -> " + target + ", " +
                    (theirs < 0 ? std::string("no layer") : "layer " + std::to_string(theirs)) + ")");
  }
  return out;
}

std::vector<fs::path> sources() {
  std::vector<fs::path> out;
  for (const char* top : {"hw", "sim", "graphs"})
    for (const auto& e : fs::recursive_directory_iterator(fs::path(STEPSIM_SOURCE_DIR) / top))
      if (e.is_regular_file() && (e.path().extension() == ".h" || e.path().extension() == ".cpp"))
        out.push_back(e.path());
  return out;
}

std::string folder_of(const fs::path& file) {
  return fs::relative(file.parent_path(), STEPSIM_SOURCE_DIR).generic_string();
}

TEST(IncludeOrder, EverySourceFolderHasALayer) {
  for (const fs::path& f : sources())
    EXPECT_GE(layer_of(folder_of(f)), 0) << folder_of(f) << " (" << f.filename().string()
                                         << ") is in no layer: add it to kLayers and docs/architecture.md";
}

TEST(IncludeOrder, NoIncludeGoesAgainstTheLayers) {
  size_t checked = 0;
  for (const fs::path& f : sources()) {
    std::ifstream in(f);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const std::string& v : violations(folder_of(f), text))
      ADD_FAILURE() << fs::relative(f, STEPSIM_SOURCE_DIR).generic_string() << " " << v;
    ++checked;
  }
  EXPECT_GT(checked, 100u);  // the walk found the tree
}

TEST(IncludeOrder, TheCheckNamesAnUpwardAndASidewaysInclude) {
  EXPECT_EQ(violations("hw/ops", "#include \"hw/ops/op.h\"\n#include \"hw/stream/token.h\"\n"),
            std::vector<std::string>{});
  EXPECT_EQ(violations("hw/ops", "// x\n#include \"sim/apps/cli.h\"\n"),
            std::vector<std::string>{"line 2: #include \"sim/apps/cli.h\" (hw/ops, layer 4 -> sim/apps, layer 14)"});
  EXPECT_EQ(violations("hw/channel", "#include \"hw/functions/functions.h\"\n"),
            std::vector<std::string>{
                "line 1: #include \"hw/functions/functions.h\" (hw/channel, layer 1 -> hw/functions, layer 1)"});
  EXPECT_EQ(violations("sim", "#include \"sim/nowhere/x.h\"\n"),
            std::vector<std::string>{"line 1: #include \"sim/nowhere/x.h\" (sim, layer 12 -> sim/nowhere, no layer)"});
}

}  // namespace
